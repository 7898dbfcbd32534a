package nvdev

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/latest"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Profile stamps. While a submission is timed, each channel its work
// enters releases a stamp after the value's waits (a semaphore release of
// the value with the GPU's timer, RELEASE_TIMESTAMP, which waits for the
// channel's earlier work), and the channel that releases the value
// releases one before that release. A value's stamps lie in its slot of
// the stamp ring, 48 bytes of Pinned memory for each of the 65,536 values
// the device's records hold: the start on COMPUTE, the start on COPY, the
// end, each a payload and a timer word. Submit marks the slot's payloads
// unwritten (the value's complement) before the channels see the words.
//
// The first timed submission's Room returns RoomGrow, and Grow makes the
// stamp ring, 3 MiB; it stays until Stop.
//
// Settle converts the stamps of timed values the word has reached, in
// value order, to the host's clock (device.Now): along the line through the
// measure of the GPU's timer taken at make and the latest one, once they lie
// a second apart, and at the timer's nominal nanosecond a tick before. It
// re-measures at most every 62.5 ms; a re-measure wider than 10 µs is
// dropped, and the first within 10 µs replaces a measure at make that was
// wider. A stamp that a reached value's work did not write, or a failed read
// of the timer, fails Settle with a *device.Fault that loses the device,
// and the device alone, but where the path reports the read's failure as
// a fault of the GPU. A
// Submit that would reuse the slot of a timed value not yet settled
// converts that value first (it is reached: at most 32,768 values are in
// flight), along the latest line; where nobody settles, the latest maxDone
// of the stamps so converted are kept.

const (
	stampBytes     = 48 // a value's slot: three stamps of 16 bytes
	stampEnd       = 2  // the end's stamp, after the starts of COMPUTE and COPY
	remeasureEvery = 62_500_000
	measureBound   = 10_000
	lineAfter      = 1_000_000_000
)

// maxDone bounds the stamps Submit converted that wait for Settle.
const maxDone = records

// stampRec is a timed value Settle has not converted yet.
type stampRec struct {
	v     uint64
	queue int   // the queue it ended on (endQueue)
	used  uint8 // the channels its work entered
}

// endQueue is the queue the timed value s ended on, whose last part's
// channel is ender: the last part's queue, which is not its channel where
// a copy of COPY:0 runs as the driver's kernel, or ender where s has no
// parts.
func endQueue(s *device.Submission, ender int) int {
	if n := len(s.Parts); n > 0 {
		return s.Parts[n-1].Queue
	}
	return ender
}

// profile is the device's stamps and its clock's measures.
type profile struct {
	mu    sync.Mutex
	mem   atomic.Pointer[nvidia.Memory] // the stamp ring, made by Grow
	pend  []stampRec                    // a ring of records entries
	head  uint64
	tail  uint64
	done  latest.Ring[device.Stamp] // converted by Submit, not yet settled, the latest maxDone
	first nvidia.Timer              // the measure at make, or the first narrow one
	late  nvidia.Timer              // the latest measure, if late.Host != 0
	at    int64                     // when Settle last measured
	bad   bool                      // Submit found badV's stamps unwritten
	badV  uint64
}

// stamps is the host's view of the 6 words of value v's slot.
func (p *profile) stamps(m *nvidia.Memory, v uint64) *[6]uint64 {
	return (*[6]uint64)(ptrAt(m.Host + uintptr(v%records)*stampBytes))
}

// slotGPU is the GPU address of stamp i of value v's slot.
func slotGPU(m *nvidia.Memory, v uint64, i int) uint64 {
	return m.Address + (v%records)*stampBytes + uint64(16*i)
}

// growStamps makes the stamp ring.
func (d *gpu) growStamps() error {
	if d.prof.mem.Load() != nil {
		return nil
	}
	m, err := d.p.Alloc(device.PinnedMemory, records*stampBytes)
	if err != nil {
		return shortOf(err, records*stampBytes)
	}
	d.prof.mu.Lock()
	if d.prof.pend == nil {
		d.prof.pend = make([]stampRec, records)
	}
	d.prof.mu.Unlock()
	d.prof.mem.Store(m)
	return nil
}

// stamp releases stamp i of the value's slot on channel c.
func (w *walk) stamp(c, i int) {
	if w.d.sub {
		if w.cur[c].prev != prevIdle {
			w.wfi(c)
		}
		if b := w.take(c, hw.ReleaseWords); b != nil {
			m := w.d.prof.mem.Load()
			w.done(c, hw.SubcontextReleaseStamp(b, w.d.gen, slotGPU(m, w.s.Value, i), w.s.Value), hw.ReleaseWords)
		}
	} else if b := w.take(c, hw.ReleaseWords); b != nil {
		m := w.d.prof.mem.Load()
		w.done(c, hw.ReleaseStamp(b, w.d.gen, slotGPU(m, w.s.Value, i), w.s.Value), hw.ReleaseWords)
	}
	w.cur[c].prev = prevIdle
}

