package main

import (
	"math"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 1 ns to maxLatency, the
// longest time.Duration, to three significant digits: a value reads back
// within 0.1% of what was recorded, its maximum and percentiles at or
// above it, however long the wait (a stalled device, or an open loop whose
// submitters fell minutes behind their schedule). A value's bucket comes
// from its leading zeros, so that the range costs a recording nothing; it
// costs memory, 1,024 counts a power of two: about 440 KB a histogram,
// where an upper bound of 100 s took about 230 KB. A value below 1 ns,
// which only a clock that went back gives, is recorded as 1 ns.
const (
	maxLatency = int64(math.MaxInt64)
	sigFigs    = 3
)

// latency is a histogram of latencies that many goroutines record into:
// each records into one of a few shards, which it merges.
type latency struct {
	shards []shard
}

// maxShards bounds the shards of a latency for many lanes: a shard takes
// about 440 KB.
const maxShards = 128

type shard struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
	_  [40]byte // keeps shards' locks off each other's cache lines
}

// newLatencyFor is a latency of a shard for each of lanes recording lanes,
// up to maxShards, so that lanes up to that many never share a shard's
// lock.
func newLatencyFor(lanes int) *latency {
	l := &latency{shards: make([]shard, min(max(lanes, 1), maxShards))}
	for i := range l.shards {
		l.shards[i].h = hdrhistogram.New(1, maxLatency, sigFigs)
	}
	return l
}

// record records ns into the shard of the recording lane.
func (l *latency) record(lane int, ns int64) {
	s := &l.shards[lane%len(l.shards)]
	s.mu.Lock()
	_ = s.h.RecordValue(max(ns, 1))
	s.mu.Unlock()
}

// recordBatch records the values of ns into the shard of the recording
// lane, under one take of its lock.
func (l *latency) recordBatch(lane int, ns []int64) {
	s := &l.shards[lane%len(l.shards)]
	s.mu.Lock()
	for _, v := range ns {
		_ = s.h.RecordValue(max(v, 1))
	}
	s.mu.Unlock()
}

// absorb adds o's values to l's.
func (l *latency) absorb(o *latency) {
	for i := range o.shards {
		s := &o.shards[i]
		d := &l.shards[i%len(l.shards)]
		s.mu.Lock()
		d.mu.Lock()
		d.h.Merge(s.h)
		d.mu.Unlock()
		s.mu.Unlock()
	}
}

// merged is one histogram of every shard's values.
func (l *latency) merged() *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, maxLatency, sigFigs)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		h.Merge(s.h)
		s.mu.Unlock()
	}
	return h
}

// Latency is the summary of a latency histogram, in nanoseconds, as the
// report gives it.
type Latency struct {
	Count int64   `json:"count"`
	Min   int64   `json:"min_ns"`
	Mean  float64 `json:"mean_ns"`
	P50   int64   `json:"p50_ns"`
	P90   int64   `json:"p90_ns"`
	P99   int64   `json:"p99_ns"`
	P999  int64   `json:"p99_9_ns"`
	Max   int64   `json:"max_ns"`
}

// summarize is h's count, minimum, mean, percentiles and maximum. The
// percentiles are nearest-rank, as the runnable goroutines' are.
func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Min:   h.Min(),
		Mean:  h.Mean(),
		P50:   percentile(h, 50),
		P90:   percentile(h, 90),
		P99:   percentile(h, 99),
		P999:  percentile(h, 99.9),
		Max:   h.Max(),
	}
}

// percentile is the p-th percentile (0 to 100) of h's values, which are
// not none: the value of rank ceil(p/100*n) of n, so that at least p% of
// the values are at or below it. HdrHistogram's ValueAtQuantile takes the
// rank rounded to the nearest instead, one rank low where the fraction is
// below a half (p90 of 6 values was the 5th, p99 of 60 the 59th); it is
// asked here for the quantile of the rank itself, which it rounds to that
// rank.
func percentile(h *hdrhistogram.Histogram, p float64) int64 {
	n := h.TotalCount()
	// In hundredths of a percent, in integers, as nearestRank counts.
	bp := int64(p*100 + 0.5)
	k := min(max((bp*n+100*100-1)/(100*100), 1), n)
	return h.ValueAtQuantile(100 * float64(k) / float64(n))
}
