package nvdev

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Channels. make opens the device's channel group and its two channels;
// a regrowth opens another set, as make does, whose rings hold more entries.
//
// The RM fixes the entries of a channel's ring as it allocates the
// channel, so for parts that take more entries than a channel's ring holds
// Room returns RoomGrow, and Grow opens two channels anew in a new channel
// group: each ring holds the least power of two of entries that holds twice
// what the parts take, at most 2^31, and no fewer than the newest
// channels'. Grow runs their first words (the engines' binding and the
// windows; the local memory follows with the next submission on the
// compute channel) and keeps the set aside. The next Room returns
// RoomLater until the word has reached every value submitted and the copy
// channel every upload; it then puts the new set in place, with the
// segment and launch rings a growth made, and the next submissions start
// on it. The set it replaced goes back at the device's next growth or
// allocation that finds no goroutine reading it (reapSets): its
// registrations, its channel group (with its channels and objects), its
// debugger and its memory. A set the RM refuses to free stays, with its
// memory, until Stop. Each regrowth at least doubles a ring (both
// rings take the larger's entries), from 262,144 entries to at most 2^31,
// so a device keeps at most 13 replaced sets (the bound is 26). A path
// or RM that lacks the memory returns Short, and the device keeps its
// channels. A failed regrowth whose undo the RM refuses (a channel group
// it does not free) keeps what it could not undo, with the memory made
// before it, until Stop, which gives it back once the path has stopped.

// chanSet is a channel group, its two channels and its debugger: a
// group of its own (tsg), or its context share in the GPU's shared group
// (grp, group.go).
type chanSet struct {
	tsg, debugger nvidia.Handle
	grp           *sharedGroup
	ctxShare      nvidia.Handle
	ch            [2]*channel
	// kept is set once a regrowth replaced the set and the RM refused to
	// free it: it stays, with its memory, until Stop.
	kept bool
}

