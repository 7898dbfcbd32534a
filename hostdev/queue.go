package hostdev

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/hostram"
	"github.com/rig-go/rig/internal/latest"
	"golang.org/x/sys/cpu"
)

// FillFunc is the fill function of a Fill part on a host device: Part.FillFn
// holds one, and the device calls it with Part.FillArg on the part's
// queue's goroutine. A fill that panics faults the device.
type FillFunc func(arg uintptr)

// part is a submission's part as the launch ring holds it.
type part struct {
	kind    device.PartKind
	queue   int
	after   int // 1 + the index of the part it runs after, or 0
	kern    *kernelDef
	groups  [3]int
	threads [3]int
	shared  int
	params  []byte // in the ring's parameter bytes

	src, dst           *region
	srcOff, dstOff     uint64
	rowBytes, rows     uint64
	srcPitch, dstPitch uint64
	filling            bool
	fillByte           byte
	fill32             bool // fillValue's words, not fillByte's bytes
	fillValue          uint32

	fill FillFunc
	arg  uintptr

	done atomic.Bool // set once the part ran or was skipped, where both queues run
}

// The launch ring's three arenas.
const (
	arParts = iota
	arWaits
	arBytes
	nArenas
)

// slot is one value in flight: the submission, copied, and its stamps.
type slot struct {
	// Written by Submit; read by the workers.
	value  uint64
	timed  bool
	waits  []device.Wait
	parts  []part
	queues uint8        // bit q is set where a part runs on queue q
	ends   [nArenas]int // where the value's span ends in each arena

	// Written by the sequencer; read by Settle through the stamps.
	start, end int64
	endQueue   int
}

// arena is a circular store of the values' parts, waits or parameter
// bytes. Each value takes one contiguous span, in value order, which it
// holds until the value completes. Only the submitting goroutine (Room,
// Submit) touches an arena.
type arena[T any] struct {
	buf    []T
	head   int    // where the next span starts
	first  uint64 // the sequence number of the first value of this epoch
	charge int64  // budget bytes buf takes (0 for the buffer Make made)

	oldCharge int64  // budget bytes of replaced buffers
	oldUntil  uint64 // ... which go back once this many values completed
}

// place finds n items for a value: off, ok; or ok false where the arena
// lacks room now. t is where the oldest span in flight starts, and empty
// whether no span is in flight. A span that wraps to the start never ends
// exactly at t, so that head == t means that the spans in flight are empty.
func (a *arena[T]) place(n, t int, empty bool, seq uint64) (off int, ok bool) {
	c := len(a.buf)
	if empty {
		a.head, a.first = 0, seq
		return 0, true
	}
	h := a.head
	switch {
	case n == 0:
		return h, true
	case h >= t && c-h >= n:
		return h, true
	case h >= t && n < t:
		return 0, true
	case h < t && h+n < t:
		return h, true
	}
	return 0, false
}

// growth is what Grow made, which the next Room puts into the ring.
type growth struct {
	parts  []part
	waits  []device.Wait
	bytes  []byte
	charge [nArenas]int64
}

// queues is the device's launch ring: the submitting goroutine's side of
// it (Room, Submit, Grow), and the counters the workers share.
type queues struct {
	d     *dev
	slots []slot
	n     uint64 // len(slots): values in flight at most

	// The submitting goroutine's own.
	seq   uint64 // values submitted
	parts arena[part]
	waits arena[device.Wait]
	bytes arena[byte]
	plan  struct {
		ok         bool
		seq, value uint64
		off, need  [nArenas]int
	}
	busy atomic.Bool // set while Room or Submit runs, to catch overlaps

	need  [nArenas]atomic.Int64 // items the last RoomGrow lacked
	caps  [nArenas]atomic.Int64 // the arenas' sizes, for Grow
	grown atomic.Pointer[growth]

	// The counters each side stores to lie on lines of their own.
	_         cpu.CacheLinePad
	published atomic.Uint64 // values the sequencer may run
	last      atomic.Uint64 // the last value submitted
	kick      chan struct{} // wakes the sequencer
	_         cpu.CacheLinePad
	completed atomic.Uint64 // values whose store to the word is done
	_         cpu.CacheLinePad

	stampMu sync.Mutex
	stamps  latest.Ring[device.Stamp] // timed values completed, not yet settled
}

