package main

import (
	"runtime"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 1 ns to maxLatency, to three
// significant digits: a value reads back within 0.1% of what was recorded.
const (
	maxLatency = int64(100e9) // 100 s; longer latencies are recorded as this
	sigFigs    = 3
)

// latency is a histogram of latencies that many goroutines record into:
// each records into one of a few shards, which it merges.
type latency struct {
	shards []shard
}

type shard struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
	_  [40]byte // keeps shards' locks off each other's cache lines
}

func newLatency() *latency {
	l := &latency{shards: make([]shard, max(runtime.GOMAXPROCS(0), 1))}
	for i := range l.shards {
		l.shards[i].h = hdrhistogram.New(1, maxLatency, sigFigs)
	}
	return l
}

// record records ns into the shard of the recording lane.
func (l *latency) record(lane int, ns int64) {
	s := &l.shards[lane%len(l.shards)]
	s.mu.Lock()
	_ = s.h.RecordValue(min(max(ns, 1), maxLatency))
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

// summarize is h's count, minimum, mean, percentiles and maximum.
func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Min:   h.Min(),
		Mean:  h.Mean(),
		P50:   h.ValueAtQuantile(50),
		P90:   h.ValueAtQuantile(90),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
	}
}
