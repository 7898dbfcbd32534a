package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/reclaim"
)

// Buffer is memory of a device: an allocation (Alloc) or host memory the
// device borrows (MapHost).
//
// A buffer is freed by Free, or by the garbage collector once nothing
// reaches it; either way its memory goes back to the device only once
// every point of work that uses it is reached. Work of another device uses
// it through a mapping that rig makes at that device's first use (the
// driver's MapPeer).
//
// A Buffer is safe for use by any goroutine: submissions of several
// goroutines, and of several devices, may use it at once, and rig orders
// their work by how each uses it (Ref). Its Bytes are the caller's to
// order against that work (Point.Wait).
type Buffer struct {
	s *bufState
}

// bufState is a buffer's state, which its cleanup and the device's close
// reach without reaching the Buffer.
type bufState struct {
	id     uint64
	d      *Device
	kind   device.Memory
	n      int   // the caller's length
	size   int64 // bytes counted against the budget
	region device.Region
	loc    device.Location
	off    uint64 // the caller's first byte's distance from the region's
	pin    []byte // host memory a MapHost borrows, kept alive; never changed
	host   []byte // the host's view of an allocation, or nil; never changed

	// mu guards the hazards, the views and freed. Submissions take the
	// locks of their buffers in id order, after their device's submit lock.
	mu        sync.Mutex
	lastWrite Point
	reads     []Point // the reads since lastWrite, at most one per device
	// before are the uses of other devices than lastWrite's that the work
	// of lastWrite (or of a write before it) waits for on its device's
	// side, and that had not passed when it was recorded, at most one per
	// device. A point passed by its device's stop or loss, rather than
	// by its work, says nothing of the uses its work waited for: Due and
	// later writes wait for these too.
	before   []Point
	views    map[*Device]view
	freed    bool
	released atomic.Bool
	// using counts the driver calls that read the region under way (a
	// peer mapping, a DMA: use); a release that finds one leaves the
	// region's giving back to the last of them (owed), so that no driver
	// frees the region while another call reads it. Guarded by mu.
	using int
	owed  bool
	// viewsOut counts the views mapped and not yet freed; regionLeft says
	// that the release left the region's giving back to the drop of the
	// last of them (giveBack). Guarded by mu.
	viewsOut   int
	regionLeft bool
}

type view struct {
	region device.Region
	loc    device.Location
}

var bufIDs atomic.Uint64

// Alloc allocates n bytes of memory of kind on the device. Where the driver
// or the budget lacks memory it runs the rounds of reclamation, and returns
// an error matching ErrOutOfMemory after the last, or the device's loss or
// close where one comes during the rounds; more bytes than the
// device's whole budget return that error at once, and a kind of memory
// the device has none of (Facts.Kinds) one matching device.ErrNoMemory.
// An n below 1, or a kind that is no kind of memory, returns an error
// matching ErrInvalid.
func (d *Device) Alloc(kind Memory, n int) (*Buffer, error) {
	return d.alloc(context.Background(), kind, n)
}

// alloc is Alloc, whose rounds of reclamation end where ctx ends: the
// allocation then returns an error wrapping ctx's.
func (d *Device) alloc(ctx context.Context, kind device.Memory, n int) (*Buffer, error) {
	if err := d.made("alloc"); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("rig: alloc of %d bytes of %s memory on %s: a buffer holds at least one byte: %w", n, kind, d.name, ErrInvalid)
	}
	if kind > device.MappedMemory {
		return nil, fmt.Errorf("rig: alloc of %d bytes on %s: %d is no kind of memory: %w", n, d.name, kind, ErrInvalid)
	}
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	if !d.facts.Kinds.Has(kind) {
		return nil, fmt.Errorf("rig: alloc of %d bytes on %s: the device has no %s memory: %w", n, d.name, kind, device.ErrNoMemory)
	}
	if limit := d.budget.Limit(); n > math.MaxInt-3 || (limit > 0 && int64(n) > limit) {
		// No reclamation makes room for more than the whole budget, and
		// no device holds the bytes of a length that rounding overflows.
		lack := int64(n)
		if limit > 0 {
			lack -= limit
		}
		return nil, &OutOfMemoryError{Device: d.name, What: fmt.Sprintf("%d bytes of %s memory", n, kind), Lacking: max(lack, 1), atOnce: true}
	}
	size := (n + 3) &^ 3
	r, err := d.allocRegion(ctx, kind, size)
	if err != nil {
		return nil, err
	}
	s := &bufState{kind: kind, n: n, size: d.charge(size), region: r, loc: d.drv.Locate(r)}
	if s.loc.Host != 0 {
		s.host = hostBytes(s.loc.Host, n)
	}
	return d.track(s)
}

