package rig_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestSteadyStateAllocs guards the hot paths: Take + Submit of a one-launch
// submission with a buffer, and a Wait on a reached point, allocate nothing.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	next := twiceRuns(t)
	ctx := context.Background()
	var p rig.Point
	step := func() { p = next() }
	for i := 0; i < 100; i++ {
		step()
	}
	wait(t, p)
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("Take + Submit allocates %v times a run", n)
	}
	wait(t, p)
	if n := testing.AllocsPerRun(1000, func() {
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a Wait on a reached point allocates %v times", n)
	}
}

// TestParkedWaitAllocs: a wait that parks with the supervisor allocates
// nothing in steady state, also where garbage collections come between
// waits (a sync.Pool of waiters, which each collection empties, made a
// waiter and its channel for such waits).
func TestParkedWaitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	d := host(t, hostdev.Config{})
	d.SetWaitSpin(0)
	s := sub(t, d, rig.Launch(fn(t, d, "test_gate"), 0))
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	go func() {
		for range release {
			gate <- struct{}{}
		}
	}()
	// The run's pool and the driver's may allocate after a collection:
	// only the wait is counted, with the allocations of the goroutines
	// that run meanwhile (the kernel's, the supervisor's); less than one
	// a wait, where a waiter and its channel made two.
	var waitAllocs uint64
	step := func(count bool) {
		p, err := s.Take().Submit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		if count {
			runtime.ReadMemStats(&before)
		}
		release <- struct{}{}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if count {
			runtime.ReadMemStats(&after)
			waitAllocs += after.Mallocs - before.Mallocs
		}
	}
	for range 100 {
		step(false)
	}
	const runs = 50
	for range runs {
		runtime.GC()
		runtime.GC()
		step(true)
	}
	t.Logf("%d parked waits between garbage collections: %d allocations", runs, waitAllocs)
	if waitAllocs >= runs {
		t.Fatalf("%d parked waits between garbage collections allocate %d times", runs, waitAllocs)
	}
}

// TestRunsSurviveCollections: a goroutine that takes one run at a time
// from a submission of its own allocates nothing for it where garbage
// collections come between submissions (a sync.Pool of runs, which
// every other collection empties, made a run and the pool's own
// structures again after each).
func TestRunsSurviveCollections(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	next := twiceRuns(t)
	var p rig.Point
	step := func() { p = next() }
	for range 100 {
		step()
	}
	wait(t, p)
	var takes uint64
	const runs = 50
	for range runs {
		runtime.GC()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		step()
		runtime.ReadMemStats(&after)
		takes += after.Mallocs - before.Mallocs
		wait(t, p)
	}
	t.Logf("%d submissions between garbage collections: %d allocations", runs, takes)
	if takes >= runs {
		t.Fatalf("%d submissions between garbage collections allocate %d times", runs, takes)
	}
}

// twiceRuns opens a host device and returns what takes and submits a run
// of one launch of twice on a buffer of its, and returns the run's point.
func twiceRuns(t *testing.T) func() rig.Point {
	d := host(t, hostdev.Config{})
	x := alloc(t, d, device.PinnedMemory, 4*256)
	s := sub(t, d, rig.Launch(fn(t, d, "twice"), 8, rig.ReadWrite(0, 0)))
	ctx := context.Background()
	return func() rig.Point {
		r := s.Take()
		r.Groups(0, 1, 1, 1)
		r.Threads(0, 256, 1, 1)
		p, err := r.Submit(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}