// maxStamps bounds the stamps kept for Settle; past it, each stamp takes
// the place of the oldest.
const maxStamps = 1 << 20

func (q *queues) init(d *dev, start uint64) {
	q.d = d
	q.n = uint64(d.cfg.Ring)
	q.slots = make([]slot, q.n)
	q.kick = make(chan struct{}, 1)
	q.last.Store(start)
	np, nw, nb := max(2*d.cfg.Ring, 256), max(2*d.cfg.Ring, 256), max(64*d.cfg.Ring, 64<<10)
	if d.cfg.Grow {
		np, nw, nb = 4, 4, 64
	}
	q.parts.buf = make([]part, np)
	q.waits.buf = make([]device.Wait, nw)
	q.bytes.buf = make([]byte, nb)
	q.caps[arParts].Store(int64(np))
	q.caps[arWaits].Store(int64(nw))
	q.caps[arBytes].Store(int64(nb))
}

// tail is where the oldest span in flight of the arena k, whose epoch
// started at value first, starts, and whether none is in flight, where c
// values completed.
func (q *queues) tail(k int, first, c uint64) (t int, empty bool) {
	if max(first, c) >= q.seq {
		return 0, true
	}
	if c > first {
		return q.slots[(c-1)%q.n].ends[k], false
	}
	return 0, false
}

// never is a RoomNever answer.
func never(i int, format string, args ...any) device.RoomAnswer {
	return device.RoomAnswer{Kind: device.RoomNever, Part: i, Reason: fmt.Sprintf(format, args...)}
}

// Room returns whether the launch ring holds s now. It returns RoomNever
// for parts the device never runs (a launch of an unloaded image's kernel
// among them), naming the part and the limit it broke, and for a wait on
// no word or on one not 8-byte aligned, naming the wait; RoomLater while
// Config.Ring values are in flight or the ring's arenas lack room until
// values complete; and RoomGrow where s needs more than an arena holds.
// It allocates nothing but a refusal's reason.
func (d *dev) Room(s *device.Submission) device.RoomAnswer {
	q := &d.q
	if !q.busy.CompareAndSwap(false, true) {
		panic("hostdev: Room called while another Room or Submit of the device runs")
	}
	defer q.busy.Store(false)
	return q.room(s)
}

func (q *queues) room(s *device.Submission) device.RoomAnswer {
	q.plan.ok = false
	if q.d.stopped.Load() {
		return never(-1, "host device %s is stopped", q.d.cfg.Name)
	}
	nbytes := 0
	for i := range s.Parts {
		p := &s.Parts[i]
		if a := q.check(i, p); a.Kind != device.RoomOK {
			return a
		}
		if p.Kind == device.Launch {
			n := paramBytes(p)
			if n > math.MaxInt-nbytes {
				return never(i, "part %d launches %q with %d parameter bytes, which with the %d of the parts before it pass the %d an int counts", i, p.Entry.Name, n, nbytes, math.MaxInt)
			}
			nbytes += n
		}
	}
	for i := range s.Waits {
		if a := checkWait(i, &s.Waits[i]); a.Kind != device.RoomOK {
			return a
		}
	}
	// One load of the sequencer's counter, whose line it stores to.
	c := q.completed.Load()
	q.reap(c)
	q.swapIn()
	if q.seq-c >= q.n {
		return device.RoomAnswer{Kind: device.RoomLater}
	}
	need := [nArenas]int{len(s.Parts), len(s.Waits), nbytes}
	size := [nArenas]int{len(q.parts.buf), len(q.waits.buf), len(q.bytes.buf)}
	grow := false
	for k := range need {
		grow = grow || need[k] > size[k]
	}
	if grow {
		// The needs stay until a Grow takes them: a Room of a submission
		// that fits, which another submitter may make before this one's
		// Grow, leaves them.
		for k := range need {
			if need[k] > size[k] {
				q.need[k].Store(int64(need[k]))
			} else {
				q.need[k].Store(0)
			}
		}
		return device.RoomAnswer{Kind: device.RoomGrow}
	}
	var off [nArenas]int
	var ok [nArenas]bool
	t, e := q.tail(arParts, q.parts.first, c)
	off[arParts], ok[arParts] = q.parts.place(need[arParts], t, e, q.seq)
	t, e = q.tail(arWaits, q.waits.first, c)
	off[arWaits], ok[arWaits] = q.waits.place(need[arWaits], t, e, q.seq)
	t, e = q.tail(arBytes, q.bytes.first, c)
	off[arBytes], ok[arBytes] = q.bytes.place(need[arBytes], t, e, q.seq)
	if !ok[arParts] || !ok[arWaits] || !ok[arBytes] {
		return device.RoomAnswer{Kind: device.RoomLater}
	}
	q.plan.ok, q.plan.seq, q.plan.value, q.plan.off, q.plan.need = true, q.seq, s.Value, off, need
	return device.RoomAnswer{Kind: device.RoomOK}
}

