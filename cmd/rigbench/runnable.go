package main

import (
	"fmt"
	"runtime/metrics"
	"time"
)

// Runnable is how many of the process's goroutines were ready to run
// but waiting for a processor, looked at every runnableEvery over a run
// (runtime/metrics): above 0 most of the time, the process had no
// processor to spare, and its latencies include waits for one.
type Runnable struct {
	Looks int     `json:"looks"`
	Mean  float64 `json:"mean"`
	P50   uint64  `json:"p50"`
	P99   uint64  `json:"p99"`
	Max   uint64  `json:"max"`
	// Busy is the share of looks that found at least one.
	Busy float64 `json:"busy"`
}

// runnableEvery is how often a run looks at the runnable goroutines.
const runnableEvery = time.Millisecond

// runnableLooks looks at the runnable goroutines every runnableEvery
// until stop is closed, and sends what it saw on the channel it returns.
func runnableLooks(stop <-chan struct{}) <-chan *runnableCounts {
	out := make(chan *runnableCounts, 1)
	go func() {
		s := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
		seen := &runnableCounts{}
		t := time.NewTicker(runnableEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- seen
				return
			case <-t.C:
				metrics.Read(s)
				if s[0].Value.Kind() == metrics.KindUint64 {
					seen.add(s[0].Value.Uint64())
				}
			}
		}
	}()
	return out
}

// text is r as a line of the text report.
func (r *Runnable) text() string {
	return fmt.Sprintf("  goroutines waiting for a processor (a look each %v): mean %.1f, p50 %d, p99 %d, max %d; at least one in %.0f%% of looks\n",
		runnableEvery, r.Mean, r.P50, r.P99, r.Max, 100*r.Busy)
}

// runnableExact bounds the counts of runnable goroutines that a run's
// looks keep apart: the looks that saw more share one count. It is above
// twice the submitters a run may make (maxSubmitters), a submitter and a
// waiter each, so that the figures of a run are exact unless other
// goroutines of the process crowd in too.
const runnableExact = 1 << 18

// runnableCounts is the looks of a run at the goroutines waiting for a
// processor: how many looks saw each count, in memory that grows with
// the largest count seen (to runnableExact), not with the looks, so that
// a run of days keeps no more than one of a second. The looks' goroutine
// adds to it; the run reads it once that goroutine has handed it over.
type runnableCounts struct {
	counts []int64 // counts[v] is the looks that saw v
	over   int64   // the looks that saw runnableExact or more
	looks  int64
	sum    uint64 // of the counts seen, for the mean
	max    uint64
}

// add counts a look that saw v.
func (c *runnableCounts) add(v uint64) {
	c.looks++
	c.sum += v
	c.max = max(c.max, v)
	if v >= runnableExact {
		c.over++
		return
	}
	if v >= uint64(len(c.counts)) {
		n := min(max(int(v)+1, 2*len(c.counts)), runnableExact)
		c.counts = append(c.counts, make([]int64, n-len(c.counts))...)
	}
	c.counts[v]++
}

// absorb adds o's looks to c's.
func (c *runnableCounts) absorb(o *runnableCounts) {
	if n := len(o.counts); n > len(c.counts) {
		c.counts = append(c.counts, make([]int64, n-len(c.counts))...)
	}
	for v, k := range o.counts {
		c.counts[v] += k
	}
	c.over += o.over
	c.looks += o.looks
	c.sum += o.sum
	c.max = max(c.max, o.max)
}

// summary summarizes the looks, nil where there are none. Its
// percentiles are nearest-rank, as of the looks sorted; one that falls
// among the looks of runnableExact or more is the largest count seen.
func (c *runnableCounts) summary() *Runnable {
	if c.looks == 0 {
		return nil
	}
	r := &Runnable{Looks: int(c.looks), P50: c.nearestRank(50), P99: c.nearestRank(99), Max: c.max}
	r.Mean = float64(c.sum) / float64(c.looks)
	busy := c.looks
	if len(c.counts) > 0 {
		busy -= c.counts[0]
	}
	r.Busy = float64(busy) / float64(c.looks)
	return r
}

// nearestRank is the p-th percentile (0 to 100) of the looks, which are
// not none: the count of the ceil(p/100*n)-th smallest look of n.
func (c *runnableCounts) nearestRank(p float64) uint64 {
	n := c.looks
	// In hundredths of a percent, in integers: ceil(p/100*n) is then
	// exact, where a float product such as 0.07*100 would round up one
	// rank too far.
	bp := int64(p*100 + 0.5)
	k := min(max((bp*n+100*100-1)/(100*100), 1), n)
	for v, m := range c.counts {
		if k <= m {
			return uint64(v)
		}
		k -= m
	}
	return c.max
}
