package rig_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// busy runs submitters and waiters of empty launches on d until they meet
// an error, and returns their errors.
func busy(t *testing.T, d *rig.Device, goroutines int) (stop func() []error) {
	s := sub(t, d, rig.Launch(fn(t, d, "empty"), 0))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	quit := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-quit:
					errs <- nil
					return
				default:
				}
				p, err := s.Take().Submit(context.Background())
				if err == nil {
					err = p.Wait(context.Background())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	return func() []error {
		wg.Wait()
		close(quit)
		close(errs)
		var out []error
		for err := range errs {
			out = append(out, err)
		}
		return out
	}
}

func TestLossByFault(t *testing.T) {
	for _, kernel := range []string{"panic", "fault"} {
		t.Run(kernel, func(t *testing.T) {
			d := host(t, hostdev.Config{})
			stop := busy(t, d, 8)
			time.Sleep(10 * time.Millisecond)
			faulty := sub(t, d, rig.Launch(fn(t, d, kernel), 0))
			p, err := faulty.Take().Submit(context.Background())
			if err == nil {
				err = p.Wait(context.Background())
			}
			if !errors.Is(err, rig.ErrLost) {
				t.Fatalf("wait on the faulting launch: %v", err)
			}
			var le *rig.LostError
			if !errors.As(err, &le) || le.Fault == nil || !strings.Contains(le.Cause, kernel) {
				t.Fatalf("the loss does not name the fault: %v", err)
			}
			for _, err := range stop() {
				if !errors.Is(err, rig.ErrLost) {
					t.Fatalf("a busy goroutine ended with %v, want the loss", err)
				}
			}
			if _, err := d.Alloc(device.PinnedMemory, 64); !errors.Is(err, rig.ErrLost) {
				t.Fatalf("alloc on a lost device: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("close of a lost device: %v", err)
			}
		})
	}
}

func TestLossByHang(t *testing.T) {
	d := host(t, hostdev.Config{Hang: 50 * time.Millisecond})
	stop := busy(t, d, 4)
	time.Sleep(5 * time.Millisecond)
	p := submit(t, sub(t, d, rig.Launch(fn(t, d, "hang"), 0)))
	err := p.Wait(context.Background())
	if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), "no progress for 50 ms") {
		t.Fatalf("wait on a hanging launch: %v", err)
	}
	for _, err := range stop() {
		if !errors.Is(err, rig.ErrLost) {
			t.Fatalf("a busy goroutine ended with %v", err)
		}
	}
}

// gatedGate holds the test_gated launches until the test closes the
// channel it points to, or their device stops.
var gatedGate atomic.Pointer[chan struct{}]

func init() {
	hostdev.RegisterParams("test_gated", 0, func(k *hostdev.Ctx) {
		select {
		case <-*gatedGate.Load():
		case <-k.Stopped():
		}
	})
}

// TestCloseWithWorkInFlight closes, from four goroutines at once, a device
// whose work runs until its stop (test_gated, held by a gate the test
// opens only where Close does not return): Close stops the work rather
// than waiting for it, and drops the values queued behind it.
func TestCloseWithWorkInFlight(t *testing.T) {
	d := host(t, hostdev.Config{})
	gate := make(chan struct{})
	gatedGate.Store(&gate)
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	x := alloc(t, d, device.PinnedMemory, 1<<16)
	s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8))
	before, err := sleepRun(s, 0).Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wait(t, before)
	held := sub(t, d, rig.Launch(fn(t, d, "test_gated"), 0))
	var pts []rig.Point
	for i := 0; i < 50; i++ {
		p, err := held.Take().Submit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, p)
	}
	waited := make(chan error, 1)
	go func() { waited <- pts[len(pts)-1].Wait(context.Background()) }()
	untilWaiting(t, d, 1)
	closed := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = d.Close() }()
	}
	go func() { wg.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		// A bound on a Close that waits for work which never ends on its
		// own, not a measure of speed.
		open()
		<-closed
		t.Fatal("Close returned only once the test let the work end: it waited for the work")
	}
	if err := <-waited; !errors.Is(err, rig.ErrClosed) {
		t.Fatalf("a waiter at close: %v", err)
	}
	if _, err := s.Take().Submit(context.Background()); !errors.Is(err, rig.ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
	<-d.Done()
	if used, _ := d.Budget(); used != 0 {
		t.Fatalf("%d bytes still counted after the device gave its memory back", used)
	}
	_ = x
	// The work Close dropped did not run: its points are not reached, and
	// their waits return ErrClosed, also once the device is reaped.
	if pts[len(pts)-1].Reached() {
		t.Fatal("the last point, whose work Close dropped, is reached once the device is reaped")
	}
	if err := pts[len(pts)-1].Wait(context.Background()); !errors.Is(err, rig.ErrClosed) {
		t.Fatalf("a wait after close on dropped work: %v", err)
	}
	// Work that completed before Close stays reached.
	if !before.Reached() {
		t.Fatal("a point reached before close is no longer reached")
	}
	if err := before.Wait(context.Background()); err != nil {
		t.Fatalf("a wait after close on work that completed before it: %v", err)
	}
}