// paramBytes is the parameter bytes of the launch p that its kernel
// reads: its entry's Params, or all of them where that is 0.
func paramBytes(p *device.Part) int {
	if p.Entry.Params > 0 {
		return p.Entry.Params
	}
	return len(p.Params)
}

// Limits of a launch's grid, CUDA's.
const (
	maxGroupsX  = math.MaxInt32
	maxGroupsYZ = 65535
	maxThreadsZ = 64
)

// check returns RoomNever where the device never runs part i, p, and
// RoomOK otherwise.
func (q *queues) check(i int, p *device.Part) device.RoomAnswer {
	ok := device.RoomAnswer{Kind: device.RoomOK}
	if p.After < 0 || p.After > i {
		return never(i, "part %d has After %d, which names no part below its own index", i, p.After)
	}
	switch p.Kind {
	case device.Launch, device.CopyRows, device.Fill:
	case device.Words:
		if len(p.Words)%2 != 0 {
			return never(i, "part %d holds ring entries of %d words, an odd number", i, len(p.Words))
		}
		return never(i, "part %d is words: the host driver runs no ring entries", i)
	default:
		return never(i, "part %d is of unknown kind %d", i, p.Kind)
	}
	if p.Queue < 0 || p.Queue >= 2 {
		return never(i, "part %d is on queue %d: the host device has queues 0 (COMPUTE:0) and 1 (COPY:0)", i, p.Queue)
	}
	switch p.Kind {
	case device.Launch:
		if p.Queue != device.Compute {
			return never(i, "part %d launches on COPY:0, which runs copies and fills only", i)
		}
		if p.Entry == nil {
			return never(i, "part %d launches no entry", i)
		}
		ke, isHost := p.Entry.Data.(*kentry)
		if !isHost || ke == nil {
			return never(i, "part %d launches %q, an entry of another driver", i, p.Entry.Name)
		}
		if ke.img != nil && ke.img.gone.Load() {
			return never(i, "part %d launches %q of an unloaded image", i, p.Entry.Name)
		}
		g, t := p.Groups, p.Threads
		if g[0] == 0 || g[1] == 0 || g[2] == 0 || t[0] == 0 || t[1] == 0 || t[2] == 0 {
			return never(i, "part %d launches %q over groups %v of threads %v: an axis of size 0", i, p.Entry.Name, g, t)
		}
		if g[0] > maxGroupsX || g[1] > maxGroupsYZ || g[2] > maxGroupsYZ {
			return never(i, "part %d launches %q over groups %v: over %d along x or %d along y or z", i, p.Entry.Name, g, maxGroupsX, maxGroupsYZ)
		}
		// t[0]*t[1] fits 64 bits; the product with t[2] may not, so it is
		// taken as 128 bits.
		hi, per := bits.Mul64(uint64(t[0])*uint64(t[1]), uint64(t[2]))
		if t[2] > maxThreadsZ || hi != 0 || p.Entry.Threads < 0 || per > uint64(p.Entry.Threads) {
			return never(i, "part %d launches %q with threads %v per group: over the %d threads of its entry, or %d along z", i, p.Entry.Name, t, p.Entry.Threads, maxThreadsZ)
		}
		if int64(p.Shared) > int64(p.Entry.Shared) {
			return never(i, "part %d launches %q with %d bytes of dynamic shared memory, over the %d of its entry", i, p.Entry.Name, p.Shared, p.Entry.Shared)
		}
		if len(p.Params) < p.Entry.Params {
			return never(i, "part %d launches %q with %d parameter bytes; it reads %d", i, p.Entry.Name, len(p.Params), p.Entry.Params)
		}
	case device.CopyRows:
		dst, why := q.live(p.Dst)
		if why != "" {
			return never(i, "part %d copies into %s", i, why)
		}
		if p.Rows == 0 || p.RowBytes == 0 {
			return ok
		}
		if p.Rows > 1 && p.DstPitch < p.RowBytes {
			return never(i, "part %d copies rows of %d bytes with a destination pitch of %d", i, p.RowBytes, p.DstPitch)
		}
		if !within(p.DstOffset, p.Rows, p.RowBytes, p.DstPitch, dst.size) {
			return never(i, "part %d copies %d rows of %d bytes, pitch %d, to offset %d of a region of %d bytes: past its end", i, p.Rows, p.RowBytes, p.DstPitch, p.DstOffset, dst.size)
		}
		if p.Filling {
			return ok
		}
		src, why := q.live(p.Src)
		if why != "" {
			return never(i, "part %d copies from %s", i, why)
		}
		// Rows read with a pitch under their length overlap: the GPU
		// drivers refuse them (CUDA's copies of rows do), so the host
		// driver does too, and a program that runs here runs there.
		if p.Rows > 1 && p.SrcPitch < p.RowBytes {
			return never(i, "part %d copies rows of %d bytes with a source pitch of %d", i, p.RowBytes, p.SrcPitch)
		}
		if !within(p.SrcOffset, p.Rows, p.RowBytes, p.SrcPitch, src.size) {
			return never(i, "part %d copies %d rows of %d bytes, pitch %d, from offset %d of a region of %d bytes: past its end", i, p.Rows, p.RowBytes, p.SrcPitch, p.SrcOffset, src.size)
		}
	case device.Fill:
		if f, _ := p.FillFn.(FillFunc); f == nil {
			return never(i, "part %d fills with a %T, not a hostdev.FillFunc", i, p.FillFn)
		}
	}
	return ok
}