// charge is what a region of size bytes takes from the device's budget:
// whole units of the driver's alignment (Facts.Alignment), as its
// allocator takes them (the host driver's pages), so that Budget and
// Stats count what the driver holds and a full budget is refused here,
// with what it lacks, rather than by the driver.
func (d *Device) charge(size int) int64 {
	a := int64(max(d.facts.Alignment, 4))
	if int64(size) > math.MaxInt64-a {
		return math.MaxInt64
	}
	return (int64(size) + a - 1) / a * a
}

// allocRegion allocates size bytes through the driver, within the budget,
// to which they count as charge says, running the rounds of reclamation,
// which end where ctx ends.
func (d *Device) allocRegion(ctx context.Context, kind device.Memory, size int) (device.Region, error) {
	charge := d.charge(size)
	if limit := d.budget.Limit(); limit > 0 && charge > limit {
		// No reclamation makes room for more than the whole budget: an
		// image's place, or a length that rounding took past it.
		return nil, &OutOfMemoryError{Device: d.name, What: fmt.Sprintf("%d bytes of %s memory", size, kind), Lacking: charge - limit, atOnce: true}
	}
	var region device.Region
	lack, err := reclaim.Retry(func() (int64, error) {
		// A loss or a Close during a round ends the rounds: the
		// allocation returns it, rather than an out-of-memory error
		// after the rounds left, and asks a lost driver for nothing.
		if err := d.usable(); err != nil {
			return 0, err
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if l := d.budget.Take(charge); l > 0 {
			return l, nil
		}
		r, err := d.drv.Alloc(kind, size)
		if err != nil {
			d.budget.Give(charge)
			if errors.Is(err, device.ErrNoMemory) {
				return charge, nil
			}
			return 0, d.fault(err)
		}
		region = r
		return 0, nil
	}, func(i int) { d.reclaimRoundCtx(ctx, i) })
	if err != nil {
		return nil, fmt.Errorf("rig: alloc of %d bytes of %s memory on %s: %w", size, kind, d.name, err)
	}
	if lack > 0 {
		return nil, &OutOfMemoryError{Device: d.name, What: fmt.Sprintf("%d bytes of %s memory", size, kind), Lacking: lack}
	}
	return region, nil
}

// reclaimRound is round i of reclamation on the device.
func (d *Device) reclaimRound(i int) { d.reclaimRoundCtx(context.Background(), i) }

// reclaimRoundCtx is round i of reclamation on the device, whose wait for
// the device's work ends where ctx ends.
func (d *Device) reclaimRoundCtx(ctx context.Context, i int) {
	d.stats.reclaimRounds.Add(1)
	logEvent(slog.LevelInfo, "rig: reclamation round", "device", d.name, "round", i+1)
	switch i {
	case 0:
	case 1:
		// Wait for the work that holds deferred frees.
		d.waitQuiet(ctx, time.Duration(max(d.facts.HangMs, 5000))*time.Millisecond)
	default:
		reclaim.Collect(100 * time.Millisecond)
	}
	d.deferred.Sweep()
}

// waitQuiet waits up to limit for the last value submitted, or until ctx
// ends or the device is lost or closed: its callers hold callMu, which a
// Close waits for, and Close does not wait for the device's work.
func (d *Device) waitQuiet(ctx context.Context, limit time.Duration) {
	last := d.last.Load()
	end := time.Now().Add(limit)
	for wait := 20 * time.Microsecond; !device.AtLeast(d.read(), last) && time.Now().Before(end); wait = min(2*wait, 5*time.Millisecond) {
		if d.loss.Load() != nil || d.closing.Load() || ctx.Err() != nil {
			return
		}
		time.Sleep(wait)
	}
}

// track registers a buffer with its device and the garbage collector.
func (d *Device) track(s *bufState) (*Buffer, error) {
	s.id = bufIDs.Add(1)
	s.d = d
	d.stats.bytes[s.kind].Add(s.size)
	d.objMu.Lock()
	if d.buffers == nil {
		d.objMu.Unlock()
		s.release()
		return nil, d.closed
	}
	d.buffers[s] = struct{}{}
	d.objMu.Unlock()
	b := &Buffer{s: s}
	runtime.AddCleanup(b, func(s *bufState) { s.free() }, s)
	return b, nil
}

// MapHost lets the device's work use the host memory of b, without a copy.
// The device maps the whole pages that hold b, and b must stay unchanged
// in length and place until the buffer is freed: rig keeps it reachable.
// The buffer's Kind is PinnedMemory. An empty b returns an error matching
// ErrInvalid, and a device that maps no host memory (Facts.MapsHost
// false, as on hostdev unless its Config.MapsHost is set) one matching
// device.ErrNever.
func (d *Device) MapHost(b []byte) (*Buffer, error) {
	if err := d.made("map of host memory"); err != nil {
		return nil, err
	}
	if len(b) < 1 {
		return nil, fmt.Errorf("rig: map of host memory on %s: a buffer holds at least one byte: %w", d.name, ErrInvalid)
	}
	if !d.facts.MapsHost {
		return nil, fmt.Errorf("rig: map of host memory on %s, whose driver maps none (Facts.MapsHost is false; hostdev maps where its Config.MapsHost is set): %w", d.name, device.ErrNever)
	}
	if err := d.begin(); err != nil {
		return nil, err
	}
	defer d.end()
	page := uintptr(os.Getpagesize())
	p := uintptr(unsafe.Pointer(&b[0]))
	start := p &^ (page - 1)
	n := int(p + uintptr(len(b)) - start)
	r, err := d.drv.MapHost(start, n)
	if err != nil {
		return nil, fmt.Errorf("rig: map of %d bytes of host memory at %#x on %s: %w", len(b), p, d.name, d.fault(err))
	}
	return d.track(&bufState{kind: device.PinnedMemory, n: len(b), region: r, loc: d.drv.Locate(r), off: uint64(p - start), pin: b})
}

// zero reports whether b is nil or a zero Buffer, which no Alloc or
// MapHost made: its accessors return zero values, and its calls errors
// matching ErrInvalid.
func (b *Buffer) zero() bool { return b == nil || b.s == nil }

// Len is the buffer's length in bytes; 0 for a nil or zero Buffer.
func (b *Buffer) Len() int {
	if b.zero() {
		return 0
	}
	return b.s.n
}

// Kind is the buffer's kind of memory; 0 for a nil or zero Buffer.
func (b *Buffer) Kind() Memory {
	if b.zero() {
		return 0
	}
	return b.s.kind
}

// Device is the buffer's device; nil for a nil or zero Buffer.
func (b *Buffer) Device() *Device {
	if b.zero() {
		return nil
	}
	return b.s.d
}

// Address is the address of the buffer's first byte as its device's work
// sees it; 0 for a nil or zero Buffer.
func (b *Buffer) Address() uint64 {
	if b.zero() {
		return 0
	}
	return b.s.loc.Address + b.s.off
}

// Bytes is the buffer's memory as the host addresses it, or nil where the
// host does not address it (Device memory on a GPU). Each call returns the
// same slice. Reading it is safe once the points of the work that wrote it
// are reached, and work that the buffer may still run (its points not
// reached) races with the host's reads and writes of it.
//
// The slice stays valid for as long as Go code holds it, also after Free
// and after the Buffer is collected: the memory never goes back to the
// device or to another buffer under it, and reading or writing it never
// faults. Once the buffer is freed and its points are reached, the device
// no longer uses the memory, and what the slice reads is the memory's last
// contents (or, for the Mapped memory of a GPU that the driver unmaps, the
// bytes its Free names, such as zeros); writes to it reach no device. The
// memory itself goes back once neither the Buffer nor any slice of it is
// reachable. A MapHost buffer's slice is the caller's own. A nil or zero
// Buffer returns nil.
func (b *Buffer) Bytes() []byte {
	if b.zero() {
		return nil
	}
	if b.s.pin != nil {
		return b.s.pin
	}
	return b.s.host
}

// LastUse is the latest point of work that used the buffer: the read by
// work of the buffer's own device since the last write, where there is
// one, and the last write otherwise, on whichever device made it (points
// of two devices do not compare). Where only the buffer's device uses it,
// freeing it once that point is reached costs nothing; reads by other
// devices' work may end later, and Free waits for them as well. A nil or
// zero Buffer returns the zero Point, which is reached.
func (b *Buffer) LastUse() Point {
	if b.zero() {
		return Point{}
	}
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// The reads since the last write follow it, on any device: the
	// buffer's device's read, where there is one, is the later use.
	// (Values of two devices do not compare.)
	p := s.lastWrite
	for _, r := range s.reads {
		if r.d == s.d {
			return r
		}
	}
	return p
}

// Free gives the buffer back once every point of work that uses it is
// reached. Using it afterwards is an error; a second Free does nothing. A
// nil Buffer, or a zero one (neither Alloc nor MapHost made it), returns
// an error matching ErrInvalid.
func (b *Buffer) Free() error {
	if b.zero() {
		return fmt.Errorf("rig: free of a nil buffer: %w", ErrInvalid)
	}
	b.s.free()
	return nil
}

// free defers the release until the buffer's points are reached. A due
// buffer is released at once, inside callMu, which Close takes whole
// before the driver's Stop: a Free in flight ends before the stop, and
// once the device closes, the supervisor gives the buffer back, as it
// may call the driver's Free after Stop. The garbage collector's cleanup
// of a Buffer calls it too.
func (s *bufState) free() {
	s.mu.Lock()
	if s.freed {
		s.mu.Unlock()
		return
	}
	s.freed = true
	s.mu.Unlock()
	d := s.d
	// Freed, the buffer records no later use: a due buffer stays due. Due
	// takes s.mu, which comes before objMu; free holds no lock as it
	// calls it (a reclamation round takes s.mu inside callMu).
	due := s.Due()
	// TryRLock: Close is callMu's one writer and sets closing first, so a
	// failed TryRLock means the device closes, and the reaping gives the
	// buffer back; the garbage collector's cleanup never queues behind a
	// Close's wait for the counted calls.
	closing := true
	if d.callMu.TryRLock() {
		defer d.callMu.RUnlock()
		closing = d.closing.Load()
	}
	d.objMu.Lock()
	if d.buffers == nil {
		// The device was reaped, and released the buffer.
		d.objMu.Unlock()
		return
	}
	delete(d.buffers, s)
	if !due || closing {
		// Queued inside objMu: the reaping clears the device's lists
		// inside it and sweeps the deferred frees after, so a free is
		// either among its buffers or among its deferred frees.
		d.deferred.Add(s)
	}
	d.objMu.Unlock()
	if due && !closing {
		s.Release()
		return
	}
	d.sup.poke()
}

// Due reports whether every point that uses the buffer is reached.
func (s *bufState) Due() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastWrite.passed() {
		return false
	}
	for _, r := range s.reads {
		if !r.passed() {
			return false
		}
	}
	for _, r := range s.before {
		if !r.passed() {
			return false
		}
	}
	return true
}

