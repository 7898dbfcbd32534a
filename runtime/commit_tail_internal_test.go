package rig

import (
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// lazyFake is the fake whose Submit answers Pending and leaves the word,
// and whose Commit(v) completes the work up to v at once: a driver that
// commits lazily, whose work ended.
type lazyFake struct{ *fake }

func (l *lazyFake) Commit(v uint64) device.SubmitAnswer {
	l.fake.Commit(v)
	l.fake.complete(v)
	return device.SubmitAnswer{}
}

// TestUncommittedTailNotAHang: values that a lazily committing driver
// holds uncommitted, which no one waits for, are committed by the
// supervisor once the word stands still: the device is not lost to its
// hang bound for work that ended, and their points pass, so that the
// frees that wait for them come due.
func TestUncommittedTailNotAHang(t *testing.T) {
	for _, hangMs := range []int{20, 0} {
		f := newFake()
		f.pending, f.held = true, true
		f.facts.HangMs = hangMs
		l := &lazyFake{f}
		d := openWith(t, device.Opener{Name: "uncommitted-tail", Make: func(w *uint64) (device.Driver, error) {
			f.facts.Word = w
			return l, nil
		}})
		b, err := d.Alloc(device.DeviceMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		p := submit(t, launchOn(t, d, Write(0, 0)), b)
		_ = b.Free()
		deadline := time.Now().Add(5 * time.Second)
		for !p.passed() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(3*hangMs) * time.Millisecond)
		if err := d.Err(); err != nil {
			t.Fatalf("HangMs %d: %v", hangMs, err)
		}
		if !p.Reached() {
			t.Fatalf("HangMs %d: the uncommitted value's point was never reached", hangMs)
		}
		for d.deferred.Len() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := d.deferred.Len(); n != 0 {
			t.Fatalf("HangMs %d: %d frees never came due", hangMs, n)
		}
		_ = d.Close()
		<-d.Done()
	}
}
