package cudadev

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/latest"
)

// Profile stamps: while rig takes a profile (Submission.Timed), Submit
// records a timing event on each stream a value's work enters, after the
// value's waits, and one after its work on the stream it ends on, into one
// of 1,024 stamps whose events it makes at the stamp's first use. Settle,
// or a timed Submit that needs the stamp of the value 1,024 stamps back,
// converts the events to the host's clock (device.Now) against a reference
// event measured against that clock.

// stampCount is the number of stamps, reused in turn.
const stampCount = 1024

// remeasure is the age after which a timed submit measures the clock again.
const remeasure = 8 * time.Second

// stamp is one timed value's events: a start on each stream, and the end.
type stamp struct {
	value   uint64
	started int // the streams whose start event is recorded
	end     int // the stream the value ended on
	ev      [3]uintptr
}

// profile is a device's stamps and clock measure. mu guards it; the hot
// path takes it only in timed submits.
type profile struct {
	mu         sync.Mutex
	ring       [stampCount]stamp
	head, tail uint64                    // the stamps of values not yet settled: [tail, head)
	done       latest.Ring[device.Stamp] // converted by Submit, not yet settled, the latest stampCount
	f          frame                     // for Settle and the measure

	clock   [3]uintptr // the events a measure records
	ref     uintptr    // the reference event: one of clock
	refHost int64      // the host's time (device.Now) at ref
	at      time.Time  // when the clock was measured
	trip    int64      // the closest round trip of the last measure, in ns
}

// measure measures the GPU's clock against the host's: it records an event
// on the clock stream between two readings of the host's clock, asking
// CUDA until the event has completed, eight times, and keeps the closest;
// while that is over 10 µs it tries again, up to sixteen times. It records
// neither the closest so far nor the reference event, so that a measure
// that fails leaves the reference as it was. p.mu is held, or the device
// is opening.
func (d *gpu) measure(f *frame) error {
	t, p := d.t, &d.prof
	for i := range p.clock {
		if p.clock[i] == 0 {
			f.out[0] = 0
			if r := f.c2(t.cuEventCreate, f.outp(0), 0); r != 0 {
				return fmt.Errorf("cudadev: making a timing event on GPU %d: %w", d.index, t.err(r))
			}
			p.clock[i] = uintptr(f.out[0])
		}
	}
	best, b := int64(math.MaxInt64), -1
	var host int64
	for try := 0; try < 16; try++ {
		for i := 0; i < 8; i++ {
			e := 0
			for e == b || p.clock[e] == p.ref {
				e++
			}
			t0 := device.Now()
			r := f.c2(t.cuEventRecord, p.clock[e], d.clockStream)
			if r == 0 {
				for {
					if r = f.c1(t.cuEventQuery, p.clock[e]); r != errNotReady {
						break
					}
				}
			}
			t1 := device.Now()
			if r != 0 {
				return fmt.Errorf("cudadev: measuring GPU %d's clock: %w", d.index, t.err(r))
			}
			if t1-t0 < best {
				best, b, host = t1-t0, e, t0+(t1-t0)/2
			}
		}
		if best <= 10_000 {
			break
		}
	}
	p.ref, p.refHost, p.at, p.trip = p.clock[b], host, time.Now(), best
	return nil
}

// stampStart takes the next stamp for a timed value and records its start
// on stream q. A stamp whose value is not settled is converted first,
// waiting for its end.
func (d *gpu) stampStart(f *frame, q int) (*stamp, result) {
	t, p := d.t, &d.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.at) > remeasure {
		if err := d.measure(f); err != nil {
			// A fault of the context's work ends the device's use. A
			// refusal of a call alone leaves the reference of the last
			// measure, which the device's open made, and the stamps
			// convert against it, off by the clocks' drift since; the
			// next measure comes remeasure later.
			var e *Error
			if !errors.As(err, &e) || result(e.Code).sticky() {
				r := errInvalidValue
				if e != nil {
					r = result(e.Code)
				}
				return nil, r
			}
			p.at = time.Now()
		}
	}
	if p.head-p.tail == stampCount {
		old := &p.ring[p.tail%stampCount]
		r := f.c1(t.cuEventSynchronize, old.ev[2])
		var s device.Stamp
		if r == 0 {
			s, r = d.convert(f, old)
		}
		if r.sticky() {
			return nil, r
		}
		// A refusal of a call for the old stamp alone drops the stamp.
		if r == 0 {
			// Where nobody settles, the latest stampCount are kept.
			p.done.Add(s, stampCount)
		}
		p.tail++
	}
	st := &p.ring[p.head%stampCount]
	for i := range st.ev {
		if st.ev[i] == 0 {
			f.out[6] = 0
			if r := f.c2(t.cuEventCreate, f.outp(6), 0); r != 0 {
				return nil, r
			}
			st.ev[i] = uintptr(f.out[6])
		}
	}
	st.started = 0
	return st, d.stampOn(f, st, q)
}