// holdBefore keeps in before, as a write of device d is recorded, the
// uses of other devices that are not passed: those before already holds,
// the last write and the reads since. Uses of d itself pass before the
// write does, whatever ends d's work. s.mu is held.
func (s *bufState) holdBefore(d *Device) {
	k := 0
	for _, p := range s.before {
		if p.d != d && !p.passed() {
			s.before[k] = p
			k++
		}
	}
	clear(s.before[k:])
	s.before = s.before[:k]
	s.addBefore(d, s.lastWrite)
	for _, p := range s.reads {
		s.addBefore(d, p)
	}
}

// dropReapedReads drops from reads each read whose work ran on a device
// that has since closed and given everything back: nothing waits for it
// any more, and a buffer that is only read, as a model's weights are,
// would otherwise keep every such device, with its driver and queues,
// until its next write. A read that the device's Close or loss dropped
// stays, since writes refuse to follow it. s.mu is held.
func (s *bufState) dropReapedReads() {
	k := 0
	for _, p := range s.reads {
		if !p.d.reaped.Load() || p.d.passedAnswer(p.v) != nil {
			s.reads[k] = p
			k++
		}
	}
	clear(s.reads[k:])
	s.reads = s.reads[:k]
}

// addBefore adds p to before where it is a point of another device than d
// that is not passed, keeping the later of two points of one device.
func (s *bufState) addBefore(d *Device, p Point) {
	if p.d == nil || p.d == d || p.passed() {
		return
	}
	for i := range s.before {
		if s.before[i].d == p.d {
			if device.AtLeast(p.v, s.before[i].v) {
				s.before[i] = p
			}
			return
		}
	}
	s.before = append(s.before, p)
}

