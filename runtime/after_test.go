package rig_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// afterRelease lets a test_after_hold launch end, which then marks
// afterHeld done; a test_after_check launch records in afterSeen whether
// it found it done (1) or not (2).
var (
	afterRelease = make(chan struct{}, 1)
	afterHeld    atomic.Bool
	afterSeen    atomic.Int32
)

func init() {
	hostdev.RegisterParams("test_after_hold", 0, func(k *hostdev.Ctx) {
		select {
		case <-afterRelease:
			afterHeld.Store(true)
		case <-k.Stopped():
		}
	})
	hostdev.RegisterParams("test_after_check", 0, func(*hostdev.Ctx) {
		if afterHeld.Load() {
			afterSeen.Store(1)
		} else {
			afterSeen.Store(2)
		}
	})
}

// TestRunAfter: a run of device b that waits for a point of device a
// (Run.After), with no buffer in common, starts once a's work completed,
// with Submit returning at once (hostdev's devices wait on each other's
// words); a point of b itself and the zero Point order nothing more.
func TestRunAfter(t *testing.T) {
	ctx := context.Background()
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
	afterHeld.Store(false)
	afterSeen.Store(0)
	pa, err := sub(t, a, rig.Launch(fn(t, a, "test_after_hold"), 0)).Take().Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pb0, err := sub(t, b, rig.Launch(fn(t, b, "empty"), 0)).Take().Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := sub(t, b, rig.Launch(fn(t, b, "test_after_check"), 0)).Take()
	r.After(pa)
	r.After(pb0)
	r.After(rig.Point{})
	pb, err := r.Submit(ctx)
	if err != nil {
		afterRelease <- struct{}{}
		t.Fatal(err)
	}
	// b's work must not start before a's ends, however long that takes.
	time.Sleep(20 * time.Millisecond)
	if pb.Reached() || afterSeen.Load() != 0 {
		afterRelease <- struct{}{}
		t.Fatalf("b's run ran before the point it waits for: reached %v, seen %d", pb.Reached(), afterSeen.Load())
	}
	afterRelease <- struct{}{}
	wait(t, pb)
	if got := afterSeen.Load(); got != 1 {
		t.Fatalf("b's run found a's work done: %v", got == 1)
	}
	if !pa.Reached() {
		t.Fatal("b's point reached before a's")
	}
}

// TestRunAfterLost: a run that waits for a point its device's loss left
// unreached submits nothing and returns the loss; more than MaxAfter
// points is an error that matches ErrInvalid.
func TestRunAfterLost(t *testing.T) {
	ctx := context.Background()
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
	pa, err := sub(t, a, rig.Launch(fn(t, a, "test_gatefault"), 0)).Take().Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	faultGate <- struct{}{}
	if err := pa.Wait(ctx); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("a's point: %v, want its loss", err)
	}
	s := sub(t, b, rig.Launch(fn(t, b, "empty"), 0))
	r := s.Take()
	r.After(pa)
	before := b.Stats().Submitted
	if _, err := r.Submit(ctx); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("a run after a lost point: %v, want the loss", err)
	}
	if got := b.Stats().Submitted; got != before {
		t.Fatalf("b submitted %d values for a run after a lost point", got-before)
	}
	r = s.Take()
	for range rig.MaxAfter + 1 {
		r.After(rig.Point{})
	}
	if _, err := r.Submit(ctx); !errors.Is(err, rig.ErrInvalid) {
		t.Fatalf("a run after %d points: %v, want ErrInvalid", rig.MaxAfter+1, err)
	}
	// b is not lost, and a run of the submission waits for nothing now.
	wait(t, submitOK(t, s.Take()))
}

// TestRunAfterAllocs: a run that waits for another device's point
// allocates nothing in steady state.
func TestRunAfterAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	ctx := context.Background()
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
	sa, sb := sub(t, a, rig.Launch(fn(t, a, "empty"), 0)), sub(t, b, rig.Launch(fn(t, b, "empty"), 0))
	var pa, pb rig.Point
	step := func() {
		var err error
		if pa, err = sa.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
		r := sb.Take()
		r.After(pa)
		if pb, err = r.Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		step()
	}
	wait(t, pb)
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("Take + After + Submit allocates %v times a run", n)
	}
	wait(t, pb)
}
