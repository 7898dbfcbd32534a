package cudadev

import (
	"sync/atomic"

	"github.com/rig-go/rig/device"
)

// Signaled is the value in the device's word, read with acquire order.
func (d *gpu) Signaled() uint64 { return atomic.LoadUint64(d.word) }

// query asks CUDA whether a stream met a fault of the context's work, and
// returns it. Any other refusal is of the query alone, and tells nothing
// of the work.
func (d *gpu) query() error {
	t, f := d.t, &d.sleepF
	d.beginCalls(f, &d.sleepBare, d.bare.Load())
	var bad result
	for _, s := range d.streams {
		if r := f.c1(t.cuStreamQuery, s); r.sticky() {
			bad = r
			break
		}
	}
	d.endCalls(f)
	if bad == 0 {
		return nil
	}
	why := t.text(bad)
	d.noteFault(why)
	return &device.Fault{Why: d.faulted()}
}

// Stop stops the device without waiting for its work. If the work has
// ended (both streams idle, or a fault ended the context's work), it writes
// the last value into the word; otherwise it commits that value and keeps
// an event behind the work on each stream (the stream itself where CUDA
// makes or records no event), which the GPU's next open reads, and which
// a goroutine of its own reads until that work ends or a fault ends it
// (watchKept); where CUDA refuses the commit, they raise the word to the
// last value once the work ended. A fault of the context's work that the
// commit or the events meet ends the work as well. Either way it destroys
// the streams it does not keep and the other events, which CUDA frees
// once their work ends. Last, it unloads the modules of the images rig
// unloaded whose unload CUDA refused once the last graph that held them
// was destroyed (dropUnloaded), and returns CUDA's refusals of those
// unloads; it returns no other error of CUDA's.
func (d *gpu) Stop(string) error {
	d.stopMu.Lock()
	defer d.stopMu.Unlock()
	if d.stopped {
		return nil
	}
	d.stopped = true
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	ended := true
	var bad result
	for _, s := range d.streams {
		// A refusal of the query that is no fault of the context's work
		// tells nothing: the work may still run.
		switch r := f.c1(t.cuStreamQuery, s); {
		case r == 0:
		case r.sticky():
			bad = r
		default:
			ended = false
		}
	}
	var kept *keptWork
	if bad == 0 && !d.ctxFailed && d.faulted() == "" && !ended {
		kept, bad = d.keep(f)
	}
	if bad != 0 {
		d.noteFault(t.text(bad))
	}
	if kept == nil {
		atomicRaise(d.word, d.last)
	}
	d.sleeper.stop()
	for q, s := range d.streams {
		if kept == nil || kept.streams[q] == 0 {
			f.c1(t.cuStreamDestroy, s)
		}
		d.streams[q] = 0
	}
	f.c1(t.cuStreamDestroy, d.clockStream)
	d.clockStream = 0
	d.destroyEvents(f)
	g := d.info
	g.mu.Lock()
	if why := d.faulted(); why != "" && g.fault == "" {
		g.fault = why
	}
	if kept != nil {
		g.kept = append(g.kept, kept)
	}
	if g.open[d.timeline] == d {
		delete(g.open, d.timeline)
	}
	g.mu.Unlock()
	if kept != nil {
		go g.watchKept(t, kept)
	}
	return d.dropUnloaded()
}

// keep commits the last value behind the work that still runs, unless
// its write is enqueued or no stream follows all the work, and returns
// the work to keep: an event behind the work on each stream, or, where
// CUDA made or recorded none, the stream itself. Where a call meets a
// fault of the context's
// work, which then runs nothing more, it keeps nothing and returns the
// fault.
func (d *gpu) keep(f *frame) (*keptWork, result) {
	t := d.t
	// Where no stream follows all the work (gpu.split), a write of the
	// word would pass some of it: the kept work raises the word instead.
	if d.written != d.last && !d.split {
		switch r := f.c4(t.cuStreamWriteValue64, d.streams[d.end], uintptr(d.wordDev), uintptr(d.last), 0); {
		case r == 0:
			d.written = d.last
		case r.sticky():
			return nil, r
		}
	}
	k := &keptWork{timeline: d.timeline, word: d.word, last: d.last, raise: d.written != d.last}
	for q, s := range d.streams {
		f.out[0] = 0
		r := f.c2(t.cuEventCreate, f.outp(0), eventDisableTime)
		if r == 0 {
			ev := uintptr(f.out[0])
			// An event never recorded reads as complete.
			if r = f.c2(t.cuEventRecord, ev, s); r == 0 {
				k.events[q] = ev
			} else {
				f.c1(t.cuEventDestroy, ev)
			}
		}
		if r.sticky() {
			for _, ev := range k.events {
				if ev != 0 {
					f.c1(t.cuEventDestroy, ev)
				}
			}
			return nil, r
		}
		if k.events[q] == 0 {
			// No event tells when the stream's work ends: the
			// stream itself is kept, and asked.
			k.streams[q] = s
		}
	}
	return k, 0
}
