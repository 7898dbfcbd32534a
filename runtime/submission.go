package rig

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/reclaim"
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
	cross  bool          // its parts lie on more than one queue
	// spare keeps one run across garbage collections, which empty pool:
	// a goroutine that takes one run at a time from a submission of its
	// own takes it back from spare, with no allocation however often the
	// collector runs (runSpare).
	spare atomic.Pointer[Run]
	pool  sync.Pool
}

// runSpare: a sync.Pool gives its objects up at every other garbage
// collection and allocates its own structures again at the next Put.
// Where each of 10,000 goroutines submitted through a Submission of its
// own on the host driver (rigbench -c 10000, 6 s), that made 0.07
// allocations a submission, 0.03 of them the goroutines' setup and most
// of the rest runs and the pools' own, and the collections this garbage
// brought on scanned every goroutine's stack; with spare, 0.03, and 545k
// submissions a second against 504k (TestRunsSurviveCollections).

// take returns a run of the submission's, from spare, the pool, or new.
func (s *Submission) take() *Run {
	if s.spare.Load() != nil {
		if r := s.spare.Swap(nil); r != nil {
			return r
		}
	}
	if r, _ := s.pool.Get().(*Run); r != nil {
		return r
	}
	return s.newRun()
}

// give keeps r for a later take. Two gives at once may both find spare
// empty: the run one of them stores over is left to the collector, which
// costs an allocation later and nothing else, since take owns what its
// swap returns.
func (s *Submission) give(r *Run) {
	if s.spare.Load() == nil {
		s.spare.Store(r)
		return
	}
	s.pool.Put(r)
}

