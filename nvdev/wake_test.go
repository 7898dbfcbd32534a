package nvdev

import (
	"sync"
	"testing"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

func (f *fake) ringCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rings
}

// TestDeferredWake checks the deferred wake-ups on the fake: submissions
// recorded after DeferWake ring no doorbell; one Wake wakes the channels
// they owe once, for all of them; Sleep wakes what a stalled submitter
// owes; Stop wakes what is owed before it stops; a Wake after Stop does
// nothing.
func TestDeferredWake(t *testing.T) {
	r := openRaw(t, Config{})
	d, f := r.d, r.f
	d.DeferWake()
	e := r.entry("empty")
	rings := f.ringCount()
	var last uint64
	for i := 0; i < 5; i++ {
		last = r.submit(nil, launch(e, 1, 32, nil))
	}
	if got := f.ringCount(); got != rings {
		t.Fatalf("5 deferred submissions rang the doorbell %d times", got-rings)
	}
	if device.AtLeast(d.Signaled(), last) {
		t.Fatal("the values were reached before any wake-up")
	}
	d.Wake()
	if got := f.ringCount() - rings; got != 1 {
		t.Errorf("one Wake for 5 submissions on one channel rang %d times, want 1", got)
	}
	r.wait(last)
	d.Wake() // nothing owed: no doorbell
	if got := f.ringCount() - rings; got != 1 {
		t.Errorf("a Wake with nothing owed rang the doorbell: %d rings", got)
	}

	// A submitter that never calls Wake: Sleep wakes its channels.
	rings = f.ringCount()
	last = r.submit(nil, launch(e, 1, 32, nil), copyPart(qCopy, r.alloc(device.Pinned, 64), r.alloc(device.Pinned, 64), 0, 0, 64))
	if err := d.Sleep(d.Signaled(), 0); err != nil {
		t.Fatal(err)
	}
	if got := f.ringCount() - rings; got != 2 {
		t.Errorf("Sleep rang %d doorbells for a submission owing two channels", got)
	}
	r.wait(last)

	// Stop wakes what is owed; a Wake after it rings nothing.
	last = r.submit(nil, launch(e, 1, 32, nil))
	rings = f.ringCount()
	if err := d.Stop(""); err != nil {
		t.Fatal(err)
	}
	if got := f.ringCount() - rings; got != 1 {
		t.Errorf("Stop rang %d doorbells for one owed channel", got)
	}
	if got := d.Signaled(); got != last {
		t.Errorf("after Stop the word reads %d, not %d", got, last)
	}
	d.submits.Add(1)
	d.owed.Store(1)
	rings = f.ringCount()
	d.Wake()
	if got := f.ringCount(); got != rings {
		t.Error("a Wake after Stop rang the doorbell")
	}
}

// TestDeferredWakeRig submits from 16 goroutines through rig, which
// defers the device's wake-ups: every value is reached, with at most a
// doorbell a submission.
func TestDeferredWakeRig(t *testing.T) {
	f := newFake()
	dev, err := rig.Open(bg, f.opener(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dev.Close(); <-dev.Done() }()
	s, err := rig.NewSubmission(dev, rig.FillBytes(0, 0, 64, 7).On(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := dev.Alloc(device.Pinned, 64)
	if err != nil {
		t.Fatal(err)
	}
	rings := f.ringCount()
	const g, n = 16, 200
	var wg sync.WaitGroup
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				if _, err := s.Take().Submit(bg, b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := dev.Last().Wait(bg); err != nil {
		t.Fatal(err)
	}
	got := f.ringCount() - rings
	t.Logf("%d submissions from %d goroutines rang the doorbell %d times", g*n, g, got)
	if got == 0 || got > g*n {
		t.Errorf("%d doorbells for %d submissions", got, g*n)
	}
}