// checkWait returns RoomNever where the sequencer cannot read the word of
// wait i, w: none, or one not 8-byte aligned, which an atomic load of 64
// bits does not read (or faults on) where the host is not amd64. It
// returns RoomOK otherwise.
func checkWait(i int, w *device.Wait) device.RoomAnswer {
	if w.Word == nil {
		return never(-1, "wait %d is on no word", i)
	}
	if a := uintptr(unsafe.Pointer(w.Word)); a%8 != 0 {
		return never(-1, "wait %d is on the word at %#x, which is not 8-byte aligned", i, a)
	}
	return device.RoomAnswer{Kind: device.RoomOK}
}

// live is r as a live region of the device, or why it is not one.
func (q *queues) live(r device.Region) (*region, string) {
	x, ok := r.(*region)
	switch {
	case !ok || x == nil:
		return nil, fmt.Sprintf("a region of type %T, not the host driver's", r)
	case x.dev != q.d:
		return nil, fmt.Sprintf("a region of another device (%s); map it with MapPeer", x.dev.cfg.Name)
	case !x.live():
		return nil, fmt.Sprintf("a freed region at %#x", x.addr)
	}
	return x, ""
}

// within reports whether rows rows of n bytes, pitch apart, from off lie
// within size bytes. rows and n are positive.
func within(off, rows, n, pitch uint64, size int) bool {
	hi, carry := bits.Mul64(rows-1, pitch)
	if hi != 0 || carry > math.MaxUint64-n {
		return false
	}
	last := carry + n
	return off <= uint64(size) && last <= uint64(size)-off
}

// reap gives back to the budget the arenas' replaced buffers whose values
// completed, where c values completed.
func (q *queues) reap(c uint64) {
	reapArena(q.d, &q.parts, c)
	reapArena(q.d, &q.waits, c)
	reapArena(q.d, &q.bytes, c)
}

func reapArena[T any](d *dev, a *arena[T], completed uint64) {
	if a.oldCharge != 0 && completed >= a.oldUntil {
		d.used.Add(-a.oldCharge)
		a.oldCharge = 0
	}
}

