package testutil

import (
	"context"
	"slices"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// Warmup is how many times the benchmark helpers run a step before the
// timer starts.
const Warmup = 1000

// TimeSteps runs step Warmup times, then b.N times with the timer running,
// and reports the allocations and the median of the durations step
// returns (the first 65,536) as ns-median.
func TimeSteps(b *testing.B, step func() time.Duration) {
	for range Warmup {
		step()
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if d := step(); len(lat) < cap(lat) {
			lat = append(lat, d)
		}
	}
	b.StopTimer()
	Median(b, lat)
}

// Median reports the median of lat as ns-median; it sorts lat.
func Median(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "ns-median")
}

// Pipelined runs step Warmup times and drain, then b.N times with the
// timer running and drain at the end, and reports the allocations. Where
// batch > 0 it stops the timer to drain after each batch steps, so that
// no step waits for room the steps before took. drain waits until the
// work of every step so far is done.
func Pipelined(b *testing.B, batch int, step, drain func()) {
	for range Warmup {
		step()
	}
	drain()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if batch > 0 && i%batch == 0 && i > 0 {
			b.StopTimer()
			drain()
			b.StartTimer()
		}
		step()
	}
	b.StopTimer()
	drain()
}

// RoundTrips times, by TimeSteps, runs of s (whose parts are launches of
// 32 threads each) submitted through rig and waited for within ctx.
func RoundTrips(b *testing.B, ctx context.Context, s *rig.Submission) {
	TimeSteps(b, func() time.Duration {
		start := time.Now()
		run := s.Take()
		run.Threads(0, 32, 1, 1)
		p, err := run.Submit(ctx)
		if err == nil {
			err = p.Wait(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	})
}
