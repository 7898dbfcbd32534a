package rig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/mailbox"
)

// Point is a value of a device's timeline. It is reached once the device's
// word holds at least the value, in circular order: the work of that value
// and of every earlier value of the device has completed. The zero Point is
// reached.
type Point struct {
	d *Device
	v uint64
}

// Device is the point's device, nil for the zero Point.
func (p Point) Device() *Device { return p.d }

// Value is the point's value.
func (p Point) Value() uint64 { return p.v }

// Reached reports whether the point is reached: its work completed, and
// the device was neither lost nor stopped by Close before it did. It reads
// the word (one atomic load, or the driver's Signaled where it keeps its
// own word) and a few of the device's atomics; it blocks on nothing, and
// reports false while a loss or a stop of the device is being recorded.
func (p Point) Reached() bool {
	if !p.passed() {
		return false
	}
	if p.d == nil {
		return true
	}
	if !p.d.passedSettled(p.v) {
		return false
	}
	settled, err := p.d.passedAnswerIf(p.v, false)
	return settled && err == nil
}

// passed reports whether the word passed the point, whether its work
// completed or failed: no work of the device before it can run any more.
func (p Point) passed() bool {
	return p.d == nil || device.AtLeast(p.d.read(), p.v)
}

// never reports whether the point will never be reached: its device was
// lost or stopped before its word reached it.
func (p Point) never() bool {
	return p.d != nil && (p.d.loss.Load() != nil || p.d.stopped.Load()) && p.d.passedAnswer(p.v) != nil
}

// Wait blocks until the point is reached, ctx ends, or the device is lost
// or closed. It asks the device to commit up to the point's value first.
// A cancelled wait returns ctx.Err() and leaves nothing registered; a lost
// device's answer matches ErrLost and names the cause. A wait on work that
// Close dropped, or that still ran when Close stopped the device, returns
// ErrClosed, also after the device gave everything back. A Wait on a reached
// point allocates nothing.
func (p Point) Wait(ctx context.Context) error {
	if ctx == nil {
		panic("rig: Wait with a nil Context")
	}
	if p.passed() {
		if p.d == nil {
			return nil
		}
		if p.d.passedSettled(p.v) {
			return p.d.passedAnswer(p.v)
		}
	}
	return p.d.wait(ctx, p.v)
}

// passedSettled reports whether the answer of a passed value v is settled,
// so that the word's passing it answers as passedAnswer says: v was
// committed, or the device's loss or stop decides it. A driver may write
// a value into the word inside the Submit or Commit it then answers
// Failed for, before rig records the loss: a wait on a value neither
// committed nor decided so waits for the commit, whose submit lock the
// failing call holds (wait).
func (d *Device) passedSettled(v uint64) bool {
	return device.AtLeast(d.committed.Load(), v) || d.loss.Load() != nil || d.stopped.Load()
}