// Release gives the buffer's region back (reclaim.Item).
func (s *bufState) Release() { s.release() }

// release gives back the buffer's region and its views on other devices,
// or, where a driver call reads the region (use), leaves that to the last
// such call to end (done).
func (s *bufState) release() {
	if s.released.Swap(true) {
		return
	}
	s.mu.Lock()
	if s.using > 0 {
		s.owed = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.giveBack()
}

// use enters a driver call that reads the region: it returns false where
// the buffer was freed or released, and otherwise counts the call until
// done, so that a release meanwhile waits for it. The caller holds the
// callMu of the buffer's device, shared.
func (s *bufState) use() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed || s.released.Load() {
		return false
	}
	s.using++
	return true
}

// done ends a call that use entered, and gives the region back where a
// release came meanwhile and no other such call is under way: inside the
// callMu of the buffer's device, which the caller still holds.
func (s *bufState) done() {
	s.mu.Lock()
	s.using--
	owed := s.owed && s.using == 0
	if owed {
		s.owed = false
	}
	s.mu.Unlock()
	if owed {
		s.giveBack()
	}
}

// giveBack gives back the buffer's region and its views on other devices.
// A view of a device o is freed inside o's callMu, so that o's Close stops
// o's driver only after that Free; where o closes (its callMu taken whole,
// or o.closing), the view stays for o's reaping, which frees it after the
// stop (dropView). The first of the two to take the view from s.views
// frees it. TryRLock: a release inside d's callMu never waits for o's, so
// two devices' closes and releases never wait on each other. A view is
// freed before the region it maps: where views stay, the drop of the last
// of them gives the region back, and the reaping of the buffer's device
// waits for that before its Done.
func (s *bufState) giveBack() {
	s.mu.Lock()
	others := make([]*Device, 0, len(s.views))
	for o := range s.views {
		others = append(others, o)
	}
	s.mu.Unlock()
	for _, o := range others {
		if !o.callMu.TryRLock() {
			continue
		}
		if o.closing.Load() {
			o.callMu.RUnlock()
			continue
		}
		s.dropView(o)
		o.objMu.Lock()
		delete(o.views, s)
		o.objMu.Unlock()
		o.callMu.RUnlock()
	}
	s.mu.Lock()
	left := s.viewsOut > 0
	if left {
		s.regionLeft = true
		s.d.regionsLeft.Add(1)
	}
	s.mu.Unlock()
	if !left {
		s.freeRegion()
	}
}

