package main

import (
	"testing"
	"time"
)

// TestSummarizePercentiles: the percentiles are nearest-rank, the
// ceil(p*n)-th smallest of n: of 1 to 100 µs, p99 is 99 µs, not the
// largest, and of two latencies p50 is the smaller.
func TestSummarizePercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Microsecond)
	}
	r := summarize(latenciesOf(lat...), []int{0}, time.Second)
	if r.p50 != 50*time.Microsecond || r.p99 != 99*time.Microsecond || r.max != 100*time.Microsecond {
		t.Errorf("of 1 to 100 µs: p50 %v, p99 %v, max %v; want 50µs, 99µs, 100µs", r.p50, r.p99, r.max)
	}
	r = summarize(latenciesOf(time.Millisecond, 2*time.Millisecond), []int{0}, time.Second)
	if r.p50 != time.Millisecond {
		t.Errorf("of 1 and 2 ms: p50 %v, want 1ms", r.p50)
	}
}
