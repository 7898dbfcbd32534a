package main

import (
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
		got := runnableOf(c.looks)
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
		r := runnableOf(looks)
		if r.P50 != c.p50 || r.P99 != c.p99 || r.Max != c.max {
			t.Errorf("%d looks, %d of them 9, the rest 0: p50 %d, p99 %d, max %d; want %d, %d, %d",
				c.n, c.outliers, r.P50, r.P99, r.Max, c.p50, c.p99, c.max)
		}
	}
}
