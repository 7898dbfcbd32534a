package rig

import (
	"context"
	"errors"
	"runtime"
)

// Do submits the run and waits for its point, for the goroutine that has
// nothing to do in between, as a server's request often does. It returns
// what Submit returns where that is an error (the zero Point where
// nothing was submitted), and otherwise the point with what Wait on it
// returns, under the same rules for the run, its buffers and ctx. Where
// the device's Observer panicked as it saw the run, which was submitted
// all the same, Do waits for the point too: it returns the
// *ObserverPanicError once the point is reached, or what Wait returns
// where the wait ends first. Where the wait ended before the point was
// reached (ctx ended, the device was lost or closed), the submitted work
// may still run: the point says when it no longer does, and the host may
// write the run's buffers again. A nil ctx panics.
//
// Where many goroutines submit to one device, Do costs less than Submit
// and then Wait: on a device whose submitters combine (nvdev), a
// goroutine that parked while another submitter made its attempt wakes
// once, with its wait's answer, which takes less CPU and, where the
// process's processors are busy, shortens the tail; with a few
// goroutines on one device and processors to spare, the tail can be
// longer than Submit then Wait's (handoff.go has the figures).
func (r *Run) Do(ctx context.Context, buffers ...*Buffer) (Point, error) {
	if ctx == nil {
		panic("rig: Do with a nil Context")
	}
	p, waited, werr, err := r.submit(ctx, buffers, true)
	// As in Submit: the run holds the buffers' states, not the Buffers.
	runtime.KeepAlive(buffers)
	if waited {
		return p, werr
	}
	if err != nil {
		var observed *ObserverPanicError
		if !errors.As(err, &observed) {
			return p, err
		}
		if werr := p.Wait(ctx); werr != nil {
			return p, werr
		}
		return p, err
	}
	return p, p.Wait(ctx)
}
