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
		{[]uint64{3, 0, 1, 0}, &Runnable{Looks: 4, Mean: 1, P50: 1, P99: 3, Max: 3, Busy: 0.5}},
		{[]uint64{5, 5, 5, 5, 5, 5, 5, 5, 5, 40}, &Runnable{Looks: 10, Mean: 8.5, P50: 5, P99: 40, Max: 40, Busy: 1}},
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
