package cudadev

import (
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/yield"
)

// Sleep blocks through CUDA's blocking primitives, not by polling.
//
// Each stream has a helper goroutine, with an event of its own made with
// CU_EVENT_BLOCKING_SYNC. Sleep records the stream's event behind the
// work enqueued so far (the word's writes among it) and the helper waits
// for it in cuEventSynchronize, which blocks its thread in the kernel
// until the GPU's interrupt (the context's scheduling is blocking-sync
// too) and then hands CUDA's answer back. Sleep waits for the first answer
// or for still, so that it still returns in time where the work runs
// long; a synchronisation in flight then carries over to the next Sleep.
// The helpers start at the first Sleep that may block and end at Stop,
// once their synchronisation in flight returns.

// eventBlockingSync is CU_EVENT_BLOCKING_SYNC: cuEventSynchronize on the
// event blocks its thread rather than spinning.
const eventBlockingSync = 0x1

// Sleep reads the word, yielding, for sleepSpin first, so that work of a
// few microseconds is seen without a thread's wake-up. Where neither
// stream has work recorded that is still to run, nothing enqueued would
// move the word: Sleep then looks at it in nanosleeps of sleepStep, and
// asks CUDA each queryEach whether a stream met an error.
const (
	sleepSpin = 20 * time.Microsecond
	sleepStep = 20 * time.Microsecond
	queryEach = time.Millisecond
)

// sleeper is Sleep's state. Only the supervisor, which alone calls Sleep
// and Stop, touches it.
type sleeper struct {
	started bool
	failed  bool // a helper did not start: Sleep polls
	helpers [2]*helper
	timer   *time.Timer
}

// helper synchronises on its stream's event each time Sleep asks.
type helper struct {
	ev   uintptr       // the event, which the helper makes and destroys
	req  chan struct{} // Sleep's asks, closed at Stop
	done chan result   // cuEventSynchronize's answer to each ask
	busy bool          // an ask is unanswered (Sleep's state)
}

// Sleep blocks until the word differs from seen, and returns at the latest
// after still. It returns a *device.Fault with CUDA's error once a stream
// met a fault of the context's work (the synchronisation returns it, or
// cuStreamQuery where Sleep does not block), and at every later call.
// CUDA's other errors are of the call alone: Sleep then looks at the word.
func (d *gpu) Sleep(seen uint64, still time.Duration) error {
	if why := d.faulted(); why != "" {
		return &device.Fault{Why: why}
	}
	if atomic.LoadUint64(d.word) != seen {
		return nil
	}
	if still <= 0 {
		return d.query()
	}
	start := time.Now()
	deadline := start.Add(still)
	var pace yield.Pacer
	pace.Start(start)
	for {
		now := time.Now()
		if now.Sub(start) >= min(sleepSpin, still) {
			break
		}
		if atomic.LoadUint64(d.word) != seen {
			return nil
		}
		pace.Maybe(now)
	}
	s := &d.sleeper
	if !s.started {
		d.startHelpers()
	}
	if s.failed {
		return d.poll(seen, deadline)
	}
	left := time.Until(deadline)
	if left <= 0 {
		return d.query()
	}
	if s.timer == nil {
		s.timer = time.NewTimer(left)
	} else {
		s.timer.Reset(left)
	}
	defer s.timer.Stop()
	var recorded [2]bool
	for {
		if atomic.LoadUint64(d.word) != seen {
			return nil
		}
		for q, h := range s.helpers {
			if h.busy || recorded[q] {
				continue
			}
			recorded[q] = true
			if ok, err := d.record(h, q); err != nil {
				return err
			} else if !ok {
				continue
			}
			h.busy = true
			h.req <- struct{}{}
		}
		if !s.helpers[0].busy && !s.helpers[1].busy {
			// The work recorded in this call ran, or CUDA refused
			// every record, and the word did not move: poll it.
			return d.poll(seen, deadline)
		}
		var r result
		select {
		case r = <-s.helpers[0].done:
			s.helpers[0].busy = false
		case r = <-s.helpers[1].done:
			s.helpers[1].busy = false
		case <-s.timer.C:
			return d.query()
		}
		// Any other refusal is of the synchronisation alone, which then
		// tells nothing of the work.
		if r.sticky() {
			d.noteFault(d.t.text(r))
			return &device.Fault{Why: d.faulted()}
		}
	}
}