// NewSubmission makes a template of parts for device d. It checks what can
// be checked without the device: refs within the launches' parameters,
// ref offsets within 2^64 (Ref.Plus), buffer indices below MaxBuffers,
// parameter bytes within the function's and MaxParams, copies whose rows
// end within 2^64 bytes, functions of d; its errors match ErrInvalid.
// What only the driver knows (queues, sizes, limits) and what depends on
// the buffers of a run (a copy past a buffer's Len) it refuses at Submit,
// with a *RefusalError. It keeps a copy of each
// part's refs: changing the slice of refs passed to Launch, Kernel, Fill or
// Words afterwards does not change the submission.
//
// rig orders the parts of a submission by their refs with one After per
// part (device.Part.After), which is exact for two queues: NewSubmission
// refuses a device whose driver declares more.
func NewSubmission(d *Device, parts ...Part) (*Submission, error) {
	if err := d.made("a submission"); err != nil {
		return nil, err
	}
	if n := len(d.facts.Queues); n > 2 {
		return nil, fmt.Errorf("rig: a submission for %s, whose driver declares %d queues: rig orders the parts of a submission across two queues at most: %w", d.name, n, ErrInvalid)
	}
	s := &Submission{d: d, parts: append([]Part(nil), parts...)}
	for i := range s.parts {
		p := &s.parts[i]
		// The refs are checked here and used at each Submit: the
		// submission keeps a copy of its own, which the caller's later
		// changes to the slice it passed do not reach.
		p.refs = slices.Clone(p.refs)
		if err := p.check(i, d, len(parts)); err != nil {
			return nil, fmt.Errorf("rig: part %d: %s: %w", i, err, ErrInvalid)
		}
		for _, r := range p.refs {
			s.nbuf = max(s.nbuf, r.Buf+1)
		}
		if p.queue != s.parts[0].queue {
			s.cross = true
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

// check is what is wrong with part i of a submission of n parts for d, or
// nil; it sets the ends of a copy's rows.
func (p *Part) check(i int, d *Device, n int) error {
	switch p.kind {
	case device.Launch:
		if p.fn == nil {
			return errors.New("a launch of no function")
		}
		if p.fn.img == nil || p.fn.entry == nil {
			return errors.New("a launch of a zero Function (Image.Resolve makes functions)")
		}
		if p.fn.img.d != d {
			return fmt.Errorf("%q is a function of device %s, not %s", p.fn.Name(), p.fn.img.d.name, d.name)
		}
		if err := p.resolveArgs(); err != nil {
			return err
		}
		if p.params < 0 || p.params > MaxParams {
			return fmt.Errorf("%d parameter bytes, outside 0 to %d", p.params, MaxParams)
		}
		if k := p.fn.entry.Params; k > 0 && p.params > k {
			return fmt.Errorf("%d parameter bytes, and %q reads %d", p.params, p.fn.Name(), k)
		}
	case device.CopyRows:
		if p.fill32 {
			if p.fillCount > math.MaxUint64/4 {
				return fmt.Errorf("a fill of %d four-byte words: past 2^64 bytes", p.fillCount)
			}
			if p.dstOff%4 != 0 {
				return fmt.Errorf("a fill of four-byte words from byte %d, not a multiple of 4", p.dstOff)
			}
		}
		var ok bool
		if p.dstEnd, ok = rowsEnd(p.dstOff, p.rows, p.dstPitch, p.rowBytes); !ok {
			return fmt.Errorf("a copy of %d rows of %d bytes, %d bytes apart, from byte %d of its destination: past 2^64 bytes", p.rows, p.rowBytes, p.dstPitch, p.dstOff)
		}
		if !p.filling {
			if p.srcEnd, ok = rowsEnd(p.srcOff, p.rows, p.srcPitch, p.rowBytes); !ok {
				return fmt.Errorf("a copy of %d rows of %d bytes, %d bytes apart, from byte %d of its source: past 2^64 bytes", p.rows, p.rowBytes, p.srcPitch, p.srcOff)
			}
		}
	case device.Fill, device.Words:
	default:
		return errors.New("not a part (make parts with Launch, Copy, FillBytes, FillRows, FillUint32, Fill or Words)")
	}
	if p.afterSet && (p.after < 1 || p.after > n) {
		return fmt.Errorf("it runs after part %d, which the submission lacks", p.after-1)
	}
	if p.afterSet && p.after > i {
		return fmt.Errorf("it runs after part %d, which is not before it", p.after-1)
	}
	for _, r := range p.refs {
		if r.Buf < 0 || r.Buf >= MaxBuffers {
			return fmt.Errorf("a ref to buffer %d, outside 0 to %d", r.Buf, MaxBuffers-1)
		}
		if r.past {
			return fmt.Errorf("a ref to buffer %d whose offsets add past 2^64 bytes", r.Buf)
		}
		if r.Access == 0 || r.Access > ReadsWrites {
			return fmt.Errorf("a ref to buffer %d of no access", r.Buf)
		}
		if r.At < -1 {
			return fmt.Errorf("a ref to buffer %d at byte %d", r.Buf, r.At)
		}
		if r.At >= 0 && (p.kind != device.Launch || r.At > p.params-8) {
			return fmt.Errorf("the address of buffer %d at byte %d lies outside the %d bytes of parameters", r.Buf, r.At, p.params)
		}
	}
	return nil
}

// rowsEnd is one past the last byte of rows rows of n bytes, pitch bytes
// apart, from byte off, and whether it lies within 2^64; off where the
// rows hold no byte, so that an empty copy's offset is still checked
// against its buffer's length, as Upload's is.
func rowsEnd(off, rows, pitch, n uint64) (uint64, bool) {
	if rows == 0 || n == 0 {
		return off, true
	}
	hi, lo := bits.Mul64(rows-1, pitch)
	end, c1 := bits.Add64(lo, n, 0)
	end, c2 := bits.Add64(end, off, 0)
	return end, hi == 0 && c1 == 0 && c2 == 0
}

// Device is the submission's device; nil for a nil or zero Submission
// (what NewSubmission returns beside an error).
func (s *Submission) Device() *Device {
	if s == nil {
		return nil
	}
	return s.d
}

// Run is one use of a submission: its groups, threads, shared memory and
// parameters, then Submit. A run belongs to the goroutine that took it
// until Submit or Release hands it back; the run must not be used after.
// A second Submit of a run back in its pool returns an error matching
// ErrInvalid and a second Release does nothing, but once another Take has
// handed the run out again, rig cannot tell the two holders apart. Of the
// errors its setters meet (an index out of range, a count or a parameter
// that does not fit), the run keeps the first, which Submit returns.
type Run struct {
	s      *Submission
	sub    device.Submission
	params [][]byte
	bufs   []*bufState // the distinct buffers, in id order
	acc    []Access    // their uses, beside bufs
	// slot is, per buffer index, the index of its buffer in bufs; last
	// is, per distinct buffer and queue, the last part that writes it and
	// the last part that uses it (-1 for none), while order walks.
	slot  []int32
	last  [][2][2]int32
	waits []device.Wait
	// owed are the points of other devices that the waits name, which
	// their devices must commit for the waits to end.
	owed []Point
	err  error
	// held is true from Take to Submit or Release. A run belongs to one
	// goroutine: a plain bool catches a second Submit or Release without
	// an atomic operation on the hot path.
	held bool
	// afters are the points After added, nafter of them.
	afters [MaxAfter]Point
	nafter int
	// comb is the run's place in its device's combining queue.
	comb combNode
}

// Take hands out a run of the submission, its groups and threads 1 along
// each axis, no dynamic shared memory, and its parameters zero. A nil or
// zero Submission, which NewSubmission did not make, hands out a run whose
// Submit returns an error matching ErrInvalid.
func (s *Submission) Take() *Run {
	if s == nil || s.d == nil {
		return &Run{s: s, held: true, err: errZeroSubmission}
	}
	r := s.take()
	r.err = nil
	for i := range r.sub.Parts {
		p := &r.sub.Parts[i]
		p.Groups, p.Threads, p.Shared = [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0
		clear(r.params[i])
	}
	r.held = true
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
			dp.Filling, dp.Byte, dp.Fill32, dp.Value = p.filling, p.fillByte, p.fill32, p.fillValue
		case device.Fill:
			dp.FillFn, dp.FillArg = p.fillFn, p.fillArg
		case device.Words:
			dp.Words = p.words
		}
	}
	r.bufs = make([]*bufState, 0, s.nbuf)
	r.acc = make([]Access, 0, s.nbuf)
	if s.cross {
		r.slot = make([]int32, s.nbuf)
		r.last = make([][2][2]int32, s.nbuf)
	}
	return r
}

// part is part i's device part, or nil after recording the error of an
// index out of range for Submit.
func (r *Run) part(i int, what string) *device.Part {
	if i < 0 || i >= len(r.sub.Parts) {
		r.fail(fmt.Errorf("rig: %s of part %d of a submission of %d parts: %w", what, i, len(r.sub.Parts), ErrInvalid))
		return nil
	}
	return &r.sub.Parts[i]
}

// launch is launch part i's device part, or nil after recording the error
// of an index out of range, or of a part that is no launch, for Submit.
func (r *Run) launch(i int, what string) *device.Part {
	p := r.part(i, what)
	if p != nil && p.Kind != device.Launch {
		r.fail(fmt.Errorf("rig: %s of part %d of a submission of %d parts, a %s, not a launch: %w", what, i, len(r.sub.Parts), p.Kind, ErrInvalid))
		return nil
	}
	return p
}

// Groups sets the groups of launch part i along each axis. An index out
// of range, a part that is no launch, or a count out of range is an error
// that Submit returns.
func (r *Run) Groups(i, x, y, z int) {
	if p := r.launch(i, "groups"); p != nil {
		r.dims(i, &p.Groups, "groups", x, y, z)
	}
}

// Threads sets the threads per group of launch part i along each axis. An
// index out of range, a part that is no launch, or a count out of range
// is an error that Submit returns.
func (r *Run) Threads(i, x, y, z int) {
	if p := r.launch(i, "threads"); p != nil {
		r.dims(i, &p.Threads, "threads", x, y, z)
	}
}

func (r *Run) dims(i int, to *[3]uint32, what string, x, y, z int) {
	for a, n := range [3]int{x, y, z} {
		if n < 0 || uint64(n) > 1<<32-1 {
			r.fail(fmt.Errorf("rig: part %d: %d %s along axis %d: %w", i, n, what, a, ErrInvalid))
			return
		}
	}
	*to = [3]uint32{uint32(x), uint32(y), uint32(z)}
}

// Shared sets the dynamic shared memory of each group of launch part i. An
// index out of range, a part that is no launch, or a size out of range is
// an error that Submit returns.
func (r *Run) Shared(i, bytes int) {
	p := r.launch(i, "shared memory")
	if p == nil {
		return
	}
	if bytes < 0 || uint64(bytes) > 1<<32-1 {
		r.fail(fmt.Errorf("rig: part %d: %d bytes of dynamic shared memory: %w", i, bytes, ErrInvalid))
		return
	}
	p.Shared = uint32(bytes)
}

// Params is the parameter bytes of launch part i, to write before Submit,
// or nil for a part that is no launch. The refs' addresses are written
// over them at Submit. An index out of range returns nil and is an error
// that Submit returns.
func (r *Run) Params(i int) []byte {
	if r.part(i, "parameters") == nil {
		return nil
	}
	return r.params[i]
}

// MaxAfter is the most points After adds to one run.
const MaxAfter = 8

// After makes the run's work wait for p, a point of any device, as it
// waits for the points its buffers' hazards name: the work starts once p
// is reached, on the device where its facts allow a wait on p's device's
// word, and Submit waits on the host first otherwise. A point of the
// run's own device, and the zero Point, are passed already when the work
// starts, as a device's values run in order. Where p's device was lost or
// closed before reaching p, Submit submits nothing and returns that
// device's loss, or an error matching ErrClosed that names it. More than
// MaxAfter points for one run is an error that Submit returns, matching
// ErrInvalid. After allocates nothing.
func (r *Run) After(p Point) {
	if r.nafter == len(r.afters) {
		r.fail(fmt.Errorf("rig: more than %d points for a run to wait for (After): %w", MaxAfter, ErrInvalid))
		return
	}
	r.afters[r.nafter] = p
	r.nafter++
}

// Release hands the run back without submitting it.
func (r *Run) Release() {
	if r.held {
		r.held = false
		if r.s == nil || r.s.d == nil {
			// A run of a nil or zero Submission goes to no pool.
			return
		}
		r.forget()
		r.s.give(r)
	}
}

// errZeroSubmission is the error of a run of a nil or zero Submission.
var errZeroSubmission = fmt.Errorf("rig: a run of a nil or zero Submission, which NewSubmission did not make: %w", ErrInvalid)

// forget drops the run's references to what its last submission used
// (buffers, regions, other devices' points and answers), before the run
// waits in its submission for a later Take: a submission kept for the
// program's life would otherwise keep a freed buffer's memory, or a
// closed device, from the collector until the run is next submitted. It
// allocates nothing.
func (r *Run) forget() {
	clear(r.bufs[:cap(r.bufs)])
	r.bufs = r.bufs[:0]
	clear(r.owed[:cap(r.owed)])
	r.owed = r.owed[:0]
	clear(r.afters[:r.nafter])
	r.nafter = 0
	for i := range r.sub.Parts {
		r.sub.Parts[i].Src, r.sub.Parts[i].Dst = nil, nil
	}
	r.comb.res = attempt{}
}

// Submit submits the run's work with its buffers (refs index them), and
// returns the point its completion reaches. It computes the hazards of the
// buffers: the work waits for the last write of each buffer it reads, and
// for the last write and the reads since of each buffer it writes, and
// inside the run each part waits for the earlier parts, on any queue, that
// write a buffer it uses or use a buffer it writes (Part.After); a wait
// on another device's point runs on the device where its facts allow, and
// on the host before the submission otherwise. While the device's queues
// are full it blocks until the device progresses or ctx ends. The run goes
// back to its submission's pool, whatever the answer. Errors of the run's
// own arguments (dimensions and part indices set on it, missing or nil
// buffers, a run submitted twice) match ErrInvalid; a buffer at an index
// that no ref names is no buffer of the work, and may be nil. A part the
// device never runs, and a copy or ref past its buffer's Len, are refused
// with a *RefusalError. Where Submit finds that the work would wait for
// a point that another device, lost or closed, never reached, it submits
// nothing and returns that device's loss, or an error that matches
// ErrClosed and names that device. On a closed device Submit returns an
// error matching ErrClosed, and on a lost one the loss, which matches
// ErrLost; a buffer freed before the submission, or a launch of an image
// unloaded, returns one matching ErrFreed. Where ctx ends before the work
// is submitted (before the call, or while Submit waits for room, a growth
// or another device's point), Submit returns ctx.Err() and submits
// nothing. A nil ctx panics, as it does in the standard library.
func (r *Run) Submit(ctx context.Context, buffers ...*Buffer) (Point, error) {
	if ctx == nil {
		panic("rig: Submit with a nil Context")
	}
	p, _, _, err := r.submit(ctx, buffers, false)
	// The run holds the buffers' states, not the Buffers: a Buffer the
	// caller does not use after this call could otherwise be collected,
	// and freed, while the submission waits for room or a growth, and
	// the submission then fail with ErrFreed (TestSubmitKeepsItsBuffers).
	// Once the value is published, its point holds the memory.
	runtime.KeepAlive(buffers)
	return p, err
}

// submit is Submit; do says that the caller waits for the point next
// (Do), which then may be waited for already where the submission
// combined: waited says so, and werr is the wait's answer.
func (r *Run) submit(ctx context.Context, buffers []*Buffer, do bool) (p Point, waited bool, werr, err error) {
	if !r.held {
		return Point{}, false, nil, fmt.Errorf("rig: submit of a run that went back to its pool (a run is submitted or released once): %w", ErrInvalid)
	}
	r.held = false
	if r.s == nil || r.s.d == nil {
		// A run of a nil or zero Submission (Take) goes to no pool.
		return Point{}, false, nil, errZeroSubmission
	}
	defer func() {
		r.forget()
		r.s.give(r)
	}()
	if r.err != nil {
		return Point{}, false, nil, r.err
	}
	s := r.s
	d := s.d
	var t0 time.Time
	if d.last.Load()%SubmitSample == 0 {
		t0 = time.Now() // Stats.SubmitLatency samples one submission in SubmitSample
	}
	if len(buffers) < s.nbuf {
		return Point{}, false, nil, fmt.Errorf("rig: the submission uses %d buffers, and %d were given: %w", s.nbuf, len(buffers), ErrInvalid)
	}
	if err := r.bind(buffers); err != nil {
		return Point{}, false, nil, err
	}
	r.order()
	shorts := 0 // the Shorts of the driver's Grow, each followed by a round
	for {
		if err := ctx.Err(); err != nil {
			return Point{}, false, nil, err
		}
		var a attempt
		if d.timed.Load() || !d.combines {
			// The observer sees a timed submission inside the lock, on
			// the goroutine that submits it (profile.go): no combining.
			d.mu.Lock()
			a = r.try(d, !t0.IsZero())
			d.unlockSubmit()
		} else if d.cq.head.Load() == nil && d.mu.TryLock() {
			// No run queued and the lock free: a submitter alone makes
			// its own attempt without queuing its run.
			a = r.try(d, !t0.IsZero())
			d.unlockSubmit()
		} else {
			a = d.combine(ctx, r, !t0.IsZero(), do)
		}
		switch a.kind {
		case attemptSubmitted:
			if a.waited {
				// The combiner kicked the value, and the supervisor
				// answered its wait (handOff).
				if !t0.IsZero() && !a.handed.IsZero() {
					d.stats.submit.record(a.handed.Sub(t0))
				}
				return Point{d: d, v: a.v}, true, a.werr, nil
			}
			// A Kicker's device sees the value only once kicked: every
			// value whose Submit did not fail is kicked, that of a
			// submission whose observer panicked among them, and that
			// of one whose debt lost the device (owe), whose word then
			// reaches it as other devices' reaping waits for.
			if k, ok := d.drv.(device.Kicker); ok && !a.failed {
				d.kicks.kick(k, a.v)
			}
			d.sup.submitted()
			if !t0.IsZero() {
				d.stats.submit.record(time.Since(t0))
			}
			return Point{d: d, v: a.v}, false, nil, a.lost
		case attemptFailed:
			if fe, ok := a.err.(*freedBufferError); ok {
				return Point{}, false, nil, fe.named(buffers)
			}
			return Point{}, false, nil, a.err
		case attemptCommitFirst:
			// A device-side wait ends only once the other device writes
			// its word: where that device commits lazily, it commits the
			// point before this submission is published, so that no work
			// it runs later can wait on this submission ahead of the
			// write. The commit takes the other device's submit lock, so
			// it runs with none held, and the submission starts over.
			o := a.other.d
			if err := o.commit(a.other.v); err != nil {
				return Point{}, false, nil, err
			}
			if o.closing.Load() && !device.AtLeast(o.committed.Load(), a.other.v) {
				// A device commits nothing once its Close began, and
				// its stop drops the values it left uncommitted: the
				// point is never reached.
				return Point{}, false, nil, closedWait("a submission on "+d.name, a.other, ErrClosed)
			}
		case attemptHostWait:
			if err := d.waitOther(ctx, a.other, "a submission on "+d.name); err != nil {
				return Point{}, false, nil, err
			}
		case attemptLater:
			if err := d.progress(ctx); err != nil {
				return Point{}, false, nil, err
			}
		case attemptGrow:
			if err := d.grow(ctx, &shorts); err != nil {
				return Point{}, false, nil, err
			}
		case attemptSelf:
		default:
			kind, filling := device.PartKind(0), false
			if a.room.Part >= 0 && a.room.Part < len(r.sub.Parts) {
				kind, filling = r.sub.Parts[a.room.Part].Kind, r.sub.Parts[a.room.Part].Filling
			}
			return Point{}, false, nil, &RefusalError{Device: d.name, Part: a.room.Part, Kind: kind, Filling: filling, Reason: a.room.Reason}
		}
	}
}

// attemptKind says how an attempt to submit a run ended.
type attemptKind uint8

const (
	attemptSubmitted   attemptKind = iota // v is the run's value, lost the loss it caused
	attemptFailed                         // err says why
	attemptCommitFirst                    // other must be committed first
	attemptHostWait                       // other must be reached first, waited for on the host
	attemptLater                          // the driver's queues are full
	attemptGrow                           // the driver's queues must grow
	attemptRefused                        // room says which part the device never runs
	attemptSelf                           // not attempted: the run's goroutine must, itself
)

// attempt is how an attempt to submit a run ended.
type attempt struct {
	kind attemptKind
	// failed says that the driver's Submit of v answered Failed: v is
	// not kicked.
	failed bool
	v      uint64
	lost   error
	err    error
	other  Point
	room   device.RoomAnswer
	// waited says that the run's wait was handed to the supervisor
	// (handOff) and answered werr; handed is when, where the run's
	// submission was sampled for Stats.SubmitLatency.
	waited bool
	werr   error
	handed time.Time
}

// try makes one attempt to submit r, with the device's submit lock held:
// by r's own goroutine or by another submitter that combines for it
// (combine.go). It blocks on nothing; what must wait, it returns for r's
// goroutine to do without the lock. sample says whether to sample the
// time the attempt holds the lock.
func (r *Run) try(d *Device, sample bool) attempt {
	var held time.Time
	if sample {
		held = time.Now()
	}
	if err := d.usable(); err != nil {
		return attempt{kind: attemptFailed, err: err}
	}
	if err := r.s.launchable(); err != nil {
		return attempt{kind: attemptFailed, err: err}
	}
	r.lockBuffers()
	hostWait, err := r.hazards(d)
	if err == nil && hostWait.d == nil {
		if o := r.uncommitted(); o.d != nil {
			r.unlockBuffers()
			return attempt{kind: attemptCommitFirst, other: o}
		}
	}
	if err != nil {
		r.unlockBuffers()
		return attempt{kind: attemptFailed, err: err}
	}
	if hostWait.d != nil {
		r.unlockBuffers()
		return attempt{kind: attemptHostWait, other: hostWait}
	}
	v := d.last.Load() + 1
	r.sub.Value = v
	r.sub.Waits = r.waits
	r.sub.Timed = d.timed.Load()
	room := d.drv.Room(&r.sub)
	switch room.Kind {
	case device.RoomOK:
	case device.RoomLater:
		r.unlockBuffers()
		return attempt{kind: attemptLater}
	case device.RoomGrow:
		r.unlockBuffers()
		return attempt{kind: attemptGrow}
	default:
		r.unlockBuffers()
		return attempt{kind: attemptRefused, room: room}
	}
	r.publish(d, v)
	r.unlockBuffers()
	a := d.drv.Submit(&r.sub)
	d.last.Store(v)
	var lost error
	if len(r.owed) > 0 {
		lost = d.owe(r.owed, v)
	}
	failed := false
	switch a.Kind {
	case device.Committed:
		d.committed.Store(v)
	case device.Failed:
		failed = true
		// v's work did not all run: the loss's reached value stays below
		// v and at the last value committed (failedReached).
		if le := d.loseRead(a.Reason, &device.Fault{Why: a.Reason}, func() uint64 { return d.failedReached(v - 1) }); lost == nil {
			lost = le
		}
	}
	if r.sub.Timed {
		if err := d.observe(&r.sub, failed); err != nil && lost == nil {
			lost = err
		}
	}
	if sample {
		d.mu.held(time.Since(held))
	}
	return attempt{kind: attemptSubmitted, failed: failed, v: v, lost: lost}
}

// bind resolves the run's buffers for its device: their regions, the
// addresses the launches' parameters hold, and the distinct buffers in id
// order with their uses. It refuses refs and copies past their buffers'
// lengths. A buffer at an index that no ref names is skipped.
func (r *Run) bind(buffers []*Buffer) error {
	s, d := r.s, r.s.d
	r.bufs, r.acc = r.bufs[:0], r.acc[:0]
	for i, a := range s.access {
		if a == 0 {
			// No ref names index i (every ref states an access): its
			// buffer is no buffer of the work, as one past the last
			// index is, and is neither looked at nor marked used.
			continue
		}
		b := buffers[i]
		if b == nil || b.s == nil {
			return fmt.Errorf("rig: buffer %d is nil: %w", i, ErrInvalid)
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
	if s.cross {
		for i, a := range s.access {
			if a != 0 {
				r.slot[i] = r.index(buffers[i].s)
			}
		}
	}
	for i := range s.parts {
		p := &s.parts[i]
		dp := &r.sub.Parts[i]
		for _, ref := range p.refs {
			st := buffers[ref.Buf].s
			if ref.Offset > uint64(st.n) {
				return r.refuse(i, fmt.Sprintf("its ref to buffer %d adds %d bytes to the address of a buffer of %d", ref.Buf, ref.Offset, st.n))
			}
			if ref.At < 0 {
				continue
			}
			_, loc, err := st.on(d)
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(r.params[i][ref.At:], loc.Address+st.off+ref.Offset)
		}
		if p.kind == device.CopyRows {
			if !p.filling {
				st := buffers[p.src].s
				if p.srcEnd > uint64(st.n) {
					return r.refuse(i, fmt.Sprintf("it reads from byte %d up to byte %d of buffer %d, which holds %d", p.srcOff, p.srcEnd, p.src, st.n))
				}
				reg, _, err := st.on(d)
				if err != nil {
					return err
				}
				dp.Src, dp.SrcOffset = reg, st.off+p.srcOff
			}
			st := buffers[p.dst].s
			if p.dstEnd > uint64(st.n) {
				return r.refuse(i, fmt.Sprintf("it writes from byte %d up to byte %d of buffer %d, which holds %d", p.dstOff, p.dstEnd, p.dst, st.n))
			}
			reg, _, err := st.on(d)
			if err != nil {
				return err
			}
			dp.Dst, dp.DstOffset = reg, st.off+p.dstOff
		}
	}
	return nil
}

// index is the index of st in r.bufs, which holds it.
func (r *Run) index(st *bufState) int32 {
	lo, hi := 0, len(r.bufs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.bufs[m].id < st.id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return int32(lo)
}

// refuse is the refusal of part i for reason.
func (r *Run) refuse(i int, reason string) error {
	p := &r.sub.Parts[i]
	return &RefusalError{Device: r.s.d.name, Part: i, Kind: p.Kind, Filling: p.Filling, Reason: reason}
}

// order sets each part's After from the buffers bound: the latest earlier
// part on the other queue that writes a buffer the part uses or uses a
// buffer it writes, or the part the caller's After names where that one is
// later. Queue order does the rest: a part starts once the parts before it
// on its queue have completed, so that waiting for the latest conflicting
// part of the other queue waits for every earlier one. A part with no such
// part keeps the caller's After. Parts on a queue other than 0 and 1 keep
// theirs, and the driver refuses them.
func (r *Run) order() {
	s := r.s
	if !s.cross {
		return
	}
	for k := range r.bufs {
		r.last[k] = [2][2]int32{{-1, -1}, {-1, -1}}
	}
	for i := range s.parts {
		p := &s.parts[i]
		dp := &r.sub.Parts[i]
		dp.After = p.after
		q := p.queue
		if q < 0 || q > 1 || p.after > i {
			continue
		}
		o := 1 - q
		a := int32(-1)
		if p.after > 0 && s.parts[p.after-1].queue == o {
			a = int32(p.after - 1)
		}
		for _, ref := range p.refs {
			l := &r.last[r.slot[ref.Buf]][o]
			if ref.Access&Writes != 0 {
				a = max(a, l[1])
			} else {
				a = max(a, l[0])
			}
		}
		for _, ref := range p.refs {
			l := &r.last[r.slot[ref.Buf]][q]
			if ref.Access&Writes != 0 {
				l[0] = int32(i)
			}
			l[1] = int32(i)
		}
		if a >= 0 {
			dp.After = int(a) + 1
		}
	}
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

// freedBufferError is hazards' error for a buffer of the run freed before
// its submission; the run's goroutine names the buffer's index (named).
type freedBufferError struct{ s *bufState }

func (e *freedBufferError) Error() string {
	return fmt.Sprintf("rig: a buffer of %d bytes of %s, freed before the submission", e.s.n, e.s.d.name)
}

func (e *freedBufferError) Unwrap() error { return ErrFreed }

// named returns the error naming the first index of buffers that holds the
// freed buffer, and matching ErrFreed.
func (e *freedBufferError) named(buffers []*Buffer) error {
	for i, b := range buffers {
		if b != nil && b.s == e.s {
			return fmt.Errorf("rig: buffer %d (%d bytes of %s) was freed before the submission: %w", i, e.s.n, e.s.d.name, ErrFreed)
		}
	}
	return e
}

// hazards fills r.waits with the device-side waits the run's buffers need
// on d, or returns a point to wait for on the host first. The buffers'
// locks and d's submit lock are held.
func (r *Run) hazards(d *Device) (Point, error) {
	r.waits = r.waits[:0]
	r.owed = r.owed[:0]
	for i, b := range r.bufs {
		// A buffer of another device that closed is refused, whether or
		// not d mapped it before: that device's reaping marks it freed
		// only once it reaches it, and waits for every use recorded
		// until then. The close is the cause to name.
		if b.d != d && b.d.closing.Load() {
			return Point{}, b.closedFor(d)
		}
		if b.freed {
			return Point{}, &freedBufferError{s: b}
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
			// The last write's work waits for these, but a stop or loss
			// of its device passes its point without that work: a write
			// waits for them itself.
			for _, p := range b.before {
				if p.d != d {
					if hw := r.waitFor(d, p); hw.d != nil {
						return hw, nil
					}
				}
			}
		}
	}
	// A point of d itself is passed before the run's work starts: d's
	// values run in order.
	for _, p := range r.afters[:r.nafter] {
		if p.d != nil && p.d != d {
			if hw := r.waitFor(d, p); hw.d != nil {
				return hw, nil
			}
		}
	}
	return Point{}, nil
}

// waitFor adds a device-side wait on p for d, or returns p where d's work
// cannot wait on p's word.
func (r *Run) waitFor(d *Device, p Point) Point {
	if p.never() {
		// The wait on the host returns the error.
		return p
	}
	if p.passed() && p.d.passedSettled(p.v) {
		// The device may have been lost or stopped short of p, and its
		// word raised past p, since never looked: the word was read
		// first, so passedAnswer says whether p's work ran.
		if p.d.passedAnswer(p.v) != nil {
			return p
		}
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

// uncommitted returns the first point the run's device-side waits name
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
			if (b.lastWrite.d != nil && b.lastWrite.d != d) || len(b.reads) > 0 || len(b.before) > 0 {
				b.holdBefore(d)
			}
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
			b.dropReapedReads()
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
// ctx ends: the back-pressure of a Room that returned later.
func (d *Device) progress(ctx context.Context) error {
	cur := d.read()
	if device.AtLeast(cur, d.last.Load()) {
		// Nothing in flight: the driver's queues free on their own.
		return ctx.Err()
	}
	ahead := d.roomWait.join()
	defer d.roomWait.leave()
	// Never past the last value submitted, which frees every room.
	return Point{d: d, v: cur + min(ahead, d.last.Load()-cur)}.Wait(ctx)
}

// waitOther waits on the host for p, a point of another device, ahead of
// what, work of d: a submission on d whose driver cannot wait for p
// itself, or a copy to or from a buffer of d. d's close or loss ends the
// wait, since what could then only fail: it returns d's error. A close of
// p's device before it reached p returns an error that names that device
// (closedWait). The host wait is the rare path (drivers wait for each
// other's words on the device), so its goroutine costs little.
func (d *Device) waitOther(ctx context.Context, p Point, what string) error {
	if p.passed() && (p.d == nil || p.d.passedSettled(p.v)) {
		// Settled already, as Wait would answer at once: no goroutine.
		return closedWait(what, p, p.Wait(ctx))
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-d.lost:
		case <-d.sup.box.Closed():
		case <-wctx.Done():
		}
		cancel()
	}()
	err := p.Wait(wctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The wait's context ended: the caller's, whose error the
		// caller gets, or d's close or loss, whose error it gets.
		if e := ctx.Err(); e != nil {
			return e
		}
		if e := d.usable(); e != nil {
			return e
		}
	}
	return closedWait(what, p, err)
}

// grow asks the driver to grow its queues, running a round of reclamation
// after a Short, which ends its wait for the device's work where ctx
// ends. shorts counts the Shorts that the submission's growths met before
// this one, and this one's: a growth that succeeded uses up no round, and
// a Short once every round ran returns an *OutOfMemoryError.
func (d *Device) grow(ctx context.Context, shorts *int) error {
	if err := d.begin(); err != nil {
		return err
	}
	// The round gives back deferred frees through counted calls
	// (Unload): it runs inside begin, as Alloc's rounds do.
	defer d.end()
	err := d.drv.Grow()
	if err == nil {
		d.stats.growths.Add(1)
		return nil
	}
	if sh, ok := err.(*device.Short); ok {
		if *shorts >= reclaim.Rounds {
			return &OutOfMemoryError{Device: d.name, What: "the growth of its queues", Lacking: sh.N}
		}
		d.reclaimRoundCtx(ctx, *shorts)
		*shorts++
		return nil
	}
	return fmt.Errorf("rig: growing the queues of %s: %w", d.name, d.fault(err))
}
