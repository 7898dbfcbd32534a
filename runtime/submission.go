package rig

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/rig-go/rig/device"
)

// Submission is a reusable template of work for one device: its parts and
// how they use the buffers a run is given. Take hands out a Run to fill in
// and submit; runs are pooled, so steady-state submission allocates nothing.
// A Submission is safe for use by any goroutine.
type Submission struct {
	d      *Device
	parts  []Part
	nbuf   int
	access []Access      // per buffer index, every part's use together
	imgs   []*imageState // the images of its launches, each once
	pool   sync.Pool
}

// NewSubmission makes a template of parts for device d. It checks what can
// be checked without the device: refs within the launches' parameters,
// buffer indices, functions of d. What only the driver knows (queues,
// sizes, limits) it refuses at Submit, with a *RefusalError.
func NewSubmission(d *Device, parts ...Part) (*Submission, error) {
	s := &Submission{d: d, parts: append([]Part(nil), parts...)}
	for i, p := range s.parts {
		switch p.kind {
		case device.Launch:
			if p.fn == nil {
				return nil, fmt.Errorf("rig: part %d: a launch of no function", i)
			}
			if p.fn.img.d != d {
				return nil, fmt.Errorf("rig: part %d: %q is a function of device %s, not %s", i, p.fn.Name(), p.fn.img.d.name, d.name)
			}
			if p.params < 0 {
				return nil, fmt.Errorf("rig: part %d: %d parameter bytes", i, p.params)
			}
		case device.CopyRows, device.Fill, device.Words:
		default:
			return nil, fmt.Errorf("rig: part %d: not a part (make parts with Launch, Copy, FillBytes, Fill or Words)", i)
		}
		if p.after < 0 || p.after > len(parts) {
			return nil, fmt.Errorf("rig: part %d runs after part %d, which the submission lacks", i, p.after-1)
		}
		for _, r := range p.refs {
			if r.Buf < 0 {
				return nil, fmt.Errorf("rig: part %d: a ref to buffer %d", i, r.Buf)
			}
			if r.Access == 0 || r.Access > ReadsWrites {
				return nil, fmt.Errorf("rig: part %d: a ref to buffer %d of no access", i, r.Buf)
			}
			if r.At >= 0 && (p.kind != device.Launch || r.At+8 > p.params) {
				return nil, fmt.Errorf("rig: part %d: the address of buffer %d at bytes %d to %d lies outside the %d bytes of parameters", i, r.Buf, r.At, r.At+8, p.params)
			}
			if r.At < -1 {
				return nil, fmt.Errorf("rig: part %d: a ref at byte %d", i, r.At)
			}
			s.nbuf = max(s.nbuf, r.Buf+1)
		}
	}
	s.access = make([]Access, s.nbuf)
	for _, p := range s.parts {
		for _, r := range p.refs {
			s.access[r.Buf] |= r.Access
		}
		if p.fn != nil && !slices.Contains(s.imgs, p.fn.img) {
			s.imgs = append(s.imgs, p.fn.img)
		}
	}
	return s, nil
}

// Device is the submission's device.
func (s *Submission) Device() *Device { return s.d }

// Run is one use of a submission: its groups, threads, shared memory and
// parameters, then Submit. A run belongs to the goroutine that took it
// until Submit or Release hands it back.
type Run struct {
	s      *Submission
	sub    device.Submission
	params [][]byte
	bufs   []*bufState // the distinct buffers, in id order
	acc    []Access    // their uses, beside bufs
	waits  []device.Wait
	// owed are the points of other devices that the waits name, which
	// their devices must commit for the waits to end.
	owed []Point
	err  error
}

