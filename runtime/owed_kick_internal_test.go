package rig

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestOwedLossKicks: where a Kicker's device is lost by a debt (the device
// its work waits on, on the device side, was lost between the hazards'
// look at its point and the debt's record), its driver's Submit did not
// fail and the value is kicked all the same, as every value whose Submit
// did not fail is: its word reaches the value, and the device whose buffer
// the work reads gives everything back once closed, without waiting for
// the lost device's Close.
func TestOwedLossKicks(t *testing.T) {
	fa := newFake()
	fa.held, fa.peer = true, true
	a := openFake(t, "OKA", fa)
	k := newKickFake()
	k.peer = true
	b := k.open(t, "OKB")
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	submit(t, launchOn(t, a, Write(0, 0)), x)
	k.fake.mu.Lock()
	k.onSubmit = func() { a.lose("lost for the test", nil) }
	k.fake.mu.Unlock()
	p, err := launchOn(t, b, Read(0, 0)).Take().Submit(context.Background(), x)
	if !errors.Is(err, ErrLost) || p.v == 0 {
		t.Fatalf("Submit on b, whose work waits on a's point, lost meanwhile: point %v, error %v; want a point and b's loss", p, err)
	}
	if got := k.last.Load(); !device.AtLeast(got, p.v) {
		t.Errorf("last Kick(%d) after the Submit of value %d, which did not fail", got, p.v)
	}
	_ = a.Close()
	select {
	case <-a.Done():
	case <-time.After(2 * time.Second):
		t.Fatalf("a closed: it gives nothing back while b's value %d, which reads a's buffer, is never kicked (b's word reads %d)", p.v, b.read())
	}
	k.check(t)
}

// TestOwedLossGoexitKicks: as TestOwedLossKicks, where the device's
// observer ends the submitting goroutine with runtime.Goexit: the value,
// whose driver's Submit did not fail, is kicked all the same.
func TestOwedLossGoexitKicks(t *testing.T) {
	fa := newFake()
	fa.held, fa.peer = true, true
	a := openFake(t, "OGA", fa)
	k := newKickFake()
	k.peer = true
	b := k.open(t, "OGB")
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	submit(t, launchOn(t, a, Write(0, 0)), x)
	s := launchOn(t, b, Read(0, 0))
	b.SetTimed(true)
	var v uint64
	b.SetObserver(observerFn(func(_ *Device, sub *device.Submission) {
		v = sub.Value
		runtime.Goexit()
	}))
	k.fake.mu.Lock()
	k.onSubmit = func() { a.lose("lost for the test", nil) }
	k.fake.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Take().Submit(context.Background(), x)
	}()
	<-done
	if v == 0 {
		t.Fatal("the observer saw no submission")
	}
	if got := k.last.Load(); !device.AtLeast(got, v) {
		t.Errorf("last Kick(%d) after the Submit of value %d, which did not fail, whose observer called runtime.Goexit", got, v)
	}
	_ = a.Close()
	select {
	case <-a.Done():
	case <-time.After(2 * time.Second):
		t.Fatalf("a closed: it gives nothing back while b's value %d, which reads a's buffer, is never kicked (b's word reads %d)", v, b.read())
	}
	k.check(t)
}