// freeRegion gives the buffer's region back to its device's driver and
// budget.
func (s *bufState) freeRegion() {
	_ = s.d.drv.Free(s.region)
	s.d.budget.Give(s.size)
	s.d.stats.bytes[s.kind].Add(-s.size)
}

// dropView frees the view device o holds of the buffer, where it still
// holds one: at o's close, and at the buffer's release. The drop of the
// last view of a buffer whose release left it the region (giveBack) gives
// the region back too.
func (s *bufState) dropView(o *Device) {
	s.mu.Lock()
	v, ok := s.views[o]
	delete(s.views, o)
	s.mu.Unlock()
	if !ok {
		return
	}
	_ = o.drv.Free(v.region)
	s.mu.Lock()
	s.viewsOut--
	last := s.viewsOut == 0 && s.regionLeft
	if last {
		s.regionLeft = false
	}
	s.mu.Unlock()
	if last {
		s.freeLeft()
	}
}

// freeLeft gives back the region that the buffer's release left to the
// drop of its last view, which the reaping of the view's device made:
// inside the callMu of the buffer's device, so that its Close stops its
// driver only after the Free, as for the Free of a release; where that
// device closes, its own reaping frees the region after the stop (left),
// as its supervisor frees the rest.
func (s *bufState) freeLeft() {
	d := s.d
	if d.callMu.TryRLock() {
		if !d.closing.Load() {
			s.freeRegion()
			d.regionsLeft.Add(-1)
			d.callMu.RUnlock()
			return
		}
		d.callMu.RUnlock()
	}
	d.objMu.Lock()
	d.left = append(d.left, s)
	d.objMu.Unlock()
}