// openChannels opens a channel group and its two channels, whose rings
// hold minEntries entries; each channel's marks start after marks[q]. At
// make (no set is live yet) a ring the RM refuses is retried at
// fallbackEntries; a regrowth's channels hold the entries the parts need
// or are not made. It appends what it made to undo, in the order it made
// it; what names the caller in errors.
func (d *gpu) openChannels(minEntries int, marks [2]uint64, what string, wait bool, undo *[]func() error) (_ *chanSet, err error) {
	p, rm, c := d.p, d.rm, d.cfg
	pg := p.GPU()
	alloc := func(k device.Memory, n int) (*nvidia.Memory, error) {
		m, err := p.Alloc(k, n)
		if err != nil {
			return nil, fmt.Errorf("nvdev: %s: %d bytes of %v memory: %w", what, n, k, err)
		}
		*undo = append(*undo, func() error { return p.Free(m) })
		return m, nil
	}
	set := &chanSet{}
	// Memory: each channel's ring and USERD in Mapped memory (Pinned with
	// PinnedRings), its notifier and mark in Pinned memory, its segment
	// ring in Mapped memory where the BAR has room.
	ringBytes := minEntries*8 + 4096
	for q := range set.ch {
		ch := &channel{q: q, name: [2]string{"COMPUTE", "COPY"}[q], entries: uint64(minEntries), marks: marks[q]}
		ringKind := device.MappedMemory
		if c.PinnedRings || c.pin&pinRing != 0 {
			ringKind = device.PinnedMemory
		}
		if ch.ring, err = alloc(ringKind, ringBytes); err != nil {
			return nil, err
		}
		if ch.aux, err = alloc(device.PinnedMemory, auxSegments); err != nil {
			return nil, err
		}
		// The segment ring in Mapped memory where the BAR has room, as the
		// launch ring: the channel fetches its words from the GPU's own
		// memory.
		if d.mapped() && !c.PinnedSegments {
			if ch.seg0, err = alloc(device.MappedMemory, c.SegmentBytes); err != nil && !lacks(err) {
				return nil, err
			}
		}
		if ch.seg0 == nil {
			if ch.seg0, err = alloc(device.PinnedMemory, c.SegmentBytes); err != nil {
				return nil, err
			}
		}
		ch.gp = unsafe.Slice((*uint64)(ptrAt(ch.ring.Host)), minEntries)
		ch.gpPut = (*uint32)(ptrAt(ch.ring.Host + uintptr(minEntries*8) + 0x8c))
		ch.notifier = (*[4]uint32)(ptrAt(ch.aux.Host + auxNotifier))
		ch.mark = (*uint64)(ptrAt(ch.aux.Host + auxMark))
		atomic.StoreUint64(ch.mark, marks[q])
		ch.markGPU = ch.aux.Address + auxMark
		ch.seg = hostWords(ch.seg0, 0, c.SegmentBytes/4)
		ch.segGPU = ch.seg0.Address
		set.ch[q] = ch
	}

	// The RM's objects: a channel group on GR with a context share, and
	// the two channels in it.
	rmAlloc := func(name string, parent nvidia.Handle, class uint32, params []byte) (nvidia.Handle, error) {
		h, err := rm.Alloc(parent, class, params)
		if err != nil {
			return 0, fmt.Errorf("nvdev: %s: %s: %w", what, name, err)
		}
		return h, nil
	}
	var tsg nvidia.Handle
	if !c.SharedGroup {
		if set.tsg, err = rmAlloc("channel group", p.Device(), nvidia.ClassChannelGroup,
			nvidia.Bytes(&nvidia.ChannelGroupAllocParams{EngineType: nvidia.EngineGraphics})); err != nil {
			return nil, err
		}
		tsg = set.tsg
		*undo = append(*undo, func() error { return rm.Free(p.Device(), tsg) })
	} else {
		// The GPU's shared group: the set's own context share and
		// channels in it, which the undo frees one by one.
		g, err := joinGroup(p, rm, set, what, d.grp)
		if err != nil {
			return nil, err
		}
		set.grp, tsg = g, g.tsg
		*undo = append(*undo, func() error { return g.leave(rm, set) })
	}
	ctxShare, err := rmAlloc("context share", tsg, nvidia.ClassContextShare,
		nvidia.Bytes(&nvidia.CtxShareAllocParams{VASpace: p.VASpace(), Flags: nvidia.CtxShareAsync}))
	if err != nil {
		return nil, err
	}
	if set.grp != nil {
		set.ctxShare = ctxShare
		*undo = append(*undo, func() error { return rm.Free(tsg, ctxShare) })
		for _, ch := range set.ch {
			*undo = append(*undo, func() error {
				if ch.h == 0 {
					return nil
				}
				return rm.Free(tsg, ch.h)
			})
		}
	}
	tries := []uint64{uint64(minEntries)}
	if d.live.Load() == nil && minEntries > fallbackEntries {
		// The RM may bound a ring's entries: at make, a refusal of the
		// default 262,144 retries with tinygrad's 65,536 (docs/nvdev.md). A
		// regrowth's smaller ring would not hold the parts it is for.
		tries = append(tries, fallbackEntries)
	}
	// Runqueues. The channels of a group on one runqueue share one PBDMA.
	// When an acquire fails it turns to another channel of the group only
	// until it has gone once round them all (dev_pbdma.ref, SEM_EXECUTE,
	// "Semaphore switch option"); after that it polls the one acquire
	// until the group is switched out, and a group alone on its runlist
	// (one device on a GPU) stays on. A copy channel that waited on
	// another GPU's word, then on the compute channel's value, could so
	// hold the PBDMA for good while the compute channel's acquire was met.
	// The copy channel runs on the second runqueue (the runlist's second
	// PBDMA, with a copy engine of GR of its own) where the RM gives it
	// one, on the first otherwise.
	//
	// The timelines of the shared group take turns on those PBDMAs: an odd
	// timeline's compute channel runs on the second runqueue and its copy
	// channel on the first, so that half the timelines' launches come
	// through each PBDMA. With every compute channel on the first, four
	// timelines of 16 goroutines made 0.73M to 0.83M values a second
	// whatever their load (2 to 8 timelines, depth 1 to 4, CPU to spare),
	// one PBDMA fetching every value's words; with half on each, 1.07M to
	// 1.18M on the H200 (docs/nvdev.md). Where the RM gives the compute
	// engine no second runqueue, the channels take the places above.
	computeOne := c.SharedGroup && c.Timeline%2 == 1 && !c.OneRunqueue
	chanParams := func(ch *channel, entries uint64, flags uint32) []byte {
		cp := nvidia.ChannelAllocParams{
			ObjectError:   ch.aux.Handle,
			ObjectBuffer:  ch.ring.Handle,
			GPFIFOOffset:  ch.ring.Address,
			GPFIFOEntries: uint32(entries),
			Flags:         flags,
			ContextShare:  ctxShare,
		}
		cp.UserdMemory[0] = ch.ring.Handle
		cp.UserdOffset[0] = uint64(minEntries) * 8
		return nvidia.Bytes(&cp)
	}
	for _, ch := range set.ch {
		flags := []uint32{0}
		switch {
		case ch.q == qCompute && computeOne:
			flags = []uint32{nvidia.ChannelRunqueueOne, 0}
		case ch.q == qCopy && set.ch[qCompute].flags != 0:
			// The compute channel took the second runqueue.
		case ch.q == qCopy && !c.OneRunqueue:
			flags = []uint32{nvidia.ChannelRunqueueOne, 0}
		}
	made:
		for _, fl := range flags {
			for _, entries := range tries {
				if ch.h, err = rmAlloc(ch.name+" channel", tsg, pg.Channel, chanParams(ch, entries, fl)); err == nil {
					ch.entries, ch.flags = entries, fl
					break made
				}
				if _, ok := device.AsFault(err); ok {
					return nil, err
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	// move makes channel ch again, on the runqueue flags names.
	move := func(ch *channel, flags uint32) (err error) {
		if err = rm.Free(tsg, ch.h); err != nil {
			return err
		}
		ch.h = 0
		if ch.h, err = rmAlloc(ch.name+" channel", tsg, pg.Channel, chanParams(ch, ch.entries, flags)); err == nil {
			ch.flags = flags
		}
		return err
	}
	kc, cc := set.ch[qCompute], set.ch[qCopy]
	compute, err := rmAlloc("compute object", kc.h, pg.Compute, nil)
	if _, fault := device.AsFault(err); err != nil && !fault && kc.flags != 0 {
		// No compute engine on the second runqueue: the compute channel
		// moves to the first and the copy channel to the second.
		if err = move(kc, 0); err == nil && cc.flags == 0 {
			err = move(cc, nvidia.ChannelRunqueueOne)
		}
		if err == nil {
			compute, err = rmAlloc("compute object", kc.h, pg.Compute, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	// A copy engine on the compute channel too, unless the configuration
	// says otherwise, so that copies run on either queue; without it a copy
	// of bytes on COMPUTE:0 is refused.
	if d.copyOnCompute {
		if _, err = rmAlloc("copy object on the compute channel", set.ch[qCompute].h, pg.Copy, nil); err != nil {
			return nil, err
		}
	}
	_, err = rmAlloc("copy object", cc.h, pg.Copy, nil)
	if _, fault := device.AsFault(err); err != nil && !fault && cc.flags != 0 {
		// No copy engine of GR on the second runqueue: the copy channel
		// moves to the first.
		if err = move(cc, 0); err == nil {
			_, err = rmAlloc("copy object", cc.h, pg.Copy, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	// The debugger reads the SMs' errors and the MMU's faults after a fault;
	// a device without one reports the notifiers alone.
	if h, derr := rm.Alloc(p.Device(), nvidia.ClassDebugger,
		nvidia.Bytes(&nvidia.DebuggerAllocParams{AppClient: rm.Client(), Class3DObject: compute})); derr == nil {
		set.debugger = h
		*undo = append(*undo, func() error { return rm.Free(p.Device(), h) })
	}
	for _, ch := range set.ch {
		if ch.token, err = rm.Token(ch.h); err != nil {
			return nil, fmt.Errorf("nvdev: %s: work submit token of the %s channel: %w", what, ch.name, err)
		}
	}
	for _, ch := range set.ch {
		if err = p.Register(ch.h); err != nil {
			return nil, fmt.Errorf("nvdev: %s: registering the %s channel: %w", what, ch.name, err)
		}
		ch.registered = true
		h := ch.h
		*undo = append(*undo, func() error { return p.Unregister(h) })
	}
	if set.grp != nil {
		err = set.grp.schedule(rm, set)
	} else {
		err = rm.Schedule(tsg, &nvidia.ScheduleParams{Enable: 1})
	}
	if err != nil {
		return nil, fmt.Errorf("nvdev: %s: scheduling the channel group: %w", what, err)
	}
	if err = d.setup(set.ch, wait); err != nil {
		return nil, fmt.Errorf("nvdev: %s: %w", what, err)
	}
	return set, nil
}

// closeSet ends the set's registrations and frees its debugger and its
// channel group, with the channels and objects under it, which makes the
// RM preempt their work; a set in the GPU's shared group frees its
// channels and context share, and leaves the group. It reports whether every step succeeded; its
// memory is the caller's to give back. A later call (Stop, for a set the
// RM refused to free) retries the group's free alone.
func (d *gpu) closeSet(set *chanSet) (clean bool) {
	clean = true
	for _, ch := range set.ch {
		if ch.registered {
			if err := d.p.Unregister(ch.h); err != nil {
				clean = false
			}
			ch.registered = false
		}
	}
	if set.debugger != 0 {
		_ = d.rm.Free(d.p.Device(), set.debugger)
		set.debugger = 0
	}
	if set.tsg != 0 {
		if err := d.rm.Free(d.p.Device(), set.tsg); err != nil {
			return false
		}
		set.tsg = 0
	}
	if g := set.grp; g != nil {
		// The set's channels and context share, then its count in the
		// shared group, which the last set frees.
		for _, ch := range set.ch {
			if ch.h != 0 {
				if err := d.rm.Free(g.tsg, ch.h); err != nil {
					return false
				}
				ch.h = 0
			}
		}
		if set.ctxShare != 0 {
			if err := d.rm.Free(g.tsg, set.ctxShare); err != nil {
				return false
			}
			set.ctxShare = 0
		}
		if err := g.leave(d.rm, set); err != nil {
			clean = false
		}
		set.grp = nil
	}
	return clean
}

// setMemory is the memory a set's channels hold.
func setMemory(set *chanSet) []*nvidia.Memory {
	var ms []*nvidia.Memory
	for _, ch := range set.ch {
		ms = append(ms, ch.ring, ch.aux, ch.seg0)
		if ch.segMem != nil {
			ms = append(ms, ch.segMem)
		}
		if ch.oldSeg != nil {
			ms = append(ms, ch.oldSeg)
		}
	}
	return ms
}

// undoUntil undoes what undo made, the last made first, and stops at the
// first step that fails, whose error it returns with the steps that stay
// undone: that step and those of what was made before it, which stays,
// since the object it could not free may name it (a channel group the RM
// keeps keeps its channels, which name their rings, USERD and notifiers).
// It returns nil, nil where every step undid its part.
func undoUntil(undo []func() error) ([]func() error, error) {
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i](); err != nil {
			return undo[:i+1], fmt.Errorf("%w, and what was made before it", err)
		}
	}
	return nil, nil
}

// regrowEntries is the entries of the channels a regrowth opens for parts
// that take need[q] entries of channel q's ring: the least power of two
// that holds twice the most, at most 2^31, no fewer than the newest
// channels'.
func (d *gpu) regrowEntries(need [2]uint64) int {
	n := uint64(0)
	for q, e := range need {
		n = max(n, e, d.ch[q].entries)
	}
	if 2*n > 1<<31 {
		return int(min(1<<31, math.MaxInt)) // 2^31; an int of 32 bits builds, and the path refuses to open there
	}
	if e := uint64(1) << bits.Len64(2*n-1); e > n {
		return int(e)
	}
	return int(n)
}

// regrow opens the channels a regrowth makes, and keeps them aside. The
// caller holds mu.
func (d *gpu) regrow(need [2]uint64) error {
	entries := d.regrowEntries(need)
	if g := d.grown.set; g != nil {
		if int(g.ch[0].entries) >= entries && int(g.ch[1].entries) >= entries {
			return nil
		}
	}
	var undo []func() error
	set, err := d.openChannels(entries, [2]uint64{d.ch[0].marks, d.ch[1].marks}, "growing the channels", false, &undo)
	if err != nil {
		if left, u := undoUntil(undo); u != nil {
			err = fmt.Errorf("%w; what stays: %w", err, u)
			// What the RM kept names the memory made before it: it
			// goes back at Stop, once the path has stopped.
			d.undone = append(d.undone, left...)
		}
		if _, ok := device.AsFault(err); ok {
			return err
		}
		if errors.Is(err, device.ErrNoMemory) || errors.Is(err, nvidia.ErrLacking) {
			return &device.Short{N: int64(2 * (entries*8 + 4096))}
		}
		return err
	}
	if g := d.grown.set; g != nil {
		d.oldSets = append(d.oldSets, g)
		d.setsOld.Store(true)
	}
	d.grown.set = set
	return nil
}

// switchChannels puts the set a regrowth opened in place once the word has
// reached every value submitted, the copy channel every upload, and the
// new channels their first words, and reports whether it did. The caller
// holds mu.
func (d *gpu) switchChannels(w uint64) bool {
	set := d.grown.set
	if !device.AtLeast(w, d.last) || !device.AtLeast(atomic.LoadUint64(d.ch[qCopy].mark), d.upMark) || !set.ready() {
		return false
	}
	d.grown.set = nil
	d.oldSets = append(d.oldSets, d.live.Load())
	d.setsOld.Store(true)
	// The staging of uploads is past: it goes back with the next reap.
	// So are the uploads that rings retired before were kept for: their
	// marks, of the old copy channel, give way to the new channel's
	// mark its first words released, which it reached (ready), where the
	// new channel's marks, counted on from the old one's as the
	// regrowth opened it, could stay below them until later uploads.
	d.retMu.Lock()
	for _, s := range d.staging {
		d.retired = append(d.retired, retired{m: s.m, until: d.last})
	}
	d.staging = d.staging[:0]
	clear(d.laying)
	for i := range d.retired {
		d.retired[i].mark = set.ch[qCopy].marks
	}
	d.ch = set.ch
	// No Kick touches the old set from here on: regrowth frees it.
	d.kickMu.Lock()
	d.live.Store(set)
	d.kickMu.Unlock()
	d.retMu.Unlock()
	// The new compute channel owes its local memory, and runs no launch
	// that released a value without a wait for idle.
	d.applied, d.lastOwn, d.layPending = nil, false, false
	d.upMark, d.upAcquired = d.ch[qCopy].marks, d.ch[qCopy].marks
	d.icache.Store(true)
	d.recs[d.last%records] = d.record()
	// The segment and launch rings a growth made for the submission
	// go to the new channels.
	d.install(w)
	return true
}

// reapSets gives back the channel sets a regrowth replaced. A set the RM
// refuses to free stays in oldSets, kept, with its memory, which its
// channels may still read, until Stop retries it and gives the memory
// back once the RM freed the set or the path stopped. While a goroutine
// reads a set it loaded from live without mu (liveSet: the supervisor's
// Sleep and ReadFault), which may be one of these, it gives back none:
// they stay in oldSets, and the next growth or allocation, or Stop, gives
// them back. The caller holds mu.
func (d *gpu) reapSets() {
	if d.liveReaders.Load() != 0 {
		return
	}
	keep := d.oldSets[:0]
	for _, set := range d.oldSets {
		if !set.kept && d.closeSet(set) {
			for _, m := range setMemory(set) {
				_ = d.p.Free(m)
			}
			continue
		}
		set.kept = true
		keep = append(keep, set)
	}
	clear(d.oldSets[len(keep):])
	d.oldSets = keep
	d.setsOld.Store(false)
}