// Take hands out a run of the submission, its groups and threads 1 along
// each axis, no dynamic shared memory, and its parameters zero.
func (s *Submission) Take() *Run {
	r, _ := s.pool.Get().(*Run)
	if r == nil {
		r = s.newRun()
	}
	r.err = nil
	for i := range r.sub.Parts {
		p := &r.sub.Parts[i]
		p.Groups, p.Threads, p.Shared = [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0
		clear(r.params[i])
	}
	return r
}

func (s *Submission) newRun() *Run {
	r := &Run{s: s, sub: device.Submission{Parts: make([]device.Part, len(s.parts))}, params: make([][]byte, len(s.parts))}
	for i, p := range s.parts {
		dp := &r.sub.Parts[i]
		dp.Kind, dp.Queue, dp.After = p.kind, p.queue, p.after
		switch p.kind {
		case device.Launch:
			dp.Entry = p.fn.entry
			r.params[i] = make([]byte, p.params)
			dp.Params = r.params[i]
		case device.CopyRows:
			dp.RowBytes, dp.Rows, dp.SrcPitch, dp.DstPitch = p.rowBytes, p.rows, p.srcPitch, p.dstPitch
			dp.Filling, dp.Byte = p.filling, p.fillByte
		case device.Fill:
			dp.FillFn, dp.FillArg = p.fillFn, p.fillArg
		case device.Words:
			dp.Words = p.words
		}
	}
	r.bufs = make([]*bufState, 0, s.nbuf)
	r.acc = make([]Access, 0, s.nbuf)
	return r
}

// Groups sets the groups of launch part i along each axis.
func (r *Run) Groups(i, x, y, z int) { r.dims(i, &r.sub.Parts[i].Groups, "groups", x, y, z) }

// Threads sets the threads per group of launch part i along each axis.
func (r *Run) Threads(i, x, y, z int) { r.dims(i, &r.sub.Parts[i].Threads, "threads", x, y, z) }

func (r *Run) dims(i int, to *[3]uint32, what string, x, y, z int) {
	for a, n := range [3]int{x, y, z} {
		if n < 0 || n > 1<<32-1 {
			r.err = fmt.Errorf("rig: part %d: %d %s along axis %d", i, n, what, a)
			return
		}
	}
	*to = [3]uint32{uint32(x), uint32(y), uint32(z)}
}

// Shared sets the dynamic shared memory of each group of launch part i.
func (r *Run) Shared(i, bytes int) {
	if bytes < 0 || bytes > 1<<32-1 {
		r.err = fmt.Errorf("rig: part %d: %d bytes of dynamic shared memory", i, bytes)
		return
	}
	r.sub.Parts[i].Shared = uint32(bytes)
}

// Params is the parameter bytes of launch part i, to write before Submit.
// The refs' addresses are written over them at Submit.
func (r *Run) Params(i int) []byte { return r.params[i] }

// Release hands the run back without submitting it.
func (r *Run) Release() { r.s.pool.Put(r) }

// Submit submits the run's work with its buffers (refs index them), and
// answers the point its completion reaches. It computes the hazards of the
// buffers: the work waits for the last write of each buffer it reads, and
// for the last write and the reads since of each buffer it writes; a wait
// on another device's point runs on the device where its facts allow, and
// on the host before the submission otherwise. While the device's queues
// are full it blocks until the device progresses or ctx ends. The run goes
// back to its submission's pool, whatever the answer.
func (r *Run) Submit(ctx context.Context, buffers ...*Buffer) (Point, error) {
	defer r.s.pool.Put(r)
	if r.err != nil {
		return Point{}, r.err
	}
	s := r.s
	d := s.d
	if len(buffers) < s.nbuf {
		return Point{}, fmt.Errorf("rig: the submission uses %d buffers, and %d were given", s.nbuf, len(buffers))
	}
	if err := r.bind(buffers); err != nil {
		return Point{}, err
	}
	grows := 0
	for {
		if err := ctx.Err(); err != nil {
			return Point{}, err
		}
		d.mu.Lock()
		if err := d.usable(); err != nil {
			d.mu.Unlock()
			return Point{}, err
		}
		r.lockBuffers()
		hostWait, err := r.hazards(d)
		if err == nil && hostWait.d == nil {
			// A device-side wait ends only once the other device writes
			// its word: where that device commits lazily, it commits the
			// point before this submission is published, so that no work
			// it runs later can wait on this submission ahead of the
			// write. The commit takes the other device's submit lock, so
			// it runs with none held, and the submission starts over.
			if o := r.uncommitted(); o.d != nil {
				r.unlockBuffers()
				d.mu.Unlock()
				if err := o.d.commit(o.v); err != nil {
					return Point{}, err
				}
				continue
			}
		}
		if err != nil || hostWait.d != nil {
			r.unlockBuffers()
			d.mu.Unlock()
			if err != nil {
				return Point{}, err
			}
			if err := hostWait.Wait(ctx); err != nil {
				return Point{}, err
			}
			continue
		}
		v := d.last.Load() + 1
		r.sub.Value = v
		r.sub.Waits = r.waits
		r.sub.Timed = d.timed.Load()
		room := d.drv.Room(&r.sub)
		switch room.Kind {
		case device.RoomOK:
			r.publish(d, v)
			r.unlockBuffers()
			a := d.drv.Submit(&r.sub)
			d.last.Store(v)
			if len(r.owed) > 0 {
				d.owe(r.owed, v)
			}
			if r.sub.Timed {
				d.observe(&r.sub)
			}
			var lost error
			switch a.Kind {
			case device.Committed:
				d.committed.Store(v)
			case device.Failed:
				lost = d.lose(a.Reason, &device.Fault{Why: a.Reason})
			}
			d.mu.Unlock()
			d.sup.submitted()
			return Point{d: d, v: v}, lost
		case device.RoomLater:
			r.unlockBuffers()
			d.mu.Unlock()
			if err := d.progress(ctx); err != nil {
				return Point{}, err
			}
		case device.RoomGrow:
			r.unlockBuffers()
			d.mu.Unlock()
			if err := d.grow(grows); err != nil {
				return Point{}, err
			}
			grows++
		default:
			r.unlockBuffers()
			d.mu.Unlock()
			kind := device.PartKind(0)
			if room.Part >= 0 && room.Part < len(r.sub.Parts) {
				kind = r.sub.Parts[room.Part].Kind
			}
			return Point{}, &RefusalError{Device: d.name, Part: room.Part, Kind: kind, Reason: room.Reason}
		}
	}
}

// bind resolves the run's buffers for its device: their regions, the
// addresses the launches' parameters hold, and the distinct buffers in id
// order with their uses.
func (r *Run) bind(buffers []*Buffer) error {
	s, d := r.s, r.s.d
	r.bufs, r.acc = r.bufs[:0], r.acc[:0]
	for i, a := range s.access {
		b := buffers[i]
		if b == nil {
			return fmt.Errorf("rig: buffer %d is nil", i)
		}
		st := b.s
		j := 0
		for j < len(r.bufs) && r.bufs[j].id < st.id {
			j++
		}
		if j < len(r.bufs) && r.bufs[j] == st {
			r.acc[j] |= a
			continue
		}
		r.bufs = append(r.bufs, nil)
		r.acc = append(r.acc, 0)
		copy(r.bufs[j+1:], r.bufs[j:])
		copy(r.acc[j+1:], r.acc[j:])
		r.bufs[j], r.acc[j] = st, a
	}
	for i := range s.parts {
		p := &s.parts[i]
		dp := &r.sub.Parts[i]
		for _, ref := range p.refs {
			if ref.At < 0 {
				continue
			}
			_, loc, err := buffers[ref.Buf].s.on(d)
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(r.params[i][ref.At:], loc.Address+buffers[ref.Buf].s.off+ref.Offset)
		}
		if p.kind == device.CopyRows {
			if !p.filling {
				st := buffers[p.src].s
				reg, _, err := st.on(d)
				if err != nil {
					return err
				}
				dp.Src, dp.SrcOffset = reg, st.off+p.srcOff
			}
			st := buffers[p.dst].s
			reg, _, err := st.on(d)
			if err != nil {
				return err
			}
			dp.Dst, dp.DstOffset = reg, st.off+p.dstOff
		}
	}
	return nil
}

func (r *Run) lockBuffers() {
	for _, b := range r.bufs {
		b.mu.Lock()
	}
}

func (r *Run) unlockBuffers() {
	for i := len(r.bufs) - 1; i >= 0; i-- {
		r.bufs[i].mu.Unlock()
	}
}

// hazards fills r.waits with the device-side waits the run's buffers need
// on d, or answers a point to wait for on the host first. The buffers'
// locks and d's submit lock are held.
func (r *Run) hazards(d *Device) (Point, error) {
	r.waits = r.waits[:0]
	r.owed = r.owed[:0]
	for i, b := range r.bufs {
		if b.freed {
			return Point{}, fmt.Errorf("rig: a buffer of %d bytes: %w", b.n, ErrFreed)
		}
		if p := b.lastWrite; p.d != nil && p.d != d {
			if hw := r.waitFor(d, p); hw.d != nil {
				return hw, nil
			}
		}
		if r.acc[i]&Writes != 0 {
			for _, p := range b.reads {
				if p.d != d {
					if hw := r.waitFor(d, p); hw.d != nil {
						return hw, nil
					}
				}
			}
		}
	}
	return Point{}, nil
}

// waitFor adds a device-side wait on p for d, or answers p where d's work
// cannot wait on p's word.
func (r *Run) waitFor(d *Device, p Point) Point {
	if p.never() {
		// The wait on the host returns the error.
		return p
	}
	if p.passed() {
		return Point{}
	}
	o := p.d
	kind := device.WaitStores
	if o.facts.Completion == device.Host {
		kind = device.WaitHosts
	}
	if o.word == nil || !d.facts.Waits.Has(kind) {
		return p
	}
	for i := range r.waits {
		if r.waits[i].Word == o.word {
			if device.AtLeast(p.v, r.waits[i].Value) {
				r.waits[i].Value = p.v
				r.owed[i] = p
			}
			return Point{}
		}
	}
	r.waits = append(r.waits, device.Wait{Word: o.word, Value: p.v})
	r.owed = append(r.owed, p)
	return Point{}
}

// uncommitted answers the first point the run's device-side waits name
// that its device has not committed, or the zero Point.
func (r *Run) uncommitted() Point {
	for _, p := range r.owed {
		if !device.AtLeast(p.d.committed.Load(), p.v) {
			return p
		}
	}
	return Point{}
}

// publish records value v as the last use of the run's buffers and images.
func (r *Run) publish(d *Device, v uint64) {
	p := Point{d: d, v: v}
	for i, b := range r.bufs {
		if r.acc[i]&Writes != 0 {
			b.lastWrite = p
			b.reads = b.reads[:0]
			continue
		}
		found := false
		for j := range b.reads {
			if b.reads[j].d == d {
				b.reads[j] = p
				found = true
				break
			}
		}
		if !found {
			b.reads = append(b.reads, p)
		}
	}
	for _, img := range r.s.imgs {
		img.lastUse.Store(v)
		if !img.used.Load() {
			img.used.Store(true)
		}
	}
}

// progress blocks until the device's word moves past what it reads now, or
// ctx ends: the back-pressure of a Room that answered later.
func (d *Device) progress(ctx context.Context) error {
	cur := d.read()
	if device.AtLeast(cur, d.last.Load()) {
		// Nothing in flight: the driver's queues free on their own.
		return ctx.Err()
	}
	return Point{d: d, v: cur + 1}.Wait(ctx)
}

// grow asks the driver to grow its queues, running a round of reclamation
// after a Short; ask is the number of asks before this one.
func (d *Device) grow(ask int) error {
	if err := d.begin(); err != nil {
		return err
	}
	err := d.drv.Grow()
	d.end()
	if err == nil {
		return nil
	}
	if sh, ok := err.(*device.Short); ok {
		if ask >= 4 {
			return &OutOfMemoryError{Device: d.name, What: "the growth of its queues", Lacking: sh.N}
		}
		d.reclaimRound(ask)
		return nil
	}
	return fmt.Errorf("rig: growing the queues of %s: %w", d.name, d.fault(err))
}
