package rig

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

type observerFn func(d *Device, s *device.Submission)

func (f observerFn) Submitted(d *Device, s *device.Submission) { f(d, s) }

// TestObserverGoexitKicks: where the observer of a Kicker's device ends
// its goroutine with runtime.Goexit, the value it saw was submitted all
// the same: it is kicked, and its point is reached without another
// submission.
func TestObserverGoexitKicks(t *testing.T) {
	k := newKickFake()
	d := k.open(t, "observer-goexit-kick")
	s := empty(t, d)
	d.SetTimed(true)
	var v uint64
	d.SetObserver(observerFn(func(_ *Device, sub *device.Submission) {
		v = sub.Value
		runtime.Goexit()
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Take().Submit(context.Background())
	}()
	<-done
	if v == 0 {
		t.Fatal("the observer saw no submission")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := (Point{d: d, v: v}).Wait(ctx); err != nil {
		d.kicks.kick(k, v) // so that the device closes
		t.Fatalf("the value whose observer called runtime.Goexit: %v", err)
	}
	if got := k.last.Load(); got != v {
		t.Fatalf("last Kick(%d), want Kick(%d)", got, v)
	}
	k.check(t)
}

// TestObserverPanicKicks: where the observer of a Kicker's device panics,
// Submit returns the point with an *ObserverPanicError, and the value was
// submitted all the same: it is kicked, and its point is reached without
// another submission.
func TestObserverPanicKicks(t *testing.T) {
	k := newKickFake()
	d := k.open(t, "observer-panic-kick")
	s := empty(t, d)
	d.SetTimed(true)
	d.SetObserver(observerFn(func(*Device, *device.Submission) { panic("observer") }))
	p, err := s.Take().Submit(context.Background())
	var pe *ObserverPanicError
	if !errors.As(err, &pe) || p.v == 0 {
		t.Fatalf("Submit returned %v, %v, want a point and an *ObserverPanicError", p, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		d.kicks.kick(k, p.v) // so that the device closes
		t.Fatalf("the value whose observer panicked: %v", err)
	}
	if got := k.last.Load(); got != p.v {
		t.Fatalf("last Kick(%d), want Kick(%d)", got, p.v)
	}
	k.check(t)
}