// timed records a timed value at Submit, before the channels see its
// words: its slot's payloads read unwritten, and a Settle to come converts
// it. queue is the queue it ends on.
func (d *gpu) timed(v uint64, queue int, used uint8) {
	p := &d.prof
	m := p.mem.Load()
	st := p.stamps(m, v)
	p.mu.Lock()
	defer p.mu.Unlock()
	// A slot still held by a value not settled: that value is reached,
	// so convert it now.
	for p.tail != p.head && v-p.pend[p.tail%records].v >= records {
		r := p.pend[p.tail%records]
		if s, ok := p.convert(m, r); ok {
			p.done.Add(s, maxDone)
		} else if !p.bad {
			// Not written: the next Settle fails for it.
			p.bad, p.badV = true, r.v
		}
		p.tail++
	}
	for i := range 3 {
		atomic.StoreUint64(&st[2*i], ^v)
		atomic.StoreUint64(&st[2*i+1], 0)
	}
	p.pend[p.head%records] = stampRec{v: v, queue: queue, used: used}
	p.head++
}

// toHost converts a reading of the GPU's timer to the host's clock.
func (p *profile) toHost(t uint64) int64 {
	a := p.first
	dg := int64(t - a.GPU)
	if b := p.late; b.Host != 0 && b.Host-a.Host >= lineAfter && b.GPU != a.GPU {
		return a.Host + int64(float64(dg)*float64(b.Host-a.Host)/float64(int64(b.GPU-a.GPU)))
	}
	return a.Host + dg
}

// convert is the stamp of r, if its work wrote every stamp of it.
func (p *profile) convert(m *nvidia.Memory, r stampRec) (device.Stamp, bool) {
	st := p.stamps(m, r.v)
	s := device.Stamp{Value: r.v, Queue: r.queue}
	var start uint64
	found := false
	for c := range 2 {
		if r.used&(1<<c) == 0 {
			continue
		}
		if atomic.LoadUint64(&st[2*c]) != r.v {
			return s, false
		}
		if t := atomic.LoadUint64(&st[2*c+1]); !found || int64(t-start) < 0 {
			start, found = t, true
		}
	}
	if atomic.LoadUint64(&st[2*stampEnd]) != r.v {
		return s, false
	}
	end := atomic.LoadUint64(&st[2*stampEnd+1])
	if !found {
		start = end
	}
	s.Start, s.End = p.toHost(start), p.toHost(end)
	return s, true
}

// remeasure takes a new measure of the timer, at most every 62.5 ms.
func (d *gpu) remeasure() error {
	p := &d.prof
	now := device.Now()
	if p.at != 0 && now-p.at < remeasureEvery {
		return nil
	}
	t, err := d.p.ReadTimer()
	if err != nil {
		return err
	}
	p.at = now
	if t.Width > measureBound {
		return nil
	}
	if p.first.Width > measureBound {
		p.first = t
		return nil
	}
	p.late = t
	return nil
}

// Settle appends the stamps of the timed values the word has reached, on
// the host's clock, in value order. After Stop it appends only those a
// Submit converted before, and returns no error for the rest.
func (d *gpu) Settle(into []device.Stamp) ([]device.Stamp, error) {
	if f := d.fault.Load(); f != nil {
		return into, f
	}
	p := &d.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	into = p.done.Take(into)
	if p.bad {
		return into, d.keep(unwritten(p.badV))
	}
	if p.tail == p.head || d.stopped.Load() {
		// After Stop the stamp ring is given back, and the word holds
		// values whose work may not have run: the stamps not yet
		// converted are lost.
		return into, nil
	}
	if !d.stopped.Load() {
		if err := d.remeasure(); err != nil {
			return into, d.keep(timerFault(err))
		}
	}
	m := p.mem.Load()
	w := atomic.LoadUint64(d.word)
	for p.tail != p.head {
		r := p.pend[p.tail%records]
		if !device.AtLeast(w, r.v) {
			break
		}
		s, ok := p.convert(m, r)
		if !ok {
			return into, d.keep(unwritten(r.v))
		}
		into = append(into, s)
		p.tail++
	}
	return into, nil
}

// stampSlot is the stamp ring's host bytes of value v (tests).
func (d *gpu) stampSlot(v uint64) []byte {
	m := d.prof.mem.Load()
	return unsafe.Slice((*byte)(ptrAt(m.Host+uintptr(v%records)*stampBytes)), stampBytes)
}

// timerFault is the fault of Settle's failed read of the GPU's timer,
// err: the device's alone, where the read failed on the host's side; a
// fault the path reports (a GPU off the bus) is the GPU's, and stays so,
// so that it loses the device's fault domain and faults its group.
func timerFault(err error) *device.Fault {
	f := &device.Fault{Why: fmt.Sprintf("settle: reading the GPU's timer: %v", err), Alone: true}
	if pf, ok := device.AsFault(err); ok {
		f.Alone = pf.Alone
	}
	return f
}

// unwritten is the fault of a reached value whose stamps its work did not
// write: the device's alone, as the RM stopped no channel (a notifier's
// error would say so), so that it loses no other timeline of the group.
func unwritten(v uint64) *device.Fault {
	return &device.Fault{Why: fmt.Sprintf("settle: value %d is reached and its work did not write its stamps", v), Alone: true}
}
