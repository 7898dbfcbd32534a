package rig

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// kickFake is the fake as a device.Kicker: Submit stores nothing into the
// word (held), and Kick completes every value submitted, having checked
// Kick's rules.
type kickFake struct {
	*fake
	d         *Device       // set after Open, for checkLock
	checkLock bool          // Kick checks that no one holds the submit lock
	spin      time.Duration // each Kick lasts at least spin
	in        atomic.Int32
	kicks     atomic.Int64
	last      atomic.Uint64 // the v of the last Kick
	mu        sync.Mutex
	broke     []string // Kick's rules broken
}

func newKickFake() *kickFake {
	k := &kickFake{fake: newFake()}
	k.held = true
	return k
}

func (k *kickFake) opener(name string) device.Opener {
	return device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		k.facts.Word = w
		k.last.Store(atomic.LoadUint64(w))
		return k, nil
	}}
}

func (k *kickFake) broken(format string, args ...any) {
	k.mu.Lock()
	k.broke = append(k.broke, fmt.Sprintf(format, args...))
	k.mu.Unlock()
}

func (k *kickFake) Kick(v uint64) {
	if n := k.in.Add(1); n != 1 {
		k.broken("%d Kicks at once", n)
	}
	defer k.in.Add(-1)
	if prev := k.last.Swap(v); !device.AtLeast(v, prev) {
		k.broken("Kick(%d) after Kick(%d)", v, prev)
	}
	k.kicks.Add(1)
	// A kick's round trip on the bus, about which submitters gather.
	for t0 := time.Now(); time.Since(t0) < k.spin; {
	}
	if k.checkLock {
		if !k.d.mu.TryLock() {
			k.broken("Kick(%d) under the submit lock", v)
		} else {
			k.d.mu.Unlock()
		}
	}
	k.fake.mu.Lock()
	defer k.fake.mu.Unlock()
	n := len(k.submitted)
	if n == 0 || !device.AtLeast(k.submitted[n-1].Value, v) {
		k.broken("Kick(%d) before its Submit", v)
		return
	}
	k.store(k.submitted[n-1].Value)
}

func (k *kickFake) check(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, b := range k.broke {
		t.Error(b)
	}
}

// TestKickEachSubmit: one submitter kicks each value it submits, once,
// after the submit lock is released, and its point is reached.
func TestKickEachSubmit(t *testing.T) {
	k := newKickFake()
	k.checkLock = true
	d, err := Open(context.Background(), k.opener("kick-one"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); <-d.Done() })
	k.d = d
	s := empty(t, d)
	for i := range 100 {
		p := submit(t, s)
		if got := k.kicks.Load(); got != int64(i+1) {
			t.Fatalf("%d kicks after %d submissions", got, i+1)
		}
		if got := k.last.Load(); got != p.v {
			t.Fatalf("Kick(%d) for value %d", got, p.v)
		}
		if !p.passed() {
			t.Fatalf("value %d not reached after its Submit", p.v)
		}
	}
	k.check(t)
}

// TestKickRace races many submitters against the combiner: each value is
// kicked (its point is reached) before its Submit returns, Kicks never
// overlap nor go back, and a burst shares Kicks.
func TestKickRace(t *testing.T) {
	k := newKickFake()
	d, err := Open(context.Background(), k.opener("kick-race"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); <-d.Done() })
	k.d = d
	k.spin = 2 * time.Microsecond
	s := empty(t, d)
	const goroutines, each = 64, 100
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for range each {
				p, err := s.Take().Submit(context.Background())
				if err != nil {
					errs <- err
					return
				}
				if !p.passed() {
					errs <- fmt.Errorf("value %d not reached after its Submit (word %d)", p.v, d.read())
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = p.Wait(ctx)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("wait for value %d: %w", p.v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	k.check(t)
	if last := d.last.Load(); d.read() != last {
		t.Fatalf("the word reads %d with %d submitted", d.read(), last)
	}
	t.Logf("%d kicks for %d submissions", k.kicks.Load(), goroutines*each)
	if n := k.kicks.Load(); n > goroutines*each {
		t.Fatalf("%d kicks for %d submissions", n, goroutines*each)
	}
}
