package rig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// lateStop is a fake whose Stop does not write the word: the work still
// running writes it once it ends, as hostdev's Stop leaves it to a kernel
// that runs on.
type lateStop struct{ *fake }

func (a *lateStop) Stop(fault string) error {
	a.fake.mu.Lock()
	a.fake.stopped, a.fake.stopFault = true, fault
	a.fake.mu.Unlock()
	return nil
}

// lateStopDevice opens a device of a held fake whose Stop leaves the
// word, and submits one value, completed when the test ends.
func lateStopDevice(t *testing.T, name string) (*Device, *fake, Point) {
	t.Helper()
	f := newFake()
	f.held = true
	drv := &lateStop{fake: f}
	d := openWith(t, device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		f.facts.Word = w
		return drv, nil
	}})
	p := submit(t, empty(t, d))
	t.Cleanup(func() { f.complete(p.v) })
	return d, f, p
}

// TestSpinningWaitWokenByClose: Close wakes a wait that spins on the word
// (SetWaitSpin), which the supervisor does not know of, with ErrClosed,
// where the driver's Stop leaves the word while its work runs on.
func TestSpinningWaitWokenByClose(t *testing.T) {
	d, f, p := lateStopDevice(t, "spin-close")
	d.SetWaitSpin(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.Wait(ctx) }()
	// The wait holds a place of the spin gate while it spins.
	deadline := time.Now().Add(5 * time.Second)
	for d.spinners.n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the wait never spun")
		}
		time.Sleep(time.Millisecond)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after Close: %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		f.complete(p.v) // let the spinner go
		err := <-errc
		t.Fatalf("a spinning Wait was not woken by Close within 2s (it returned %v only once the word moved)", err)
	}
}

// TestWaitAfterCloseSkipsSpin: a Wait that begins after Close, on a point
// the word had not reached when the driver stopped (its work runs on),
// returns ErrClosed at once, rather than spin for its whole spin.
func TestWaitAfterCloseSkipsSpin(t *testing.T) {
	d, _, p := lateStopDevice(t, "wait-after-close")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d.SetWaitSpin(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	// A wait that spun would spin past ctx's second and return its error.
	if err := p.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait begun after Close on a point the stop left unreached: %v, want ErrClosed at once", err)
	}
}

// TestHostWaitingSubmitWokenByClose: a Submit on b that waits on the host
// for a point of a (b's work cannot wait on a's word) returns b's error
// when b is closed or lost meanwhile, since the submission can then only
// fail, rather than wait on for a's point.
func TestHostWaitingSubmitWokenByClose(t *testing.T) {
	for _, how := range []string{"close", "loss"} {
		t.Run(how, func(t *testing.T) {
			fa, fb := newFake(), newFake()
			fa.held, fa.peer, fb.peer = true, true, true
			fb.facts.Waits = 0
			a, b := openFake(t, "hostwait-a-"+how, fa), openFake(t, "hostwait-b-"+how, fb)
			x, err := a.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			pa := submit(t, launchOn(t, a, Write(0, 0)), x)
			t.Cleanup(func() { fa.complete(pa.v) })
			s := launchOn(t, b, Read(0, 0))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := s.Take().Submit(ctx, x)
				errc <- err
			}()
			select {
			case err := <-errc:
				t.Fatalf("b's Submit returned before a's write was reached: %v", err)
			case <-time.After(30 * time.Millisecond):
			}
			want := endDevice(t, b, how)
			select {
			case err := <-errc:
				if !errors.Is(err, want) {
					t.Fatalf("Submit after b's %s: %v, want %v", how, err, want)
				}
			case <-time.After(2 * time.Second):
				fa.complete(pa.v)
				err := <-errc
				t.Fatalf("b's Submit, waiting on the host for a's point, was not woken by b's %s within 2s; it returned %v once a's point was reached", how, err)
			}
		})
	}
}

// endDevice closes d where how is "close", and loses it otherwise, and
// returns what a wait that d's end cuts short matches: ErrClosed, or the
// loss.
func endDevice(t *testing.T, d *Device, how string) error {
	t.Helper()
	if how != "close" {
		return d.lose("lost for the test", nil)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return ErrClosed
}
