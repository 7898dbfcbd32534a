package rig

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/internal/yield"
)

// Combining the submitters of a device.
//
// A submitter does not queue on the submit lock: it puts its run on the
// device's combining queue and, where the lock is free, takes it and
// makes the attempts of every run queued (Run.try), its own among them,
// in the order they were queued; otherwise it waits for the holder to
// make its attempt, spinning for a while (with a place of the lock's spin
// gate) and then parking. Every holder of the submit lock, a submitter or
// not, makes the queued attempts before it lets the lock go
// (unlockSubmit), and looks again once it has: a run queued while the
// lock was held is attempted by that holder or by the next. So a burst of
// submitters costs one handoff of the lock, and the device's state stays
// in one processor's caches for the burst, where each submitter taking
// the lock in turn moved it from processor to processor.
//
// An attempt blocks on nothing: what must wait (a host wait, a commit of
// another device, a full queue, a growth) it returns to the run's own
// goroutine, which does it without the lock and queues the run again.
//
// A run of Run.Do that was submitted goes back to its goroutine once the
// holder let the lock go: where the goroutine parked, the holder hands
// its wait to the supervisor, so that it wakes once (handoff.go).
//
// A holder makes at most combPasses passes; where runs were queued after
// its last, it wakes the goroutine of one that parked (nudge), which takes
// the lock, and a run that parks looks at the lock once more after it
// parked, so that no run waits for its park to end while the lock is
// free.
//
// Only the devices whose driver kicks (device.Kicker: nvdev, whose Submit
// stores to memory) combine. On the H200, combining took nv:0's empty
// launches from 267k to 367k a second to 341k to 520k at 16 and 64
// goroutines, and the example service's from 67k to 85k requests a second
// to 174k to 200k; cudadev's Submit calls CUDA under the lock, and combining made
// it slower. The host driver runs its work on the process's goroutines.
// Timed submissions do not combine: the observer sees them on the
// submitter's goroutine (profile.go).

// combNode is a run's place in its device's combining queue. The run's
// goroutine writes next and sample before it queues the run; the combiner
// writes res before it stores combDone into state; the goroutine reads res
// after it loaded combDone.
type combNode struct {
	next   *Run
	sample bool
	// do says that the run's goroutine waits for the run's point once
	// it is submitted (Run.Do): a combiner may hand that wait to the
	// supervisor (handOff).
	do    bool
	state atomic.Int32
	wake  chan error  // made once a run parks, then kept with the run
	timer *time.Timer // bounds a park (combPark), made with wake
	// w is the wait a combiner hands to the supervisor: its channel is
	// wake. It is the run's until a cancelled or withdrawn wait leaves
	// it to the supervisor (detach).
	w   *waiter
	res attempt
}

// Combining states of a run.
const (
	combQueued int32 = iota + 1
	combParked
	combDone
	// combHanded: the run was submitted, and its wait handed to the
	// supervisor, which answers it on wake (handOff).
	combHanded
)

// combQueue is a device's queue of runs to attempt: a stack that a
// combiner empties at once and attempts in the order the runs came.
type combQueue struct {
	_    [64]byte
	head atomic.Pointer[Run]
	_    [56]byte
}

// combine makes one attempt to submit r, queued behind the runs queued
// before it, and returns how it ended; where do is set and a combiner
// handed the run's wait to the supervisor, the attempt says so (waited)
// with the wait's answer, a wait bounded by ctx. Only r's goroutine calls
// it, holding no lock.
func (d *Device) combine(ctx context.Context, r *Run, sample, do bool) attempt {
	n := &r.comb
	n.sample, n.do = sample, do
	n.state.Store(combQueued)
	for {
		h := d.cq.head.Load()
		n.next = h
		if d.cq.head.CompareAndSwap(h, r) {
			break
		}
	}
	// Take the lock where it is free, now and now and then after; spin
	// on the run's state for combSpin with a place of combGate, then park
	// until the combiner wakes it. Only devices whose work does not run on
	// the process's goroutines combine, so a spinner yields at the pace
	// of internal/yield.
	l := &d.mu
	place := false
	spin := true
	var start time.Time
	var pace yield.Pacer
	for i := uint(0); ; i++ {
		if n.state.Load() == combDone {
			if place {
				combGate.leave()
			}
			return n.res
		}
		if i%64 == 0 {
			if l.TryLock() {
				d.unlockSubmit()
				continue
			}
			if i == 0 {
				start = time.Now()
				pace.Start(start)
				place = combGate.enter()
				spin = place
			} else if spin && time.Since(start) > combSpin {
				spin = false
				if place {
					combGate.leave()
					place = false
				}
			}
		}
		if spin {
			if i%64 == 63 {
				pace.Maybe(time.Now())
			}
			continue
		}
		if n.wake == nil {
			n.wake = make(chan error, 1)
			if n.timer == nil {
				n.timer = time.NewTimer(time.Hour)
				n.timer.Stop()
			}
		}
		if do && n.w == nil {
			n.w = &waiter{idx: -1, ch: n.wake}
		}
		if n.state.CompareAndSwap(combQueued, combParked) {
			// A holder that let the lock go before the park found no
			// one parked to nudge: take the lock where it is free.
			if l.TryLock() {
				taken := n.state.CompareAndSwap(combParked, combQueued)
				d.unlockSubmit()
				if !taken {
					// A combiner finished the run and sends, or
					// handed its wait to the supervisor, which
					// may take the submit lock before it answers.
					if n.state.Load() == combHanded {
						return d.handedWait(ctx, n)
					}
					<-n.wake
				}
				continue
			}
			n.timer.Reset(combPark)
			select {
			case err := <-n.wake:
				n.timer.Stop()
				if n.state.Load() == combHanded {
					return d.handedAnswer(n, err)
				}
			case <-n.timer.C:
				// Take the park back and look again, unless a
				// combiner finished the run and sends, or handed its
				// wait to the supervisor.
				if !n.state.CompareAndSwap(combParked, combQueued) {
					if n.state.Load() == combHanded {
						return d.handedWait(ctx, n)
					}
					<-n.wake
				}
			}
			i = 63 // the next look tries the lock
		}
	}
}

