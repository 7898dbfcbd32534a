package main

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// exactCap is the most durations a latencies keeps one by one (8 MiB of
// them); past it they go into a histogram.
const exactCap = 1 << 20

// histDigits are the significant digits of a latencies' histogram: a
// value reads back no more than 1/16384 above what was recorded, within
// the report's 0.1 µs up to 1.6 ms. The histogram covers every duration
// of 0 or more, in 6.25 MiB.
const histDigits = 4

// latencies keeps durations of 0 or more, a level's latencies, for their
// ranks and maximum, in memory that does not grow with how long the level
// runs: one by one while they number at most exactCap, so that a rank is
// that of the sorted durations, and past that in a histogram to
// histDigits significant digits, the maximum exact. Any goroutine may
// call its methods.
type latencies struct {
	mu     sync.Mutex
	exact  []time.Duration         // every duration while h is nil
	sorted bool                    // exact is sorted
	h      *hdrhistogram.Histogram // every duration once they numbered over exactCap
	n      int                     // the durations added
	min    time.Duration           // of the durations added, once n > 0
	max    time.Duration           // of the durations added, once n > 0
}

// add adds the durations of d, which the caller keeps.
func (l *latencies) add(d ...time.Duration) {
	if len(d) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		l.min, l.max = d[0], d[0]
	}
	for _, v := range d {
		l.min, l.max = min(l.min, v), max(l.max, v)
	}
	l.n += len(d)
	l.sorted = false
	if l.h == nil && len(l.exact)+len(d) <= exactCap {
		l.exact = append(l.exact, d...)
		return
	}
	if l.h == nil {
		l.h = hdrhistogram.New(1, math.MaxInt64, histDigits)
		l.record(l.exact)
		l.exact = nil
	}
	l.record(d)
}

// record records d into l.h, a negative duration as 0; l.mu is held.
func (l *latencies) record(d []time.Duration) {
	for _, v := range d {
		_ = l.h.RecordValue(int64(max(v, 0)))
	}
}

// count is the durations added.
func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// rank is the k-th smallest (1 to count()) of the durations: exact while
// they were kept one by one, and the smallest and the largest always;
// otherwise within the histogram's precision above it, and not above the
// largest.
func (l *latencies) rank(k int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	k = min(max(k, 1), l.n)
	if l.h == nil {
		if !l.sorted {
			slices.Sort(l.exact)
			l.sorted = true
		}
		return l.exact[k-1]
	}
	switch k {
	case 1:
		return l.min
	case l.n:
		return l.max
	}
	// ValueAtQuantile counts the quantile's rank rounded to the nearest,
	// which the rank's own quantile is.
	return min(time.Duration(l.h.ValueAtQuantile(100*float64(k)/float64(l.n))), l.max)
}

// nearestRank is the p-th percentile (0 to 100) of the durations, which
// are not none: the ceil(p/100*n)-th smallest of n, so that no more than
// (100-p)% of them lie above it. Of 100, p99 is the 99th.
func (l *latencies) nearestRank(p int) time.Duration {
	return l.rank((p*l.count() + 99) / 100)
}

// batchLen is the latencies a client measures before it adds them to its
// level's.
const batchLen = 256

// batch is a client's latencies not yet added to its level's, which it
// adds batchLen at a time so that its requests do not take the level's
// lock one by one. The client's goroutine owns its batch.
type batch struct {
	to *latencies
	d  []time.Duration
}

func newBatch(to *latencies) *batch {
	return &batch{to: to, d: make([]time.Duration, 0, batchLen)}
}

// add adds d to the batch, and the batch to its level's latencies once
// full.
func (b *batch) add(d time.Duration) {
	b.d = append(b.d, d)
	if len(b.d) == batchLen {
		b.flush()
	}
}

// flush adds the batch to its level's latencies.
func (b *batch) flush() {
	b.to.add(b.d...)
	b.d = b.d[:0]
}
