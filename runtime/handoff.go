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
// for nothing: the combiner rather registers the run's own waiter (w,
// whose channel is the one the goroutine parked on) with the supervisor
// at once, and kicks the run's value once it let the submit lock go, and
// the goroutine wakes once, with the wait's answer.
//
// The combiner hands off only a run whose goroutine is parked (the state
// moves from combParked to combHanded, so that a goroutine whose park
// ended first attempts no more and takes the attempt as it was), whose
// attempt submitted a committed value with no loss, on a box with room.
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

// handOff hands the wait of the run just attempted to the supervisor,
// where it may, and returns the run's value and whether it did; once it
// did, the run is its goroutine's again, and the caller touches it no
// more. Only a combiner calls it, holding the submit lock, after it set
// the run's attempt.
func (d *Device) handOff(r *Run) (uint64, bool) {
	n := &r.comb
	a := &n.res
	if !n.do || a.kind != attemptSubmitted || a.failed || a.lost != nil ||
		n.state.Load() != combParked || !device.AtLeast(d.committed.Load(), a.v) {
		return 0, false
	}
	v := a.v
	// The goroutine wrote w before it parked, and touches it again only
	// once it sees combHanded.
	w := n.w
	w.v, w.key, w.idx = v, v-d.base, -1
	w.state.Store(waitSent)
	if !n.state.CompareAndSwap(combParked, combHanded) {
		return 0, false
	}
	if err := d.sup.box.TrySend(message{kind: msgRegister, w: w}); err != nil {
		// A goroutine that saw the box closed withdrew the wait first.
		if w.state.CompareAndSwap(waitSent, waitAnswered) {
			w.ch <- errNotHanded
		}
	}
	return v, true
}

// handedAnswer is the attempt of a run whose handed wait the supervisor
// answered with err, or that the combiner answered errNotHanded. Only the
// run's goroutine calls it, once it received err.
func (d *Device) handedAnswer(n *combNode, err error) attempt {
	a := n.res
	if err == errNotHanded {
		return a
	}
	d.stats.waitsParked.Add(1)
	d.stats.waitsHanded.Add(1)
	d.stats.wake.record(time.Since(n.w.woke))
	a.waited, a.werr = true, err
	return a
}

// handedWait waits for the answer of the run's handed wait, as a parked
// Point.Wait does (parked): until the answer, ctx's end, or the close of
// the supervisor's box. Only the run's goroutine calls it, holding no
// lock, once it saw combHanded.
func (d *Device) handedWait(ctx context.Context, n *combNode) attempt {
	w := n.w
	select {
	case <-d.sup.box.Closed():
		if w.state.CompareAndSwap(waitSent, waitCancelled) {
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
		d.stats.waitsParked.Add(1)
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
