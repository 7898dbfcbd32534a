package main

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
)

// pacer releases the arrivals of an open-loop run (-rate). Arrival j (0,
// 1, ...) is due at start + j*period and belongs to lane j mod lanes: lane
// i's k-th arrival is arrival k*lanes+i. One goroutine (run) keeps the
// schedule of every lane, by absolute deadlines, so that a late wake delays
// no later arrival: it sleeps in the kernel (nanosleep) until paceFine
// before the next arrival (Go's timers wake up to a millisecond late where
// the process has nothing else to run), yields until the arrival is due,
// and then releases at once every arrival due by then, raising due and
// waking their lanes. Where the run has an end (-duration), the arrivals
// are those due before it, and run returns once it released the last.
// The lanes' goroutines sleep on their wake channels, so a run of
// thousands of lanes has one timer, not thousands.
type pacer struct {
	start  int64   // mono of arrival 0
	period float64 // nanoseconds between arrivals
	lanes  int
	due    atomic.Int64    // arrivals released: 0 to due-1 are due
	wake   []chan struct{} // a lane's, of capacity 1
	now    func() int64    // the clock: mono, but for tests
	sleep  func(ns int64)  // sleeps ns: nanosleep, but for tests
	end    int64           // mono of the run's end, 0 for none: no arrival due then or after is released
	// first and from place the run in a longer schedule of which earlier
	// runs took from nanoseconds (the rounds of -compare): its arrival j
	// is that schedule's arrival first+j, the first due at or after from.
	first, from int64
}

// paceFine is how long before an arrival the pacer stops sleeping and
// yields instead, in nanoseconds: more than a nanosleep's usual overshoot.
const paceFine = 50_000

// paceNap bounds one sleep of the pacer, so that it sees the run's end
// within it.
const paceNap = 10_000_000

// newPacer makes the pacer of lanes lanes at rate arrivals/s over all
// lanes, from start.
func newPacer(start int64, rate float64, lanes int) *pacer {
	p := &pacer{start: start, period: 1e9 / rate, lanes: lanes, wake: make([]chan struct{}, lanes), now: mono, sleep: nanosleep}
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
	}
	return p
}

// at is when arrival j is due.
func (p *pacer) at(j int64) int64 {
	return p.start + int64(p.period*float64(p.first+j)) - p.from
}

// resume places the run from ns into its schedule, whose arrivals due
// before that went to earlier runs: arrival 0 is then the first due at or
// after from, at start plus what it lies past from.
func (p *pacer) resume(from int64) {
	p.from = from
	p.first = int64(math.Ceil(float64(from) / p.period))
	for p.at(0) < p.start {
		p.first++ // rounding
	}
}

// before reports whether arrival j is due before the run's end.
func (p *pacer) before(j int64) bool { return p.end == 0 || p.at(j) < p.end }

// run releases arrivals until ctx ends, or until it released the last
// arrival due before the run's end.
func (p *pacer) run(ctx context.Context) {
	for j := int64(0); ctx.Err() == nil && p.before(j); {
		now := p.now()
		if left := p.at(j) - now; left > 0 {
			if left > paceFine {
				p.sleep(min(left-paceFine, paceNap))
			} else {
				runtime.Gosched()
			}
			continue
		}
		n := j + 1
		for p.at(n) <= now && p.before(n) {
			n++
		}
		p.due.Store(n)
		// Each lane needs one token, however many of its arrivals fell due.
		for k := j; k < n && k < j+int64(p.lanes); k++ {
			select {
			case p.wake[k%int64(p.lanes)] <- struct{}{}:
			default:
			}
		}
		j = n
	}
}

// wait blocks until lane's k-th arrival is due, and returns when it was
// due; false once ctx ended first.
func (p *pacer) wait(ctx context.Context, lane int, k int64) (int64, bool) {
	j := k*int64(p.lanes) + int64(lane)
	for p.due.Load() <= j {
		select {
		case <-p.wake[lane]:
		case <-ctx.Done():
			return 0, false
		}
	}
	return p.at(j), true
}
