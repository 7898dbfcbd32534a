// Package yield paces the yields of goroutines that spin on memory that
// the GPU or another goroutine writes.
//
// A spinner gives up its processor now and then (runtime.Gosched), so
// that a goroutine queued behind it on that processor runs. A yield puts
// the spinner on the scheduler's global run queue, under the scheduler's
// one lock, and takes the next goroutine from it: where dozens of
// goroutines spin and each yields every few looks, that lock is what they
// wait for (on the H200, with a submitter waiting for a kick yielding at
// every look, four timelines of 16 submitters each spent a third of the
// process's CPU in yields, most of it waiting for that lock); and a
// spinner that yields is not looking when its turn comes. A Pacer yields
// at most once per Every instead (Pacer).
//
// Spinners on the host driver's word are not paced: there the work they
// wait for runs on the process's goroutines, and they yield at every look.
package yield

import (
	"runtime"
	"time"
)

// Every is the least time between the looks at which a Pacer yields: longer
// than a wait's spin and cudadev's Sleep's (20 µs), which then never
// yield, as long as half the submit lock's and nvdev's Sleep's (50 µs),
// whose spinners yield once, and the pace of a waiter for a kick in flight, whose wait has no
// end of its own. On the H200, 10 µs made as many submissions a second
// but set the max of four nvdev timelines' submissions at 20 to 40 ms in
// each of seven runs, where 30 µs kept it at 1.2 to 3.1 ms, as before.
const Every = 30 * time.Microsecond

// Pacer paces the yields of one spin. The zero value is ready and yields
// at its first Maybe; the goroutine that spins owns it.
//
// Every is counted between the looks that yield, the times given to Maybe:
// a yield that outlasts Every, because other goroutines ran on the
// processor meanwhile, is followed by another at the spin's next look at
// the clock, while the processor stays busy. Counted from the end of each
// yield instead, so that a spinner always spins Every between yields, four
// nvdev timelines of 16 goroutines on the H200 waited longer, in rounds
// interleaved on one machine: p99 85 to 120 µs against 82 to 108 µs, 250
// against 210 to 240 µs beside two busy processors, and one timeline made
// 2 to 6% fewer submissions a second at 16 and 64 goroutines.
type Pacer struct{ last time.Time }

// Start marks now as the start of the spin: the first yield comes Every
// after it.
func (p *Pacer) Start(now time.Time) { p.last = now }

// Maybe yields the processor, and reports whether it did, where Every has
// passed between the spin's start or its last yield and now.
func (p *Pacer) Maybe(now time.Time) bool {
	if !p.last.IsZero() && now.Sub(p.last) < Every {
		return false
	}
	runtime.Gosched()
	p.last = now
	return true
}
