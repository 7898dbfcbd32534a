package rig_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestWaitSpinBounded: of many goroutines that wait on one unreached
// point, only a few spin on the word, however long the spin: the others
// park with the supervisor at once. All are woken once the point is
// reached.
func TestWaitSpinBounded(t *testing.T) {
	d := host(t, hostdev.Config{})
	d.SetWaitSpin(time.Hour)
	s := sub(t, d, rig.Launch(fn(t, d, "test_gate"), 0))
	p, err := s.Take().Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	budget := 8 * runtime.GOMAXPROCS(0)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { errs <- p.Wait(context.Background()) })
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.Waiting() < n-budget && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	parked := d.Waiting()
	gate <- struct{}{}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a wait: %v", err)
		}
	}
	if parked < n-budget {
		t.Errorf("%d of %d waiters parked, want at least %d: the rest spin on the word (budget %d)", parked, n, n-budget, budget)
	}
}

// TestRoomWaitInLine: many submitters of launches of 20 µs on queues of
// four values, most of them short of room at any time, each submitting
// and waiting in turn:
// every submission gets a value of its own and its point is reached.
func TestRoomWaitInLine(t *testing.T) {
	d := host(t, hostdev.Config{Ring: 4})
	s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8))
	const goroutines, each = 32, 20
	start := d.Last().Value()
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				p, err := sleepRun(s, 20*time.Microsecond).Submit(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if err := p.Wait(context.Background()); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[p.Value()] {
					t.Errorf("value %d given twice", p.Value())
				}
				seen[p.Value()] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got := d.Last().Value() - start; got != goroutines*each || len(seen) != goroutines*each {
		t.Errorf("%d values submitted, %d seen, want %d", got, len(seen), goroutines*each)
	}
}