// stampOn records st's start on stream q.
func (d *gpu) stampOn(f *frame, st *stamp, q int) result {
	st.started |= 1 << q
	return f.c2(d.t.cuEventRecord, st.ev[q], d.streams[q])
}

// stampEnd records st's end on stream z and publishes it for Settle.
func (d *gpu) stampEnd(f *frame, st *stamp, v uint64, z int) result {
	if r := f.c2(d.t.cuEventRecord, st.ev[2], d.streams[z]); r != 0 {
		return r
	}
	p := &d.prof
	p.mu.Lock()
	st.value, st.end = v, z
	p.head++
	p.mu.Unlock()
	return 0
}

// convert converts st's events to the host's clock. p.mu is held.
func (d *gpu) convert(f *frame, st *stamp) (device.Stamp, result) {
	p := &d.prof
	out := device.Stamp{Value: st.value, Queue: st.end, Start: math.MaxInt64}
	for q := 0; q < 2; q++ {
		if st.started&(1<<q) == 0 {
			continue
		}
		ns, r := d.since(f, st.ev[q])
		if r != 0 {
			return out, r
		}
		out.Start = min(out.Start, p.refHost+ns)
	}
	ns, r := d.since(f, st.ev[2])
	if r != 0 {
		return out, r
	}
	out.End = p.refHost + ns
	if out.Start == math.MaxInt64 {
		out.Start = out.End
	}
	return out, 0
}

// since is the time from the reference event to ev, in nanoseconds.
func (d *gpu) since(f *frame, ev uintptr) (int64, result) {
	f.out[7] = 0
	if r := f.c3(d.t.cuEventElapsedTime, f.outp(7), d.prof.ref, ev); r != 0 {
		return 0, r
	}
	ms := math.Float32frombits(uint32(f.out[7]))
	return int64(float64(ms) * 1e6), 0
}

// Settle appends the stamps of timed values whose work completed, on the
// host's clock, in value order. A conversion that meets a fault of the
// context's work is a *device.Fault; one that CUDA refuses for the stamp
// alone drops the stamp and returns an error that is no fault.
func (d *gpu) Settle(into []device.Stamp) ([]device.Stamp, error) {
	p := &d.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	into = p.done.Take(into)
	if p.tail == p.head {
		return into, nil
	}
	t, f := d.t, &p.f
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	for p.tail != p.head {
		st := &p.ring[p.tail%stampCount]
		r := f.c1(t.cuEventQuery, st.ev[2])
		if r == errNotReady {
			break
		}
		if r == 0 {
			var s device.Stamp
			if s, r = d.convert(f, st); r == 0 {
				into = append(into, s)
				p.tail++
				continue
			}
		}
		why := "converting a profile stamp: " + t.text(r)
		if r.sticky() {
			d.noteFault(t.text(r))
			return into, &device.Fault{Why: why}
		}
		// CUDA refused a call for this stamp alone, not the context's
		// work: the stamp is dropped, and the device keeps running.
		p.tail++
		return into, fmt.Errorf("cudadev: settle: the stamp of value %d is lost: %s", st.value, why)
	}
	return into, nil
}

// destroyEvents destroys the device's events but those Stop keeps.
func (d *gpu) destroyEvents(f *frame) {
	t := d.t
	destroy := func(ev *uintptr) {
		if *ev != 0 {
			f.c1(t.cuEventDestroy, *ev)
			*ev = 0
		}
	}
	for i := range d.joins {
		destroy(&d.joins[i])
	}
	for i := range d.afterEv {
		destroy(&d.afterEv[i])
	}
	p := &d.prof
	p.mu.Lock()
	for i := range p.ring {
		for j := range p.ring[i].ev {
			destroy(&p.ring[i].ev[j])
		}
	}
	for i := range p.clock {
		destroy(&p.clock[i])
	}
	p.tail = p.head
	p.mu.Unlock()
}
