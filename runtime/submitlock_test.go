package rig

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockConfigs are the ways a submit lock's waiters spin and park.
var lockConfigs = []struct {
	name  string
	setup func(l *submitLock)
}{
	{"gpu, 16 procs", func(l *submitLock) { l.init(16, false, nil) }},
	{"gpu, 2 procs", func(l *submitLock) { l.init(2, false, nil) }},
	{"host", func(l *submitLock) { l.init(2, true, nil) }},
	{"park at once", func(l *submitLock) { l.init(16, false, nil); l.spinFor = 0 }},
	{"4 slots", func(l *submitLock) { l.init(16, false, nil); l.spinFor = time.Microsecond; l.nslots = 4 }},
	{"a gate of one place", func(l *submitLock) { l.init(16, false, &spinGate{max: 1}) }},
	{"zero value", func(*submitLock) {}},
}

func TestSubmitLockExcludes(t *testing.T) {
	for _, c := range lockConfigs {
		t.Run(c.name, func(t *testing.T) {
			var l submitLock
			c.setup(&l)
			goroutines, rounds := 64, 500
			if l.nslots != 0 && l.nslots < lockSlots {
				rounds = 100 // most waiters poll for a slot
			}
			var inside atomic.Int32
			count := 0
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range rounds {
						l.Lock()
						if n := inside.Add(1); n != 1 {
							t.Errorf("%d holders at once", n)
						}
						count++
						if (g+i)%97 == 0 {
							time.Sleep(20 * time.Microsecond) // a long hold, past the spin
						}
						inside.Add(-1)
						l.Unlock()
					}
				}()
			}
			wg.Wait()
			if count != goroutines*rounds {
				t.Fatalf("count %d, want %d", count, goroutines*rounds)
			}
			if n := l.parked.Load(); n != 0 {
				t.Fatalf("%d waiters still counted as parked", n)
			}
			if !l.TryLock() {
				t.Fatal("TryLock of a free lock failed")
			}
			l.Unlock()
		})
	}
}

// TestSubmitLockServesInOrder checks that waiters take the lock in the
// order they asked for it, whether they spin or park.
func TestSubmitLockServesInOrder(t *testing.T) {
	for _, c := range lockConfigs {
		t.Run(c.name, func(t *testing.T) {
			var l submitLock
			c.setup(&l)
			l.Lock()
			const waiters = 12
			var mu sync.Mutex
			var order []int
			var wg sync.WaitGroup
			for i := range waiters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l.Lock()
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					l.Unlock()
				}()
				// The next starts once this one holds its ticket.
				for l.next.Load() != uint64(i)+2 {
					time.Sleep(10 * time.Microsecond)
				}
			}
			time.Sleep(2 * time.Millisecond) // the far ones park, the near ones spin out
			if l.TryLock() {
				t.Fatal("TryLock took a held lock")
			}
			l.Unlock()
			wg.Wait()
			for i, w := range order {
				if w != i {
					t.Fatalf("served in the order %v, want arrival order", order)
				}
			}
		})
	}
}

func TestSubmitLockTryLock(t *testing.T) {
	var l submitLock
	l.init(4, false, nil)
	if !l.TryLock() {
		t.Fatal("TryLock of a free lock failed")
	}
	if l.TryLock() {
		t.Fatal("second TryLock succeeded")
	}
	done := make(chan struct{})
	took := false
	go func() {
		l.Lock()
		took = true
		l.Unlock()
		close(done)
	}()
	for l.next.Load() != 2 {
		time.Sleep(10 * time.Microsecond)
	}
	l.Unlock()
	<-done
	if !took {
		t.Fatal("the waiter did not take the lock")
	}
	if !l.TryLock() {
		t.Fatal("TryLock failed after every waiter left")
	}
	l.Unlock()
}

// TestSubmitLockAhead checks that the waiters that spin follow the
// lock's holds: many for short holds, few for long ones.
func TestSubmitLockAhead(t *testing.T) {
	var l submitLock
	l.init(16, false, nil)
	for range 64 {
		l.held(500 * time.Nanosecond)
	}
	if a := l.ahead.Load(); a != 4 {
		t.Fatalf("ahead %d after holds of 0.5 µs, want 4", a)
	}
	for range 64 {
		l.held(3 * time.Microsecond)
	}
	if a := l.ahead.Load(); a != 2 {
		t.Fatalf("ahead %d after holds of 3 µs, want 2", a)
	}
	for range 64 {
		l.held(50 * time.Microsecond)
	}
	if a := l.ahead.Load(); a != 1 {
		t.Fatalf("ahead %d after holds of 50 µs, want 1", a)
	}
	var h submitLock
	h.init(16, true, nil)
	h.held(100 * time.Nanosecond)
	if a := h.ahead.Load(); a != 1 {
		t.Fatalf("ahead %d on the host, want 1", a)
	}
}

func BenchmarkSubmitLock(b *testing.B) {
	var l submitLock
	l.init(16, false, nil)
	n := 0
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Lock()
			n++
			l.Unlock()
		}
	})
	_ = n
}

// TestSubmitLockPollFor: a waiter whose slot an older waiter holds sleeps
// for the holds that come before its slot may free, at the sampled hold,
// from lockPoll to lockPollMax.
func TestSubmitLockPollFor(t *testing.T) {
	var l submitLock
	l.init(16, false, nil)
	l.nslots = 4
	l.ahead.Store(1)
	for _, c := range []struct {
		name   string
		hold   int64
		before uint64
		want   time.Duration
	}{
		{"within the slots", 1000, 3, lockPoll},
		{"just past them", 1000, 6, lockPoll},
		{"100 holds past them", 1000, 105, 100 * time.Microsecond},
		{"no hold sampled", 0, 105, lockPoll},
		{"far past them", 1000, 1 << 40, lockPollMax},
		{"a long hold", int64(time.Second), 105, lockPollMax},
	} {
		l.holdNs.Store(c.hold)
		l.serving.Store(1 << 50)
		if got := l.pollFor(1<<50 + c.before); got != c.want {
			t.Errorf("%s: a waiter %d tickets back sleeps %v, want %v", c.name, c.before, got, c.want)
		}
	}
}