// on returns the region and location through which device o's work uses
// the buffer, mapping it for o at o's first use. Submitters of o call it
// holding no lock: of two that map the buffer at once, one mapping is
// kept and the other freed.
func (s *bufState) on(o *Device) (device.Region, device.Location, error) {
	if s.d == o {
		return s.region, s.loc, nil
	}
	s.mu.Lock()
	v, ok := s.views[o]
	s.mu.Unlock()
	if ok {
		return v.region, v.loc, nil
	}
	if err := s.gone(o); err != nil {
		return nil, device.Location{}, err
	}
	// The mapping, and its Free or its entry in o's views, inside o's
	// callMu: o's Close stops o's driver after them, and o's reaping
	// finds the view among o's views.
	if err := o.begin(); err != nil {
		return nil, device.Location{}, err
	}
	defer o.end()
	// The mapping reads the region of the buffer's device, inside that
	// device's callMu too: its Close stops its driver, and its reaping
	// frees the region, only after the mapping. TryRLock: it fails only
	// once that device closes (closing is set before Close takes callMu),
	// and a submitter never waits for another device's close, so that
	// two devices that map each other's buffers as both close never wait
	// on each other.
	if !s.d.callMu.TryRLock() {
		return nil, device.Location{}, s.closedFor(o)
	}
	defer s.d.callMu.RUnlock()
	if s.d.closing.Load() {
		return nil, device.Location{}, s.closedFor(o)
	}
	// Counted as it reads the region: a Free meanwhile gives the region
	// back only once the mapping returned, here.
	if !s.use() {
		return nil, device.Location{}, s.gone(o)
	}
	defer s.done()
	r, err := o.drv.MapPeer(s.d.drv, s.region)
	if err != nil {
		if gone := s.gone(o); gone != nil {
			// Freed or closed while it was mapped.
			return nil, device.Location{}, gone
		}
		return nil, device.Location{}, fmt.Errorf("rig: device %s cannot use a buffer of device %s: %w", o.name, s.d.name, o.fault(err))
	}
	v = view{region: r, loc: o.drv.Locate(r)}
	s.mu.Lock()
	if s.freed {
		// Freed while it was mapped: its release may have taken the
		// views already, and would not see this one.
		s.mu.Unlock()
		_ = o.drv.Free(r)
		return nil, device.Location{}, s.gone(o)
	}
	if old, ok := s.views[o]; ok {
		// Another submitter of o mapped it meanwhile: its view is the
		// one kept, and freed with the buffer.
		s.mu.Unlock()
		_ = o.drv.Free(r)
		return old.region, old.loc, nil
	}
	if s.views == nil {
		s.views = map[*Device]view{}
	}
	s.views[o] = v
	s.viewsOut++
	// Entered among o's views inside s.mu (s.mu comes before objMu): a
	// release, which takes the view under s.mu and then leaves o's
	// views, never runs between the two, so that no entry outlives it.
	o.objMu.Lock()
	if o.views != nil {
		o.views[s] = struct{}{}
	}
	o.objMu.Unlock()
	s.mu.Unlock()
	return v.region, v.loc, nil
}

