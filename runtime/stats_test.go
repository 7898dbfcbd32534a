package rig_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestStats: a device's counters follow its submissions, its memory by
// kind, its reclamation rounds and its loss.
func TestStats(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{Budget: 1 << 20})
	s := sub(t, d, rig.Launch(fn(t, d, "empty"), 0))
	var p rig.Point
	for range 3 * rig.SubmitSample {
		var err error
		if p, err = s.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, p)
	st := d.Stats()
	if st.Device != d.Name() || st.Submitted != 3*rig.SubmitSample || st.InFlight != 0 {
		t.Fatalf("after %d values waited for: %+v", 3*rig.SubmitSample, st)
	}
	if n := st.SubmitLatency.Count; n < 2 || n > 4 {
		t.Fatalf("%d submissions of %d timed, want one in %d", n, 3*rig.SubmitSample, rig.SubmitSample)
	}

	pinned := alloc(t, d, device.PinnedMemory, 1000)
	dev := alloc(t, d, device.DeviceMemory, 4096)
	// The host driver takes whole pages: 1000 bytes take one.
	if b := d.Stats().Bytes; b[device.PinnedMemory] != 4096 || b[device.DeviceMemory] != 4096 {
		t.Fatalf("bytes by kind %v with 1000 of Pinned and 4096 of Device, each on a page of its own", b)
	}
	_ = pinned.Free()
	_ = dev.Free()
	if b := d.Stats().Bytes; b[device.PinnedMemory] != 0 {
		t.Fatalf("bytes by kind %v after the Pinned buffer was freed", b)
	}

	// An allocation past what the budget has left runs the rounds of
	// reclamation.
	held := alloc(t, d, device.DeviceMemory, 700<<10)
	defer held.Free()
	if _, err := d.Alloc(device.DeviceMemory, 700<<10); !errors.Is(err, rig.ErrOutOfMemory) {
		t.Fatalf("an allocation past the budget: %v", err)
	}
	if n := d.Stats().ReclaimRounds; n == 0 {
		t.Fatal("an allocation past the budget counted no round of reclamation")
	}

	panics := sub(t, d, rig.Launch(fn(t, d, "panic"), 0))
	if p, err := panics.Take().Submit(ctx); err == nil {
		_ = p.Wait(ctx)
	}
	if st := d.Stats(); !errors.Is(st.Lost, rig.ErrLost) {
		t.Fatalf("a lost device's stats say %v", st.Lost)
	}
}

// TestStatsWaits: waits are counted by how they ended, and a parked wait's
// wake-up is timed.
func TestStatsWaits(t *testing.T) {
	d := host(t, hostdev.Config{})
	sleep := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8))
	run := func(ns time.Duration) rig.Point {
		p, err := sleepRun(sleep, ns).Submit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d.SetWaitSpin(0)
	wait(t, run(5*time.Millisecond))
	// The deadline starts once the run is submitted, and leaves the wait
	// time to park on a loaded machine: one of a millisecond that began
	// before the Submit had passed by the Wait in a CI run, which then
	// returned without parking; and the run outlasts the deadline by far,
	// so that a process that got no processor for tens of milliseconds
	// still finds the deadline passed first.
	long := run(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := long.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	cancel()
	d.SetWaitSpin(time.Second)
	wait(t, run(time.Millisecond))
	st := d.Stats()
	if st.WaitsParked < 2 || st.WaitsCancelled != 1 || st.WaitsSpun < 1 {
		t.Fatalf("waits spun %d, parked %d, cancelled %d; want at least 1, 2 and 1", st.WaitsSpun, st.WaitsParked, st.WaitsCancelled)
	}
	if st.WakeLatency.Count < 1 || st.WakeLatency.Sum <= 0 {
		t.Fatalf("wake-ups timed: %+v", st.WakeLatency)
	}
}

// TestHistogramUpperBoundOutOfRange: UpperBound of an index that names no
// bucket answers without a panic: 0 below the first, the largest Duration
// past the last.
func TestHistogramUpperBoundOutOfRange(t *testing.T) {
	var h rig.Histogram
	for _, c := range []struct {
		i    int
		want time.Duration
	}{
		{-1, 0},
		{-64, 0},
		{math.MinInt, 0},
		{0, 1},
		{rig.HistogramBuckets - 1, math.MaxInt64},
		{rig.HistogramBuckets, math.MaxInt64},
		{math.MaxInt, math.MaxInt64},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("UpperBound(%d) panicked: %v", c.i, p)
				}
			}()
			if got := h.UpperBound(c.i); got != c.want {
				t.Fatalf("UpperBound(%d) = %v, want %v", c.i, got, c.want)
			}
		}()
	}
}
