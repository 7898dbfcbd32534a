package main

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestRunnableOf(t *testing.T) {
	for _, c := range []struct {
		looks []uint64
		want  *Runnable
	}{
		{nil, nil},
		{[]uint64{0}, &Runnable{Looks: 1}},
		// Nearest rank: p50 of 4 is the 2nd smallest, p99 of 4 the 4th.
		{[]uint64{3, 0, 1, 0}, &Runnable{Looks: 4, Mean: 1, P50: 0, P99: 3, Max: 3, Busy: 0.5}},
		{[]uint64{5, 5, 5, 5, 5, 5, 5, 5, 5, 40}, &Runnable{Looks: 10, Mean: 8.5, P50: 5, P99: 40, Max: 40, Busy: 1}},
		{[]uint64{1, 2}, &Runnable{Looks: 2, Mean: 1.5, P50: 1, P99: 2, Max: 2, Busy: 1}},
		{[]uint64{1, 2, 3}, &Runnable{Looks: 3, Mean: 2, P50: 2, P99: 3, Max: 3, Busy: 1}},
	} {
		got := countsOf(c.looks).summary()
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("runnableOf(%v) = %+v, want %+v", c.looks, got, c.want)
		}
	}
	line := (&Runnable{Looks: 4, Mean: 1, P50: 1, P99: 3, Max: 3, Busy: 0.5}).text()
	if !strings.Contains(line, "mean 1.0, p50 1, p99 3, max 3; at least one in 50% of looks") {
		t.Errorf("text %q", line)
	}
}

// TestRunnablePercentiles: the percentiles of the looks are nearest-rank,
// the ceil(p/100*n)-th smallest of n: of 100 looks with one outlier, p99
// is the 99th look, not the outlier, and of 100 with two outliers it
// is one of them.
func TestRunnablePercentiles(t *testing.T) {
	for _, c := range []struct {
		n, outliers   int
		p50, p99, max uint64
	}{
		{100, 1, 0, 0, 9},
		{100, 2, 0, 9, 9},
		{101, 1, 0, 0, 9},
		{101, 2, 0, 9, 9},
		{200, 2, 0, 0, 9},
		{200, 3, 0, 9, 9},
		{1000, 10, 0, 0, 9},
		{1000, 11, 0, 9, 9},
		{2, 1, 0, 9, 9},
		{10, 5, 0, 9, 9},
		{10, 4, 0, 9, 9},
		{10, 6, 9, 9, 9},
	} {
		looks := make([]uint64, c.n)
		for i := range c.outliers {
			looks[i] = 9
		}
		r := countsOf(looks).summary()
		if r.P50 != c.p50 || r.P99 != c.p99 || r.Max != c.max {
			t.Errorf("%d looks, %d of them 9, the rest 0: p50 %d, p99 %d, max %d; want %d, %d, %d",
				c.n, c.outliers, r.P50, r.P99, r.Max, c.p50, c.p99, c.max)
		}
	}
}

// TestRunnableCountsBounded: the looks of a run are kept in memory that
// does not grow with their number, so that a run of days (a look each
// millisecond) keeps no more than a run of a second.
func TestRunnableCountsBounded(t *testing.T) {
	c := &runnableCounts{}
	for v := range uint64(100) {
		c.add(v) // the counts a run sees
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const looks = 1 << 22 // more than an hour of looks
	for i := range looks {
		c.add(uint64(i % 100))
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<10 {
		t.Errorf("%d looks allocated %d bytes; want the memory of the counts seen, whatever the looks", looks, grew)
	}
	if r := c.summary(); r.Looks != looks+100 || r.Max != 99 {
		t.Errorf("summary %+v: want %d looks, max 99", r, looks+100)
	}
}

// countsOf is the counts of looks.
func countsOf(looks []uint64) *runnableCounts {
	c := &runnableCounts{}
	for _, v := range looks {
		c.add(v)
	}
	return c
}

// TestRunnableCountsMatchSorted: the summary of the counts is the one
// the sorted looks give (runnableOf), figure for figure, for looks of
// one run and for looks of several runs added together.
func TestRunnableCountsMatchSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name  string
		looks int
		look  func() uint64
	}{
		{"idle", 1000, func() uint64 { return 0 }},
		{"small", 5000, func() uint64 { return rng.Uint64N(4) }},
		{"mostly idle", 10007, func() uint64 {
			if rng.IntN(100) == 0 {
				return rng.Uint64N(50)
			}
			return 0
		}},
		{"wide", 3001, func() uint64 { return rng.Uint64N(runnableExact) }},
		{"growing", 999, func() uint64 { return uint64(rng.ExpFloat64() * 300) }},
		{"one", 1, func() uint64 { return 7 }},
		{"the last exact count", 50, func() uint64 { return runnableExact - 1 - rng.Uint64N(2) }},
	} {
		looks := make([]uint64, c.looks)
		for i := range looks {
			looks[i] = c.look()
		}
		want := runnableOf(looks)
		if got := countsOf(looks).summary(); *got != *want {
			t.Errorf("%s: counts give %+v, the sorted looks %+v", c.name, got, want)
		}
		// Runs one after the other, as rounds add their measures.
		all := &runnableCounts{}
		for _, part := range [][]uint64{looks[:len(looks)/3], looks[len(looks)/3 : len(looks)/2], looks[len(looks)/2:]} {
			all.absorb(countsOf(part))
		}
		if got := all.summary(); *got != *want {
			t.Errorf("%s in three runs: counts give %+v, the sorted looks %+v", c.name, got, want)
		}
	}
}

// TestRunnableCountsOver: looks of runnableExact or more share a count,
// whose percentile is the largest seen; the mean, the largest and the
// share of busy looks stay exact.
func TestRunnableCountsOver(t *testing.T) {
	looks := []uint64{0, 1, runnableExact, runnableExact + 5, 1 << 40}
	want := runnableOf(looks)
	if want.P50 != runnableExact {
		t.Fatalf("the sorted looks' p50 %d, want %d", want.P50, runnableExact)
	}
	want.P50 = 1 << 40
	if got := countsOf(looks).summary(); *got != *want {
		t.Errorf("counts give %+v, want %+v", got, want)
	}
}

// runnableOf is the summary of looks as the sorted looks give it, which
// runnableCounts must match.
func runnableOf(looks []uint64) *Runnable {
	if len(looks) == 0 {
		return nil
	}
	s := slices.Sorted(slices.Values(looks))
	r := &Runnable{Looks: len(s), P50: nearestRank(s, 50), P99: nearestRank(s, 99), Max: s[len(s)-1]}
	var sum uint64
	busy := 0
	for _, v := range s {
		sum += v
		if v > 0 {
			busy++
		}
	}
	r.Mean = float64(sum) / float64(len(s))
	r.Busy = float64(busy) / float64(len(s))
	return r
}

// nearestRank is the p-th percentile (0 to 100) of the sorted values s,
// which are not empty: the ceil(p/100*n)-th smallest of n, so that at
// least p% of the values are at or below it and no more than (100-p)%
// above. Of 100 values, p99 is the 99th, not the largest.
func nearestRank(s []uint64, p float64) uint64 {
	n := len(s)
	// In hundredths of a percent, in integers: ceil(p/100*n) is then
	// exact, where a float product such as 0.07*100 would round up one
	// rank too far.
	bp := int(p*100 + 0.5)
	k := (bp*n + 100*100 - 1) / (100 * 100)
	return s[min(max(k, 1), n)-1]
}
