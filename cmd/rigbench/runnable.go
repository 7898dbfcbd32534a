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
	r := &Runnable{Looks: len(s), P50: s[len(s)/2], P99: s[len(s)*99/100], Max: s[len(s)-1]}
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

// text is r as a line of the text report.
func (r *Runnable) text() string {
	return fmt.Sprintf("  goroutines waiting for a processor (a look each %v): mean %.1f, p50 %d, p99 %d, max %d; at least one in %.0f%% of looks\n",
		runnableEvery, r.Mean, r.P50, r.P99, r.Max, 100*r.Busy)
}
