package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLatencyPercentiles records values of several distributions from
// several lanes and checks each percentile against a sorted reference:
// within the histogram's precision (three significant digits) of the
// nearest-rank value.
func TestLatencyPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dist := range []struct {
		name string
		draw func() int64
	}{
		{"uniform", func() int64 { return 1000 + r.Int64N(9000) }},
		{"lognormal", func() int64 { return int64(math.Exp(8 + 1.5*r.NormFloat64())) }},
		{"bimodal", func() int64 {
			if r.IntN(100) < 3 {
				return 5_000_000 + r.Int64N(1_000_000)
			}
			return 2000 + r.Int64N(500)
		}},
		{"few", func() int64 { return []int64{1, 7, 300, 4096}[r.IntN(4)] }},
	} {
		l := newLatencyFor(3)
		ref := make([]int64, 0, 100_000)
		for i := range 100_000 {
			v := dist.draw()
			ref = append(ref, v)
			l.record(i%5, v)
		}
		slices.Sort(ref)
		h := l.merged()
		if h.TotalCount() != int64(len(ref)) {
			t.Fatalf("%s: %d values, want %d", dist.name, h.TotalCount(), len(ref))
		}
		s := summarize(h)
		for _, c := range []struct {
			q   float64
			got int64
		}{{50, s.P50}, {90, s.P90}, {99, s.P99}, {99.9, s.P999}, {100, s.Max}, {0, s.Min}} {
			rank := int(math.Ceil(c.q/100*float64(len(ref)) - 1e-9))
			want := ref[min(max(rank, 1), len(ref))-1]
			if !near(c.got, want) {
				t.Errorf("%s: p%v = %d, the sorted reference says %d", dist.name, c.q, c.got, want)
			}
		}
		var sum float64
		for _, v := range ref {
			sum += float64(v)
		}
		if mean := sum / float64(len(ref)); math.Abs(s.Mean-mean) > 2e-3*mean {
			t.Errorf("%s: mean %v, want %v", dist.name, s.Mean, mean)
		}
	}
}

// near reports whether got is within the histogram's precision of want:
// 0.1%, or 1 for small values.
func near(got, want int64) bool {
	return math.Abs(float64(got-want)) <= math.Max(1, 1e-3*float64(want))
}

func TestLatencyBounds(t *testing.T) {
	l := newLatencyFor(3)
	l.record(0, -5)
	l.record(1, 0)
	l.record(2, 1<<62)
	l.recordBatch(4, []int64{-1, 1 << 62})
	s := summarize(l.merged())
	if s.Count != 5 || s.Min != 1 || !near(s.Max, maxLatency) {
		t.Errorf("summary %+v", s)
	}
	if e := summarize(newLatencyFor(3).merged()); e != (Latency{}) {
		t.Errorf("summary of nothing %+v", e)
	}
}

// TestLatencyPercentilesFew checks the percentiles of 0 to 200 values
// against the nearest rank: the ceil(p/100*n)-th smallest of n.
func TestLatencyPercentilesFew(t *testing.T) {
	for n := range 201 {
		l := newLatencyFor(3)
		ref := make([]int64, n)
		for i := range n {
			ref[i] = int64(i+1) * 1000
			l.record(i, ref[i])
		}
		s := summarize(l.merged())
		if n == 0 {
			if s != (Latency{}) {
				t.Errorf("no values: %+v", s)
			}
			continue
		}
		for _, c := range []struct {
			q   float64
			got int64
		}{{50, s.P50}, {90, s.P90}, {99, s.P99}, {99.9, s.P999}} {
			rank := int(math.Ceil(c.q/100*float64(n) - 1e-9))
			if want := ref[rank-1]; !near(c.got, want) {
				t.Errorf("%d values: p%v = %d, want the %d-th, %d", n, c.q, c.got, rank, want)
			}
		}
	}
}
