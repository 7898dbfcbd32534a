package rig

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// inOrder collects the order in which goroutines finished.
type inOrder struct {
	mu    sync.Mutex
	order []int
	done  chan struct{}
}

func newInOrder(n int) *inOrder { return &inOrder{done: make(chan struct{}, n)} }

func (o *inOrder) finished(i int) {
	o.mu.Lock()
	o.order = append(o.order, i)
	o.mu.Unlock()
	o.done <- struct{}{}
}

func (o *inOrder) wait(t *testing.T, n int) []int {
	t.Helper()
	for range n {
		select {
		case <-o.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the woken goroutines did not finish in 10 s")
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.order)
}

// TestWokenRunInValueOrder: on one processor, the waiters a supervisor
// wakes at once, and the parked submitters a combiner attempted in one
// pass, run in the order of their values (wokenInOrder).
func TestWokenRunInValueOrder(t *testing.T) {
	if raceOn {
		t.Skip("the race detector shuffles the order in which goroutines run, which this test checks")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 3
	want := []int{0, 1, 2}
	t.Run("supervisor", func(t *testing.T) {
		f, d := openHeldKick(t, "woken-in-order")
		d.SetWaitSpin(0)
		s := empty(t, d)
		ordered := 0
		var last []int
		for range yieldAttempts {
			var ps [n + 1]Point
			for i := range ps {
				ps[i] = submit(t, s) // the last stays pending, so that the supervisor sleeps again
			}
			held := d.sup.count.Load()
			o := newInOrder(n)
			for i := range n {
				go func() {
					if err := ps[i].Wait(context.Background()); err != nil {
						t.Error(err)
					}
					o.finished(i)
				}()
			}
			for start := time.Now(); d.sup.count.Load() < held+n; time.Sleep(time.Millisecond) {
				if time.Since(start) > 10*time.Second {
					f.complete(ps[n].Value())
					t.Fatal("the waits were not held by the supervisor")
				}
			}
			f.complete(ps[n-1].Value())
			if last = o.wait(t, n); slices.Equal(last, want) {
				ordered++
			}
			f.complete(ps[n].Value())
		}
		if ordered < yieldAttempts-yieldMisses {
			t.Errorf("the waiters ran in value order in %d of %d tries (the last: %v)", ordered, yieldAttempts, last)
		}
	})
	t.Run("combiner", func(t *testing.T) {
		_, d := openHeldKick(t, "combined-in-order")
		s := empty(t, d)
		ordered := 0
		var last []int
		for range yieldAttempts {
			d.mu.Lock()
			o := newInOrder(n)
			for i := range n {
				go func() {
					if _, err := s.Take().Submit(context.Background()); err != nil {
						t.Error(err)
					}
					o.finished(i)
				}()
				// Each run queues and parks before the next comes; the
				// test looks at once, since a park lasts combPark at most.
				for start := time.Now(); parkedRuns(d) < i+1; runtime.Gosched() {
					if time.Since(start) > 10*time.Second {
						d.unlockSubmit()
						t.Fatalf("queued run %d did not park", i)
					}
				}
			}
			d.unlockSubmit()
			if last = o.wait(t, n); slices.Equal(last, want) {
				ordered++
			}
		}
		if ordered < yieldAttempts-yieldMisses {
			t.Errorf("the submitters ran in arrival order in %d of %d tries (the last: %v)", ordered, yieldAttempts, last)
		}
	})
}

// parkedRuns counts the runs queued on d that parked. The caller holds
// d's submit lock, so that no combiner takes the queue.
func parkedRuns(d *Device) int {
	n := 0
	for r := d.cq.head.Load(); r != nil; r = r.comb.next {
		if r.comb.state.Load() == combParked {
			n++
		}
	}
	return n
}
