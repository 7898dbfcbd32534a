package rig_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// observerFunc is an Observer of a function.
type observerFunc func(d *rig.Device, s *device.Submission)

func (f observerFunc) Submitted(d *rig.Device, s *device.Submission) { f(d, s) }

// within runs f on a goroutine and fails the test where it does not
// return within 10 s: a submit lock left held hangs it.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return in 10 s: the submit lock is held", what)
	}
}

// TestObserverPanics checks that an observer that panics, or ends its
// goroutine with runtime.Goexit, leaves the device working: the Submit
// whose observation panicked returns its point with an
// *ObserverPanicError, the observer is removed, and later Submit,
// SetObserver, SetTimed and Close return.
func TestObserverPanics(t *testing.T) {
	for _, c := range []struct {
		name  string
		panic func()
	}{
		{"panic", func() { panic(io.ErrUnexpectedEOF) }},
		{"goexit", runtime.Goexit},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := host(t, hostdev.Config{})
			s := sub(t, d, rig.Launch(fn(t, d, "empty"), 0))
			d.SetTimed(true)
			calls := 0
			d.SetObserver(observerFunc(func(*rig.Device, *device.Submission) {
				calls++
				c.panic()
			}))
			var p rig.Point
			var err error
			var recovered any
			exited := true
			within(t, "the Submit whose observer panicked", func() {
				defer func() { recovered = recover() }()
				p, err = s.Take().Submit(context.Background())
				exited = false
			})
			if recovered != nil {
				t.Fatalf("Submit panicked: %v", recovered)
			}
			if c.name == "goexit" {
				if !exited {
					t.Fatal("Submit returned past the observer's Goexit")
				}
			} else {
				var pe *rig.ObserverPanicError
				if !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) || len(pe.Stack) == 0 {
					t.Fatalf("Submit returned %v, want an *ObserverPanicError that wraps the panic's error", err)
				}
				if p.Device() != d {
					t.Fatal("Submit returned no point with the observer's panic")
				}
				wait(t, p)
			}
			within(t, "a later Submit", func() { wait(t, submitOK(t, s.Take())) })
			if calls != 1 {
				t.Fatalf("the observer saw %d submissions: it was not removed", calls)
			}
			within(t, "SetObserver", func() {
				d.SetObserver(observerFunc(func(*rig.Device, *device.Submission) { calls++ }))
			})
			within(t, "a Submit with a new observer", func() { wait(t, submitOK(t, s.Take())) })
			if calls != 2 {
				t.Fatalf("the new observer saw %d submissions, want 1", calls-1)
			}
			within(t, "SetTimed", func() { d.SetTimed(false) })
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
			within(t, "Close", func() { _ = d.Close() })
		})
	}
}
