package main

import (
	"fmt"
	"runtime/metrics"
	"slices"
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
func runnableLooks(stop <-chan struct{}) <-chan []uint64 {
	out := make(chan []uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
		var seen []uint64
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
					seen = append(seen, s[0].Value.Uint64())
				}
			}
		}
	}()
	return out
}

// runnableOf summarizes looks, nil where there are none.
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

// text is r as a line of the text report.
func (r *Runnable) text() string {
	return fmt.Sprintf("  goroutines waiting for a processor (a look each %v): mean %.1f, p50 %d, p99 %d, max %d; at least one in %.0f%% of looks\n",
		runnableEvery, r.Mean, r.P50, r.P99, r.Max, 100*r.Busy)
}