// WaitAll waits for the points in order, and returns nil once every one
// is reached, or the first error at once, without waiting for the rest.
// A nil ctx panics.
func WaitAll(ctx context.Context, points ...Point) error {
	if ctx == nil {
		panic("rig: WaitAll with a nil Context")
	}
	for _, p := range points {
		if err := p.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (d *Device) wait(ctx context.Context, v uint64) error {
	if err := ctx.Err(); err != nil {
		d.stats.waitsCancelled.Add(1)
		return err
	}
	if le := d.loss.Load(); le != nil {
		return d.lostAnswer(le, v)
	}
	if !device.AtLeast(d.committed.Load(), v) {
		if err := d.commit(v); err != nil {
			if le, ok := err.(*LostError); ok {
				return d.lostAnswer(le, v)
			}
			return err
		}
	}
	// A short spin on the word before parking, by a few waiters at once
	// (spinGate): work that ends within the spin wakes its waiter without
	// the supervisor. The others park at once, and so, on a device whose
	// submitters combine, does a wait for a value with others' work ahead
	// of it (spinNext).
	if spin := time.Duration(d.spin.Load()); spin > 0 && (!d.spinNext || device.AtLeast(d.read()+1, v)) && !d.closing.Load() && d.spinners.enter() {
		reached := d.spinFor(ctx, v, spin)
		d.spinners.leave()
		if reached {
			d.stats.waitsSpun.Add(1)
			return d.passedAnswer(v)
		}
		// A spin ends early where ctx ended or the device was lost.
		if err := ctx.Err(); err != nil {
			d.stats.waitsCancelled.Add(1)
			return err
		}
		if le := d.loss.Load(); le != nil {
			return d.lostAnswer(le, v)
		}
	}
	w := d.stock.get()
	w.v, w.key, w.idx = v, v-d.base, -1
	w.state.Store(waitSent)
	if err := d.sup.box.Send(ctx, message{kind: msgRegister, w: w}); err != nil {
		d.stock.put(w)
		if errors.Is(err, mailbox.ErrClosed) {
			if device.AtLeast(d.read(), v) {
				return d.passedAnswer(v)
			}
			if le := d.loss.Load(); le != nil {
				return le
			}
			return d.closed
		}
		// ctx ended while the supervisor's mailbox was full.
		d.stats.waitsCancelled.Add(1)
		return err
	}
	d.stats.waitsParked.Add(1)
	return d.parked(ctx, w)
}

// lostAnswer is the answer of a wait on v of a device lost by le: the word
// may have passed v after the caller last read it and before the loss, and
// then the wait answers as one on a passed point does (passedAnswer).
func (d *Device) lostAnswer(le *LostError, v uint64) error {
	if device.AtLeast(d.read(), v) {
		return d.passedAnswer(v)
	}
	return le
}

// parked waits for the answer to w, whose registration the supervisor's
// box took, and returns it. A registration that the box took after the
// supervisor closed it and took its last messages is never received: a
// waiter that finds the box closed withdraws it, and answers itself where
// the supervisor had not answered first. Only w's goroutine calls it.
func (d *Device) parked(ctx context.Context, w *waiter) error {
	select {
	case <-d.sup.box.Closed():
		if w.state.CompareAndSwap(waitSent, waitCancelled) {
			// The registration stays in the closed box: w is not
			// reused.
			return d.withdrawnAnswer(w.v)
		}
	default:
	}
	select {
	case err := <-w.ch:
		d.stats.wake.record(time.Since(w.woke))
		d.stock.put(w)
		return err
	case <-ctx.Done():
		d.stats.waitsCancelled.Add(1)
		d.sup.cancel(w)
		return ctx.Err()
	}
}

// withdrawnAnswer is the answer of a wait on v that its goroutine withdrew
// as it found the supervisor's box closed: no answer comes from the
// supervisor.
func (d *Device) withdrawnAnswer(v uint64) error {
	if device.AtLeast(d.read(), v) {
		return d.passedAnswer(v)
	}
	if le := d.loss.Load(); le != nil {
		return le
	}
	return d.closed
}

// commit asks the driver to commit every value up to v: every value
// submitted, so that the waiters of the values submitted before this
// commit find them committed and do not queue on the submit lock for
// commits of their own (a closed loop of 16 goroutines on cudadev spent
// more than a third of its blocked time in commits that one would have
// covered).
func (d *Device) commit(v uint64) error {
	d.mu.Lock()
	defer d.unlockSubmit()
	if device.AtLeast(d.committed.Load(), v) {
		return nil
	}
	asked := v
	if last := d.last.Load(); device.AtLeast(last, v) {
		v = last
	}
	if le := d.loss.Load(); le != nil {
		return le
	}
	if d.closing.Load() {
		// Stop, which follows, writes the last value: no driver call
		// may come after it.
		return nil
	}
	a := d.drv.Commit(v)
	switch a.Kind {
	case device.Failed:
		// A failed commit is a fault of the device, as a failed Submit
		// is: it loses the devices of its fault domain too.
		return d.loseRead(a.Reason, &device.Fault{Why: a.Reason}, func() uint64 { return d.failedReached(v) })
	case device.Committed:
		d.committed.Store(v)
	case device.Pending:
		// Against the contract: the value stays uncommitted, and a
		// caller that asked again would get the same answer (a
		// submission that waits for it on its device retried until its
		// context ended; a wait on it waited for a word that never
		// moves).
		return fmt.Errorf("rig: the driver of %s left value %d uncommitted after a Commit (answered Pending)", d.name, asked)
	}
	return nil
}

// failedReached is the reached value of a loss that a driver's Failed
// answer (to a Submit or a Commit) caused: the word as it reads, but not
// past limit nor past the last value committed. The values past the last
// one committed are not known to have run, and the driver may write a
// failed value into the word after the work that did run (so that later
// waits end), where the device may have written it already, on a stream
// that runs beside earlier values' work: their points then answer the
// loss, never nil.
func (d *Device) failedReached(limit uint64) uint64 {
	reached := d.read()
	if c := d.committed.Load(); device.AtLeast(limit, c) {
		limit = c
	}
	if device.AtLeast(reached, limit) {
		reached = limit
	}
	return reached
}

// commitLost asks the driver of a lost device to write the word for every
// value submitted, as work that still runs (the held work of a device lost
// to its hang bound, rather than to a fault) then reaches it: the frees of
// other devices' buffers that wait for its points end, rather than waiting
// for its close. The loss keeps every point past the value it reached
// failing. Only the supervisor calls it, holding no lock.
func (d *Device) commitLost() {
	d.mu.Lock()
	defer d.unlockSubmit()
	last := d.last.Load()
	if d.closing.Load() || device.AtLeast(d.committed.Load(), last) {
		return
	}
	if a := d.drv.Commit(last); a.Kind == device.Committed {
		d.committed.Store(last)
	}
}

func timelineGive(slot int) { timeline.Give(slot) }

// DefaultWaitSpin is how long a wait reads the word, yielding now and
// then, before it registers with the supervisor (SetWaitSpin).
const DefaultWaitSpin = 20 * time.Microsecond

// A spin on a device's word reads the clock every spinCheck reads of the
// word, which on a virtual machine cost less than a reading of the clock.
const spinCheck = 16

// SetWaitSpin sets how long a wait on the device's points reads the word
// before it parks: a GPU's round trip of a few microseconds then wakes its
// waiter with no goroutine handoff, at the cost of that much CPU per wait
// that outlasts it. Only a few waits spin at once, whatever the spin; the
// others park at once. 0, or a negative spin, parks at once; the default
// is DefaultWaitSpin. Any goroutine may call it, and it applies to the
// waits that begin after it. A spinning wait returns once its context ends
// or the device is lost, whatever the spin.
func (d *Device) SetWaitSpin(spin time.Duration) { d.spin.Store(int64(max(spin, 0))) }