// swapIn puts into the ring the buffers the last Grow made.
func (q *queues) swapIn() {
	if q.grown.Load() == nil {
		return
	}
	g := q.grown.Swap(nil)
	swapArena(q, &q.parts, g.parts, g.charge[arParts], arParts)
	swapArena(q, &q.waits, g.waits, g.charge[arWaits], arWaits)
	swapArena(q, &q.bytes, g.bytes, g.charge[arBytes], arBytes)
}

func swapArena[T any](q *queues, a *arena[T], buf []T, charge int64, k int) {
	if buf == nil {
		return
	}
	if len(buf) <= len(a.buf) {
		q.d.used.Add(-charge)
		return
	}
	a.oldCharge += a.charge
	a.oldUntil = q.seq
	a.buf, a.charge, a.head, a.first = buf, charge, 0, q.seq
	q.caps[k].Store(int64(len(buf)))
}

// Grow makes arenas that hold twice what the submission that Room last
// refused with RoomGrow needs, at least doubling each arena it grows, and
// takes their bytes from the budget: a *device.Short where it lacks them,
// or where they are more than the host's memory or than Go makes into
// one array. The next Room puts them into the ring.
func (d *dev) Grow() error {
	q := &d.q
	var g growth
	var total int64
	sizes := [nArenas]int64{int64(unsafe.Sizeof(part{})), int64(unsafe.Sizeof(device.Wait{})), 1}
	var n [nArenas]int
	var needs [nArenas]int64
	for k := range n {
		need := q.need[k].Load()
		needs[k] = need
		if need == 0 {
			continue
		}
		c := max(int64(1)<<min(bits.Len64(uint64(2*need-1)), 62), 2*q.caps[k].Load())
		if c > math.MaxInt64/sizes[k] || c > math.MaxInt || total > math.MaxInt64-c*sizes[k] {
			return &device.Short{N: math.MaxInt64}
		}
		n[k] = int(c)
		g.charge[k] = c * sizes[k]
		total += g.charge[k]
	}
	if total == 0 {
		return nil
	}
	if ram := hostram.Bytes(); ram > 0 && uint64(total) > ram {
		// No budget gives more than the host's memory, and Go would
		// end the process where the OS refused it.
		return &device.Short{N: total}
	}
	if !d.charge(total) {
		return &device.Short{N: total}
	}
	g.parts, g.waits, g.bytes = makeOf[part](n[arParts]), makeOf[device.Wait](n[arWaits]), makeOf[byte](n[arBytes])
	if (n[arParts] > 0 && g.parts == nil) || (n[arWaits] > 0 && g.waits == nil) || (n[arBytes] > 0 && g.bytes == nil) {
		// Past the largest array Go makes.
		d.used.Add(-total)
		return &device.Short{N: total}
	}
	for k := range n {
		// A need that a Room recorded meanwhile stays for the next Grow.
		q.need[k].CompareAndSwap(needs[k], 0)
	}
	if old := q.grown.Swap(&g); old != nil {
		d.used.Add(-(old.charge[0] + old.charge[1] + old.charge[2]))
	}
	return nil
}

