package rig

import (
	"testing"
	"time"
)

func TestHistogram(t *testing.T) {
	var h histogram
	for _, d := range []time.Duration{0, 1, 2, 3, 4, 5, 1000, 1024, 1025, time.Hour} {
		h.record(d)
	}
	s := h.snapshot()
	want := map[int]uint64{0: 2, 1: 1, 2: 2, 3: 1, 10: 2, 11: 1, HistogramBuckets - 1: 1}
	for i, n := range s.Buckets {
		if n != want[i] {
			t.Fatalf("bucket %d (<= %v) holds %d, want %d: %v", i, s.UpperBound(i), n, want[i], s.Buckets)
		}
	}
	if s.Count != 10 || s.Sum != 0+1+2+3+4+5+1000+1024+1025+time.Hour {
		t.Fatalf("count %d sum %v", s.Count, s.Sum)
	}
	if q := s.Quantile(0.5); q != 4 {
		t.Fatalf("median bound %v, want 4ns", q)
	}
	if q := s.Quantile(0.9); q != 2048 {
		t.Fatalf("p90 bound %v, want 2.048µs", q)
	}
	if n := testing.AllocsPerRun(100, func() { h.record(time.Microsecond) }); n != 0 {
		t.Fatalf("record allocates %v times", n)
	}
}
