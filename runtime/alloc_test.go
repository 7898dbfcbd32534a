package rig_test

import (
	"context"
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
	d := host(t, hostdev.Config{})
	x := alloc(t, d, device.Pinned, 4*256)
	s := sub(t, d, rig.Launch(fn(t, d, "twice"), 8, rig.ReadWrite(0, 0)))
	ctx := context.Background()
	var p rig.Point
	step := func() {
		r := s.Take()
		r.Groups(0, 1, 1, 1)
		r.Threads(0, 256, 1, 1)
		var err error
		if p, err = r.Submit(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
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