// combPark bounds a park of a queued run: a holder combines for at most
// combPasses passes over the queue before it lets the lock go, so that a
// run queued after its last pass waits for the next holder, or for its
// own goroutine, which looks again after combPark.
const (
	combPark   = 100 * time.Microsecond
	combPasses = 2
)

// combineLocked makes the attempts of the runs queued, in the order they
// came, and reports whether it woke the goroutine of one that parked, and
// returns the runs whose waits the caller hands to the supervisor once it
// let the lock go (handOver), linked by their next. The caller holds the
// submit lock.
func (d *Device) combineLocked() (woke bool, handed *Run) {
	var fifo *Run
	for r := d.cq.head.Swap(nil); r != nil; {
		next := r.comb.next
		r.comb.next = fifo
		fifo, r = r, next
	}
	// Timed submissions go to the observer on their own goroutines: a
	// run queued before the device became timed goes back to its
	// goroutine. The lock holds timed still.
	timed := d.timed.Load()
	var first chan error // the first parked run's, woken last (wokenInOrder)
	for r := fifo; r != nil; {
		next := r.comb.next
		r.comb.next = nil
		if timed {
			r.comb.res = attempt{kind: attemptSelf}
		} else {
			r.comb.res = r.try(d, r.comb.sample)
		}
		if d.mayHandOff(r) {
			// The run stays queued for its goroutine until handOver.
			r.comb.next = handed
			handed = r
			r = next
			continue
		}
		// Once the state is combDone the run is its goroutine's again:
		// nothing of it is touched after, but the wake-up of a goroutine
		// that parked, which waits for it.
		if r.comb.state.Swap(combDone) == combParked {
			if first == nil {
				first = r.comb.wake
			} else {
				r.comb.wake <- nil
			}
			woke = true
		}
		r = next
	}
	if first != nil {
		first <- nil
	}
	return woke, handed
}

// unlockSubmit makes the attempts of the runs queued and lets the submit
// lock go; where runs were queued meanwhile and the lock is free, it takes
// it again for them. Every holder of the submit lock lets it go so.
//
// A holder that woke the goroutines of runs that parked yields its
// processor once it let the lock go (yieldToWoken).
func (d *Device) unlockSubmit() {
	woke := false
	for pass := 1; ; pass++ {
		var handed *Run
		if d.cq.head.Load() != nil {
			var w bool
			w, handed = d.combineLocked()
			woke = woke || w
		}
		d.mu.Unlock()
		if handed != nil && d.handOver(handed) {
			woke = true
		}
		h := d.cq.head.Load()
		if h == nil {
			break
		}
		if pass == combPasses {
			// The runs queued since go to a goroutine of theirs, which
			// takes the lock where no one else has, rather than wait for
			// its park to end.
			h.comb.nudge()
			break
		}
		if !d.mu.TryLock() {
			break
		}
	}
	if woke {
		yieldToWoken()
	}
}

// yieldToWoken gives the caller's processor to the goroutines it just
// woke. Go runs a goroutine that a channel send wakes on the sender's
// processor, after the sender, unless an idle processor steals it; and a
// submitter that combined goes on to spin on the word for its own value,
// which holds that processor for up to a wait's spin. In an execution
// trace of 16 goroutines in a closed loop on the H200 (nvdev), runs woken
// by a combiner had waited 1.69 s for a processor in 0.3 s (5.6 of them
// at any time); with the yield, 16 goroutines' p99 went from 112 and 118
// µs to 92 and 101 µs in two runs beside each other. A yield puts the
// caller on the global run queue, behind them; the caller's value is in
// flight on the device meanwhile. The supervisor yields so too
// (supervisor.wake).
func yieldToWoken() { runtime.Gosched() }

// wokenInOrder: of the goroutines one goroutine's sends woke, Go runs the
// one woken last first (it takes the processor's next place, and moves the
// one there before it to the end of the processor's queue), then the
// others in the order they were woken. The supervisor and a combiner so
// wake the first of theirs last, so that their goroutines run in the
// order of their values and of their arrival: woken in that order, the
// newest of them ran first and the oldest waited for it.

// nudge wakes the run's goroutine where it parked, to look again; it does
// nothing to a run that did not park or was attempted. Any goroutine may
// call it.
func (n *combNode) nudge() {
	if n.state.CompareAndSwap(combParked, combQueued) {
		n.wake <- nil
	}
}

// combGate bounds the queued runs that spin, across the process's
// devices, to a quarter of GOMAXPROCS; combSpin is how long one spins
// before it parks.
var combGate = spinGate{max: int32(max(1, runtime.GOMAXPROCS(0)/4))}

const combSpin = 20 * time.Microsecond
