package rig

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// heldKick is the fake as a device.Kicker whose Kick completes nothing:
// its values complete only through complete(), and its submitters
// combine.
type heldKick struct{ *fake }

func (heldKick) Kick(uint64) {}

func openHeldKick(t *testing.T, name string) (*fake, *Device) {
	t.Helper()
	f := newFake()
	f.held = true
	return f, openWith(t, device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		f.facts.Word = w
		return heldKick{f}, nil
	}})
}

func openHeld(t *testing.T, name string) (*fake, *Device) {
	t.Helper()
	f := newFake()
	f.held = true
	return f, openFake(t, name, f)
}

// TestWaitSpinsForNext: on a device whose submitters combine, a wait for
// a value with another value ahead of it parks at once, however long the
// wait's spin, and a wait for the next value spins; on a device that does
// not combine, a wait for the value after the next spins.
func TestWaitSpinsForNext(t *testing.T) {
	for _, c := range []struct {
		name       string
		open       func(*testing.T, string) (*fake, *Device)
		laterParks bool
	}{
		{"combining", openHeldKick, true},
		{"lock", openHeld, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, d := c.open(t, "spin-next-"+c.name)
			if d.spinNext != c.laterParks {
				t.Fatalf("spinNext = %v, want %v", d.spinNext, c.laterParks)
			}
			// A spin that outlasts the test: a wait that spins does not
			// park while it runs.
			d.SetWaitSpin(time.Hour)
			s := empty(t, d)
			p1, p2 := submit(t, s), submit(t, s)
			base := d.Stats()
			spinning := func() {
				t.Helper()
				for start := time.Now(); d.spinners.n.Load() == 0; runtime.Gosched() {
					if time.Since(start) > 10*time.Second {
						f.complete(p2.Value())
						t.Fatal("no wait spins")
					}
				}
			}
			done := make(chan error, 2)
			go func() { done <- p2.Wait(context.Background()) }()
			if c.laterParks {
				for start := time.Now(); d.Stats().WaitsParked == base.WaitsParked; time.Sleep(time.Millisecond) {
					if time.Since(start) > 10*time.Second {
						f.complete(p2.Value())
						t.Fatal("a wait for the value after the next did not park")
					}
				}
				go func() { done <- p1.Wait(context.Background()) }()
				spinning()
				f.complete(p1.Value())
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			} else {
				spinning()
			}
			f.complete(p2.Value())
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			st := d.Stats()
			spun, parked := st.WaitsSpun-base.WaitsSpun, st.WaitsParked-base.WaitsParked
			wantParked := uint64(0)
			if c.laterParks {
				wantParked = 1
			}
			if spun != 1 || parked != wantParked {
				t.Errorf("%d waits spun and %d parked, want 1 and %d", spun, parked, wantParked)
			}
		})
	}
}

// yieldAttempts is how many times the tests of the yields to the woken
// try, and yieldMisses how many of those may see the yielder go on
// first: on one processor the scheduler takes from its global run queue,
// where a yield puts the yielder, before the processor's own goroutines
// once every 61 rounds, so that a yield hands the processor over in
// nearly every try, and without the yield in none.
const (
	yieldAttempts = 10
	yieldMisses   = 2
)

// TestSupervisorYieldsToWoken: on one processor, a waiter that the
// supervisor of a device whose waits spin for the next value only wakes
// runs before the supervisor sleeps in the driver again, rather than
// after.
func TestSupervisorYieldsToWoken(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f, d := openHeldKick(t, "yield-to-woken")
	d.SetWaitSpin(0)
	s := empty(t, d)
	first := 0
	for range yieldAttempts {
		p1 := submit(t, s)
		p2 := submit(t, s) // pending after p1, so that the supervisor sleeps again
		parked := d.Stats().WaitsParked
		var ran atomic.Bool
		woken := make(chan error, 1)
		go func() {
			err := p1.Wait(context.Background())
			ran.Store(true)
			woken <- err
		}()
		for start := time.Now(); d.Stats().WaitsParked == parked; time.Sleep(time.Millisecond) {
			if time.Since(start) > 10*time.Second {
				t.Fatal("the wait did not park")
			}
		}
		seen := make(chan bool, 1)
		hook := func(v uint64) {
			if v == p1.Value() {
				select {
				case seen <- ran.Load():
				default:
				}
			}
		}
		f.onSleep.Store(&hook)
		f.complete(p1.Value())
		if <-seen {
			first++
		}
		f.onSleep.Store(nil)
		if err := <-woken; err != nil {
			t.Fatal(err)
		}
		f.complete(p2.Value())
	}
	if first < yieldAttempts-yieldMisses {
		t.Errorf("the waiter the supervisor woke ran before the supervisor slept again in %d of %d tries", first, yieldAttempts)
	}
}

// TestCombinerYieldsToWoken: on one processor, a holder of the submit
// lock that attempted a parked run lets the run's goroutine finish its
// submission before it goes on.
func TestCombinerYieldsToWoken(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, d := openHeldKick(t, "combiner-yields")
	s := empty(t, d)
	first := 0
	for range yieldAttempts {
		d.mu.Lock()
		var returned atomic.Bool
		got := make(chan error, 1)
		go func() {
			_, err := s.Take().Submit(context.Background())
			returned.Store(true)
			got <- err
		}()
		for start := time.Now(); ; time.Sleep(100 * time.Microsecond) {
			if r := d.cq.head.Load(); r != nil && r.comb.state.Load() == combParked {
				break
			}
			if time.Since(start) > 10*time.Second {
				d.unlockSubmit()
				t.Fatal("the queued run did not park")
			}
		}
		d.unlockSubmit()
		if returned.Load() {
			first++
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	if first < yieldAttempts-yieldMisses {
		t.Errorf("the submitter the holder woke returned before the holder went on in %d of %d tries", first, yieldAttempts)
	}
}
