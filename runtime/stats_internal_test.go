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

// TestHistogramQuantileRank: Quantile is the bound of the nearest-rank
// quantile, the ceil(q*n)-th smallest duration, so that it never bounds
// fewer than q of the durations.
func TestHistogramQuantileRank(t *testing.T) {
	for _, c := range []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{[]time.Duration{1, 1000}, 0.99, 1024},
		{[]time.Duration{1, 1000}, 0.5, 1},
		{[]time.Duration{1, 1000, 1000}, 0.5, 1024},
		{[]time.Duration{1, 1000, 1000}, 0.34, 1024},
		{[]time.Duration{1, 1000, 1000}, 0.33, 1},
		{[]time.Duration{5}, 0.01, 8},
		{[]time.Duration{5}, 1, 8},
		{[]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 1000}, 0.9, 16},
		{[]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 1000}, 0.91, 1024},
		{[]time.Duration{3, 3}, 0, 4},
		{[]time.Duration{3, 3}, 2, 4},
	} {
		var h histogram
		for _, d := range c.ds {
			h.record(d)
		}
		s := h.snapshot()
		if got := s.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) of %v = %v, want %v", c.q, c.ds, got, c.want)
		}
	}
	// 99 fast durations and one slow: the slow one is past p99 of a
	// hundred, and p99 of 150 (the 149th) reaches the slow ones.
	var h histogram
	for range 99 {
		h.record(10)
	}
	h.record(time.Millisecond)
	s := h.snapshot()
	if got := s.Quantile(0.99); got != 16 {
		t.Errorf("p99 of 99 × 10ns and one 1ms = %v, want 16ns", got)
	}
	for range 50 {
		h.record(time.Millisecond)
	}
	s = h.snapshot()
	if got := s.Quantile(0.99); got != 1<<20 {
		t.Errorf("p99 of 99 × 10ns and 51 × 1ms = %v, want %v", got, time.Duration(1<<20))
	}
}

// TestHistogramSnapshotWhileRecording: a snapshot taken while durations
// are recorded has a Count that its buckets hold, and a quantile within
// the buckets recorded into, never the last bucket's unbounded bound.
func TestHistogramSnapshotWhileRecording(t *testing.T) {
	var h histogram
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				h.record(time.Microsecond)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for range 20000 {
		s := h.snapshot()
		var n uint64
		for _, b := range s.Buckets {
			n += b
		}
		if n != s.Count {
			t.Fatalf("a snapshot's count %d, its buckets hold %d", s.Count, n)
		}
		if s.Count > 0 {
			if q := s.Quantile(1); q != 1024 {
				t.Fatalf("the largest of durations of 1µs is bounded by %v, want 1.024µs (count %d, buckets %v)", q, s.Count, s.Buckets)
			}
		}
	}
	// A Histogram whose Count is above its buckets' total (made by hand,
	// or as the difference of two snapshots) ranks over its buckets.
	hh := Histogram{Count: 3}
	hh.Buckets[10] = 2
	if q := hh.Quantile(1); q != 1024 {
		t.Fatalf("Quantile(1) of a Histogram of count 3 with 2 durations of 1µs = %v, want 1.024µs", q)
	}
}