// gone returns an error matching ErrFreed where the buffer was freed, or
// ErrClosed where its device was closed, for a use on device o; nil
// otherwise.
func (s *bufState) gone(o *Device) error {
	s.mu.Lock()
	freed := s.freed
	s.mu.Unlock()
	// A closed device marks its buffers freed as it gives them back: the
	// close is the cause to name.
	switch {
	case s.d.closing.Load():
		return s.closedFor(o)
	case freed || s.released.Load():
		return fmt.Errorf("rig: a buffer of %d bytes of device %s, used on %s: %w", s.n, s.d.name, o.name, ErrFreed)
	}
	return nil
}

// closedFor is the error of a use on device o of the buffer, whose device
// closed.
func (s *bufState) closedFor(o *Device) error {
	return fmt.Errorf("rig: a buffer of %d bytes of device %s, used on %s after its device closed: %w", s.n, s.d.name, o.name, ErrClosed)
}

// hostBytes is the n bytes of host memory at addr, which a driver's Locate
// gave for a live region: Go memory the driver holds until Free (which the
// slice then holds), or memory outside Go's heap that the driver keeps
// addressable for as long as the process runs (device/driver.go's
// Location.Host).
func hostBytes(addr uintptr, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// DMA returns how the PCI function at the bus address fn (such as
// "0000:41:00.0") reaches all of the buffer's bytes by DMA, or an error
// naming why it cannot. The buffer must be one Alloc made: for a MapHost
// buffer, a nil or a zero Buffer it returns an error matching ErrInvalid,
// and after Free one matching ErrFreed.
func (b *Buffer) DMA(fn string) (device.DMA, error) {
	if b.zero() {
		return device.DMA{}, fmt.Errorf("rig: dma of a nil buffer for %s: %w", fn, ErrInvalid)
	}
	s := b.s
	// The Buffer stays reachable until the driver's call returns: its
	// cleanup would otherwise free the region under the call.
	defer runtime.KeepAlive(b)
	if s.pin != nil {
		return device.DMA{}, fmt.Errorf("rig: dma of borrowed host memory on %s for %s: only memory Alloc made: %w", s.d.name, fn, ErrInvalid)
	}
	if err := s.d.begin(); err != nil {
		return device.DMA{}, err
	}
	defer s.d.end()
	if !s.use() {
		return device.DMA{}, fmt.Errorf("rig: dma of a buffer of %d bytes of %s for %s: %w", s.n, s.d.name, fn, ErrFreed)
	}
	r, err := s.d.drv.DMA(s.region, fn)
	s.done()
	if err != nil {
		return device.DMA{}, fmt.Errorf("rig: dma of a buffer of %s for %s: %w", s.d.name, fn, s.d.fault(err))
	}
	return r, nil
}
