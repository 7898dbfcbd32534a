package main

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goid returns the calling goroutine's id, read from its stack's header.
func goid() uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// TestDepthOneLaneIsOneGoroutine: at depth 1 a lane's submissions and
// waits run on one goroutine, in closed and in open loop alike, as a
// request's goroutine submits and waits; a submitter and a waiter
// goroutine handing each submission over would add two wake-ups to each
// and hold the load generator under the rates a device reaches.
func TestDepthOneLaneIsOneGoroutine(t *testing.T) {
	for _, rate := range []float64{0, 20000} {
		t.Run("rate="+strconv.FormatFloat(rate, 'g', -1, 64), func(t *testing.T) {
			const lanes = 3
			var mu sync.Mutex
			submitters := map[uint64]int{} // goroutine: lane
			other := 0
			// Each lane's first submission waits for every lane's, so
			// that one lane cannot make all of them.
			var started sync.WaitGroup
			started.Add(lanes)
			ls := make([]lane[uint64], lanes)
			for i := range ls {
				first := true
				ls[i] = lane[uint64]{
					device: "fake",
					submit: func(context.Context) (uint64, int64, error) {
						if first {
							first = false
							started.Done()
							started.Wait()
						}
						g := goid()
						mu.Lock()
						submitters[g] = i
						mu.Unlock()
						return g, 0, nil
					},
					wait: func(_ context.Context, g uint64) error {
						if goid() != g {
							mu.Lock()
							other++
							mu.Unlock()
						}
						return nil
					},
				}
			}
			cfg := &config{Depth: 1, Rate: rate, N: 300, Timeout: 10 * time.Second}
			m := bench(context.Background(), cfg, ls, &live{})
			if m.errors != 0 || m.done != 300 {
				t.Fatalf("%d done, %d errors (%v); want 300, 0", m.done, m.errors, m.firstErr)
			}
			if other != 0 {
				t.Errorf("%d of 300 waits ran on another goroutine than their submission's", other)
			}
			if len(submitters) != lanes {
				t.Errorf("submissions came from %d goroutines; want one for each of %d lanes", len(submitters), lanes)
			}
		})
	}
}
