package rig

import (
	"context"
	"errors"
	"time"

	"github.com/rig-go/rig/device"
)

// Handing a combined run's wait to the supervisor.
//
// A run submitted by Do (combNode.do) is waited for as soon as it is
// submitted. Where its goroutine parked while a combiner made its attempt,
// waking it for the point, only for it to register a wait with the
// supervisor and park again, costs a handoff of a processor and a park
// for nothing: the combiner rather kicks the run's value and registers
// the run's own waiter (w, whose channel is the one the goroutine parked
// on) with the supervisor once it let the submit lock go, and the
// goroutine wakes once, with the wait's answer.
//
// On the H200 (rigbench at -depth 1, Do against Submit then Wait in the
// same build and in rounds of turns), four nvdev timelines of 16
// goroutines: p99 91.2 to 112 µs, 98.0 at the median of eight rounds,
// against 114 to 137 µs (125), at 1.16M to 1.22M submissions a second
// either way, 12.0 to 12.5 µs of CPU a submission against 12.8 to 13.2,
// and 6.8 to 13.0 goroutines waiting for a processor against 15.2 to
// 24.9. One timeline of 64: 572k to 592k a second against 439k to 449k,
// p99 186 to 235 µs against 269 to 293. One of 16: p50 30.5 against
// 34.6 µs and 15% less CPU, but p99 110 to 133 µs against 81.5 to 93.8:
// the goroutine whose own wait spins on the next value cycles at the
// GPU's round trip while the others wait for the supervisor's wake-ups.
// Registering inside the submit lock, where the registration's send may
// wake the supervisor, cost one timeline of 16 5% of its rate.
//
// The combiner hands off only a run whose attempt submitted a committed
// value with no loss, once it let the submit lock go (handOver), and only
// where the run's goroutine is still parked then (the state moves from
// combParked to combHanded; a goroutine whose park ended first takes the
// attempt as it was, and kicks and waits itself), on a box with room.
// Where the box refuses the registration (full, or closed), it answers
// errNotHanded, and the goroutine waits for the point itself.
//
// The goroutine's park is still bounded by combPark: past it, it waits as
// Point.Wait does (handedWait), with ctx and the box's close. A run whose
// wait ended so, without an answer, leaves its waiter to the supervisor,
// which passes it by once its value is reached or the device stops
// (detach); the run makes another at its next park.

// errNotHanded answers a handed wait that the supervisor's box refused:
// the goroutine waits for the point itself.
var errNotHanded = errors.New("rig: the wait was not handed to the supervisor")

// mayHandOff reports whether the wait of the run just attempted may go to
// the supervisor: Do's run, submitted at a committed value with no loss.
// Only a combiner calls it, holding the submit lock, after it set the
// run's attempt.
func (d *Device) mayHandOff(r *Run) bool {
	a := &r.comb.res
	return r.comb.do && a.kind == attemptSubmitted && !a.failed && a.lost == nil &&
		device.AtLeast(d.committed.Load(), a.v)
}

// handOver finishes the runs combineLocked left for it (linked by their
// next, each attempted and mayHandOff): it kicks their values, and hands
// the wait of each run whose goroutine is parked to the supervisor
// (handOff); the others it finishes as combineLocked does, and it reports
// whether it woke the goroutine of one. The registrations, each a send
// that may wake the supervisor, so cost the submit lock nothing. Only the
// holder that let the submit lock go after combineLocked calls it.
func (d *Device) handOver(list *Run) (woke bool) {
	// The largest value, in the word's order: 0 is a value like any
	// other once the values wrapped.
	top := list.comb.res.v
	for r := list.comb.next; r != nil; r = r.comb.next {
		if v := r.comb.res.v; device.AtLeast(v, top) {
			top = v
		}
	}
	// The device sees the values first: the goroutines of runs handed
	// off wait for them without kicking them.
	d.kicks.kick(d.drv.(device.Kicker), top)
	for r := list; r != nil; {
		next := r.comb.next
		r.comb.next = nil
		// Once handed off or done, the run is its goroutine's again.
		if !d.handOff(r) && r.comb.state.Swap(combDone) == combParked {
			r.comb.wake <- nil
			woke = true
		}
		r = next
	}
	return woke
}

// handOff hands the run's wait to the supervisor where its goroutine is
// parked, and reports whether it did; once it did, the run is its
// goroutine's again, and the caller touches it no more. Only handOver
// calls it.
func (d *Device) handOff(r *Run) bool {
	n := &r.comb
	if n.state.Load() != combParked {
		return false
	}
	v := n.res.v
	// The goroutine wrote w before it parked, and touches it again only
	// once it sees combHanded.
	w := n.w
	w.v, w.key, w.idx = v, v-d.base, -1
	w.state.Store(waitSent)
	if n.sample {
		// Stats.SubmitLatency: the submission ends here for the
		// goroutine, which wakes only with the wait's answer.
		n.res.handed = time.Now()
	}
	if !n.state.CompareAndSwap(combParked, combHanded) {
		n.res.handed = time.Time{}
		return false
	}
	if err := d.sup.box.TrySend(message{kind: msgRegister, w: w}); err != nil {
		// A goroutine that saw the box closed withdrew the wait first.
		if w.state.CompareAndSwap(waitSent, waitAnswered) {
			w.ch <- errNotHanded
		}
	}
	return true
}

// handedAnswer is the attempt of a run whose handed wait the supervisor
// answered with err, or that the combiner answered errNotHanded. Only the
// run's goroutine calls it, once it received err.
func (d *Device) handedAnswer(n *combNode, err error) attempt {
	a := n.res
	if err == errNotHanded {
		return a
	}
	d.countHanded()
	d.stats.wake.record(time.Since(n.w.woke))
	a.waited, a.werr = true, err
	return a
}

// countHanded counts a handed wait as it ends, answered or not: a wait
// that parked, as Point.Wait counts its parks.
func (d *Device) countHanded() {
	d.stats.waitsParked.Add(1)
	d.stats.waitsHanded.Add(1)
}

// handedWait waits for the answer of the run's handed wait, as a parked
// Point.Wait does (parked): until the answer, ctx's end, or the close of
// the supervisor's box. It is not parked itself: parked gives its waiter
// back to the device's stock and cancels it by a message that puts it
// there, where the run's waiter is the run's, and a withdrawn one is left
// to the supervisor (detach). Only the run's goroutine calls it, holding
// no lock, once it saw combHanded.
func (d *Device) handedWait(ctx context.Context, n *combNode) attempt {
	w := n.w
	select {
	case <-d.sup.box.Closed():
		if w.state.CompareAndSwap(waitSent, waitCancelled) {
			d.countHanded()
			n.detach()
			a := n.res
			a.waited, a.werr = true, d.withdrawnAnswer(a.v)
			return a
		}
	default:
	}
	select {
	case err := <-n.wake:
		return d.handedAnswer(n, err)
	case <-ctx.Done():
		d.countHanded()
		d.stats.waitsCancelled.Add(1)
		d.sup.withdraw(w)
		n.detach()
		a := n.res
		a.waited, a.werr = true, ctx.Err()
		return a
	}
}

// detach leaves the run's waiter, withdrawn, to the supervisor, which may
// still hold it: the run's next park makes another, with its channel.
func (n *combNode) detach() { n.w, n.wake = nil, nil }