// record records stream q's event behind the work enqueued on it, and
// reports whether it did. It returns a *device.Fault where CUDA's refusal
// is a fault of the context's work; any other refusal is of the record
// alone, and nothing waits for the event.
func (d *gpu) record(h *helper, q int) (bool, error) {
	f := &d.sleepF
	d.beginCalls(f, &d.sleepBare, d.bare.Load())
	r := f.c2(d.t.cuEventRecord, h.ev, d.streams[q])
	d.endCalls(f)
	switch {
	case r == 0:
		return true, nil
	case r.sticky():
		d.noteFault(d.t.text(r))
		return false, &device.Fault{Why: d.faulted()}
	}
	return false, nil
}

// poll is Sleep where nothing blocks for it: it looks at the word in
// nanosleeps of sleepStep until deadline, and asks CUDA each queryEach
// whether a stream met an error.
func (d *gpu) poll(seen uint64, deadline time.Time) error {
	next := time.Now()
	for {
		if atomic.LoadUint64(d.word) != seen {
			return nil
		}
		now := time.Now()
		if !now.Before(next) {
			if err := d.query(); err != nil {
				return err
			}
			next = now.Add(queryEach)
		}
		if !now.Before(deadline) {
			return nil
		}
		// A nanosleep, not time.Sleep, which sleeps at least a
		// millisecond when the runtime has nothing else to run.
		d.nap.sleep(min(sleepStep, deadline.Sub(now)))
	}
}

// startHelpers starts a helper per stream, each with its event; where one
// cannot make its event, Sleep polls from then on.
func (d *gpu) startHelpers() {
	s := &d.sleeper
	s.started = true
	for q := range s.helpers {
		h := &helper{req: make(chan struct{}, 1), done: make(chan result, 1)}
		ready := make(chan result)
		go d.help(h, ready)
		if r := <-ready; r != 0 {
			s.failed = true
			s.stop()
			return
		}
		s.helpers[q] = h
	}
}

// help is a helper's goroutine: it makes its event, returns on ready, and
// synchronises on the event at each ask until req is closed, then destroys
// the event.
//
// The helper holds its thread (locked, with the context current where
// CUDA's calls need one) only for the length of a call: once
// cuEventSynchronize returns, it hands the answer over from a thread of
// the scheduler's, which then runs the supervisor it readied. A thread
// locked throughout has to wake another thread for the supervisor, a
// second wake-up after the GPU's interrupt; on the H200 that put 20 to
// 40 µs on the median wait for a 1 ms kernel.
func (d *gpu) help(h *helper, ready chan<- result) {
	t := d.t
	f := new(frame)
	prev := enterCtx(t, f, d.ctx)
	f.out[0] = 0
	r := f.c2(t.cuEventCreate, f.outp(0), eventBlockingSync|eventDisableTime)
	leaveCtx(t, f, d.ctx, prev)
	if r != 0 {
		ready <- r
		return
	}
	h.ev = uintptr(f.out[0])
	ready <- 0
	var b bareCall
	for range h.req {
		d.beginCalls(f, &b, d.bare.Load())
		r := f.c1(t.cuEventSynchronize, h.ev)
		d.endCalls(f)
		h.done <- r
	}
	prev = enterCtx(t, f, d.ctx)
	f.c1(t.cuEventDestroy, h.ev)
	leaveCtx(t, f, d.ctx, prev)
}

// stop ends the helpers once their synchronisation in flight returns.
func (s *sleeper) stop() {
	for q, h := range s.helpers {
		if h != nil {
			close(h.req)
			s.helpers[q] = nil
		}
	}
	s.failed = true
}