// Submit copies s into the launch ring, parameter bytes and all, and wakes
// the sequencer: the work starts at once, so it returns Committed, or
// Failed with the fault's cause where the device faulted before s was
// handed to the sequencer, whose word then reaches the value only at Stop.
// A fault of s's own work is no failure of Submit: Sleep returns it. It trusts the checks of the Room that
// returned RoomOK for s just before, and runs Room itself where none did.
// It allocates nothing.
func (d *dev) Submit(s *device.Submission) device.SubmitAnswer {
	q := &d.q
	if !q.busy.CompareAndSwap(false, true) {
		panic("hostdev: Submit called while another Room or Submit of the device runs")
	}
	defer q.busy.Store(false)
	if d.stopped.Load() {
		return device.SubmitAnswer{Kind: device.Failed, Reason: "host device is stopped"}
	}
	if !q.planned(s) {
		if a := q.room(s); a.Kind != device.RoomOK {
			return device.SubmitAnswer{Kind: device.Failed, Reason: "submit without room: " + a.Reason}
		}
	}
	// The fault is read before the value is published: a fault of the
	// value's own work, which may come at once on another goroutine, is
	// the device's to report through Sleep, as a GPU's is, and not a
	// failure of this Submit.
	fault := d.fault.Load()
	off := q.plan.off
	q.plan.ok = false
	sl := &q.slots[q.seq%q.n]
	sl.value, sl.timed, sl.queues = s.Value, s.Timed, 0
	sl.waits = q.waits.buf[off[arWaits] : off[arWaits]+len(s.Waits) : off[arWaits]+len(s.Waits)]
	copy(sl.waits, s.Waits)
	sl.parts = q.parts.buf[off[arParts] : off[arParts]+len(s.Parts) : off[arParts]+len(s.Parts)]
	b := off[arBytes]
	for i := range s.Parts {
		p, x := &s.Parts[i], &sl.parts[i]
		x.kind, x.queue, x.after = p.Kind, p.Queue, p.After
		x.kern, x.params, x.src, x.dst, x.fill = nil, nil, nil, nil, nil
		sl.queues |= 1 << p.Queue
		switch p.Kind {
		case device.Launch:
			x.kern = p.Entry.Data.(*kentry).def
			for a := range 3 {
				x.groups[a], x.threads[a] = int(p.Groups[a]), int(p.Threads[a])
			}
			x.shared = int(p.Shared)
			n := paramBytes(p)
			x.params = q.bytes.buf[b : b+n : b+n]
			copy(x.params, p.Params)
			b += n
		case device.CopyRows:
			x.dst, _ = p.Dst.(*region)
			x.src, _ = p.Src.(*region)
			x.srcOff, x.dstOff, x.rowBytes, x.rows = p.SrcOffset, p.DstOffset, p.RowBytes, p.Rows
			x.srcPitch, x.dstPitch, x.filling, x.fillByte = p.SrcPitch, p.DstPitch, p.Filling, p.Byte
			x.fill32, x.fillValue = p.Fill32, p.Value
		case device.Fill:
			x.fill, _ = p.FillFn.(FillFunc)
			x.arg = p.FillArg
		}
		x.done.Store(false)
	}
	q.parts.head = off[arParts] + len(s.Parts)
	q.waits.head = off[arWaits] + len(s.Waits)
	q.bytes.head = b
	sl.ends = [nArenas]int{q.parts.head, q.waits.head, q.bytes.head}
	q.seq++
	q.last.Store(s.Value)
	q.published.Store(q.seq)
	select {
	case q.kick <- struct{}{}:
	default:
	}
	if h := d.submitLook.Load(); h != nil {
		(*h)()
	}
	if fault != nil {
		return device.SubmitAnswer{Kind: device.Failed, Reason: fault.Why}
	}
	return device.SubmitAnswer{Kind: device.Committed}
}

// planned reports whether the last Room planned s's place in the ring.
func (q *queues) planned(s *device.Submission) bool {
	if !q.plan.ok || q.plan.seq != q.seq || q.plan.value != s.Value ||
		q.plan.need[arParts] != len(s.Parts) || q.plan.need[arWaits] != len(s.Waits) {
		return false
	}
	n := 0
	for i := range s.Parts {
		if p := &s.Parts[i]; p.Kind == device.Launch {
			if p.Entry == nil {
				return false
			}
			n += paramBytes(p)
		}
	}
	return n == q.plan.need[arBytes]
}

// Commit does nothing: Submit commits every value.
func (d *dev) Commit(v uint64) device.SubmitAnswer {
	return device.SubmitAnswer{Kind: device.Committed}
}

// Settle appends the stamps of the timed values completed since the last
// Settle, in value order.
func (d *dev) Settle(into []device.Stamp) ([]device.Stamp, error) {
	q := &d.q
	q.stampMu.Lock()
	defer q.stampMu.Unlock()
	return q.stamps.Take(into), nil
}

// stamp records the stamp of the timed value sl, on the sequencer.
func (q *queues) stamp(sl *slot) {
	st := device.Stamp{Value: sl.value, Queue: sl.endQueue, Start: sl.start, End: sl.end}
	q.stampMu.Lock()
	// Where nobody settles, the stamp takes the oldest one's place.
	q.stamps.Add(st, maxStamps)
	q.stampMu.Unlock()
}
