package nvdev

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// The hot path. Room walks the submission once without writing, counting
// the words each channel's segment takes, the entries of each channel's
// ring and the bytes of the launch ring, and checks them against what the
// word says the channels have consumed. Submit walks it again with the
// same decisions, storing the words into the segment ring, the launches'
// constant banks and descriptors into the launch ring, the entries into the
// channels' rings, and publishes the rings' puts, which Kick stores into
// GPPut before it rings the doorbell (kick.go). None allocates.
//
// Order. Each value's work on a channel starts once every earlier value is
// complete: on the channel that released the last value, channel order
// gives it (that release waited for idle); on the other channel the value
// first acquires the word at the value before. A value that uses both
// channels ends on the channel of its last part (the ender); the other
// channel releases its mark word once its part of the value is complete,
// and the ender acquires that mark before it releases the value into the
// word. An After across channels is a mark of the earlier part's channel,
// which the later part's channel acquires. Between parts on one channel,
// a wait for idle follows each launch and each Words part, and a copy-engine
// flush and a wait for idle follow copies before other work, so that a
// part starts once the parts before it on its queue have completed; a
// launch right after a launch is linked to it instead (the descriptor
// before schedules it as it completes). A value of the compute channel
// alone whose last part is a launch may end with that launch's release of
// the value (release.go): no wait for idle follows it, so the next value's
// first part on the compute channel waits for idle first, and so does a
// new local memory, given to the channel before that part. A copy that
// runs as the driver's kernel runs on the compute channel whatever its
// queue, with marks keeping its queue's order (kernels.go).

// What a channel ran last within a value, for the barrier before a part.
const (
	prevIdle uint8 = iota // nothing since the channel last waited for idle
	prevLaunch
	prevCopy
	prevWords
)

// Word counts of the builders the walk uses.
const (
	wfiWords   = 2 // WaitForIdle
	flushWords = 2 // LAUNCH_DMA of nothing, flushed
	pcasWords  = hw.LaunchWords
	localWords = hw.LocalMemoryWords
	icWords    = 1 // InvalidateShaderCaches
	intrWords  = 2 // NonStallInterrupt
	yieldWords = 2 // YieldChannel
)

// cursor is a channel's state during a walk.
type cursor struct {
	used     bool
	segPos   uint64 // the next word (Submit: monotonic; Room: from 0)
	segStart uint64 // the open segment's first word
	tail     uint64 // where the words after the value's release begin
	put      uint64 // the next entry, monotonic
	base     uint64 // the extended base the ring's segments run at
	marks    uint64 // the channel's last mark
	prev     uint8
}

// walk is one pass over a submission.
type walk struct {
	d         *gpu
	s         *device.Submission
	emit      bool
	ender     int
	cur       [2]cursor
	launchPos uint64
	launches  uint64 // bytes of launch slots, skips left out
	icache    bool
	local     *localMem
	// own is set where the submission's last part, a launch, releases the
	// value itself (the descriptor's release slot).
	own bool
	// intr is set where the value raises the non-stall interrupt after
	// its release (wake.go).
	intr bool
	// upAcquire is the upload mark the compute channel acquired.
	upAcquire uint64
	last      bool // the walk is at the submission's last part
	// The last launch's descriptor, in the scratch d.qmd[slot^1] until
	// the next launch is known: its place in the launch ring, and where
	// the compute channel's words stood after it.
	pend             bool
	slot             int
	pendOff          uint64
	pendSeg, pendPut uint64
}

// partPlan is how the device runs a part: its channel, whether it is a
// copy that runs as a kernel (of bytes), and the part before it on its
// queue, or -1.
type partPlan struct {
	ch     int
	kernel bool
	bytes  uint64
	prevQ  int
}

// Room returns whether the queues hold s's parts now.
func (d *gpu) Room(s *device.Submission) device.RoomAnswer {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.room(s)
	if a.Kind != device.RoomOK {
		d.unplanInterrupt()
	}
	return a
}

// room is Room under mu.
func (d *gpu) room(s *device.Submission) device.RoomAnswer {
	if d.stopped.Load() {
		return never(-1, "the device is stopped")
	}
	if a, bad := d.check(s); bad {
		return a
	}
	d.planned = false
	w := atomic.LoadUint64(d.word)
	if s.Value-1-w >= maxInFlight {
		return device.RoomAnswer{Kind: device.RoomLater, Part: -1}
	}
	if s.Timed && d.prof.mem.Load() == nil {
		d.need.stamps = true
		return device.RoomAnswer{Kind: device.RoomGrow, Part: -1}
	}
	d.install(w)
	if g := d.grown.set; g != nil && !d.switchChannels(w) {
		if device.AtLeast(w, d.last) && !g.ready() {
			// Every value before is reached, and the new channels have
			// yet to run their first words: Grow waits for them.
			return device.RoomAnswer{Kind: device.RoomGrow, Part: -1}
		}
		// New channels wait for every value before.
		return device.RoomAnswer{Kind: device.RoomLater, Part: -1}
	}
	r := d.recs[w%records]
	fresh := device.AtLeast(w, d.last) && (!d.layPending || device.AtLeast(atomic.LoadUint64(d.ch[qCopy].mark), d.upMark))
	if fresh {
		// The channels consumed everything: the rings start over at their
		// beginning, so that a reservation that fits a ring never waits
		// on its place in it; but a ring whose last words after a release
		// may be unread keeps them, and its reservation goes on after
		// them (or to a new ring: below).
		for _, ch := range d.ch {
			if ch.tail == ch.segPos {
				ch.segPos = roundUp(ch.segPos, uint64(len(ch.seg)))
				ch.tail = ch.segPos
			}
		}
		d.launchPos = roundUp(d.launchPos, uint64(len(d.launchHost)))
		r = d.record()
		d.recs[d.last%records] = r
	}

	p := &d.plan
	*p = walk{d: d, s: s, icache: d.icache.Load(), local: d.local.Load(), intr: d.planInterrupt(s.Value)}
	p.run()
	var g need
	grow := false
	for q, ch := range d.ch {
		c := &p.cur[q]
		if !c.used {
			continue
		}
		e := c.put - ch.put
		if e > 1<<31-1 {
			return never(-1, "its parts take more than 2^31 - 1 entries of a channel's ring")
		}
		if e > ch.entries-1 {
			g.entries[q], grow = e, true
		}
		if n := c.segPos; n > uint64(len(ch.seg)) {
			g.seg[q], grow = n, true
		}
	}
	if p.launches > uint64(len(d.launchHost)) {
		g.launch, grow = p.launches, true
	}
	if grow {
		// Another submission's growth may be due before this one's
		// Grow runs (rig calls Grow outside its lock): the need holds
		// both.
		d.need.add(g)
		p.s = nil
		return device.RoomAnswer{Kind: device.RoomGrow, Part: -1}
	}
	for q, ch := range d.ch {
		c := &p.cur[q]
		if !c.used {
			continue
		}
		n, size, e := c.segPos, uint64(len(ch.seg)), c.put-ch.put
		pos := ch.segPos
		if off := pos % size; off+n > size {
			pos += size - off
		}
		if pos+n-r.seg[q] > size || ch.put+e-r.put[q] > ch.entries-1 {
			if fresh && ch.tail != ch.segPos && pos+n-r.seg[q] > size {
				// Nothing is in flight to read the last words after
				// its release: a ring of the reservation's size, fresh,
				// takes it, and this one goes once a later value ran.
				var g need
				g.seg[q] = n
				d.need.add(g)
				p.s = nil
				return device.RoomAnswer{Kind: device.RoomGrow, Part: -1}
			}
			return device.RoomAnswer{Kind: device.RoomLater, Part: -1}
		}
	}
	if p.launchPos-r.launch > uint64(len(d.launchHost)) {
		return device.RoomAnswer{Kind: device.RoomLater, Part: -1}
	}
	d.planned = true
	return device.RoomAnswer{Kind: device.RoomOK, Part: -1}
}

// never is a RoomNever answer.
func never(part int, why string) device.RoomAnswer {
	return device.RoomAnswer{Kind: device.RoomNever, Part: part, Reason: why}
}

// roundUp rounds x up to a multiple of n.
func roundUp(x, n uint64) uint64 { return (x + n - 1) / n * n }

// check returns RoomNever for parts the device does not run, and marks
// the parts whose completion a part of the other channel waits for.
func (d *gpu) check(s *device.Submission) (device.RoomAnswer, bool) {
	n := len(s.Parts)
	if cap(d.needMark) < n {
		d.needMark, d.partMarks, d.parts = make([]bool, n), make([]uint64, n), make([]partPlan, n)
	}
	d.needMark, d.partMarks, d.parts = d.needMark[:n], d.partMarks[:n], d.parts[:n]
	clear(d.needMark)
	lastOn := [2]int{-1, -1}
	for i := range s.Parts {
		p := &s.Parts[i]
		if p.Queue != qCompute && p.Queue != qCopy {
			return never(i, "a part on neither queue"), true
		}
		// The part's channel: its queue's, or the compute channel for a
		// copy that runs as a kernel.
		pp := &d.parts[i]
		*pp = partPlan{ch: p.Queue, prevQ: lastOn[p.Queue]}
		if b, ok := d.asKernel(p); ok {
			pp.ch, pp.kernel, pp.bytes = qCompute, true, b
		}
		lastOn[p.Queue] = i
		if j := pp.prevQ; j >= 0 && d.parts[j].ch != pp.ch {
			d.needMark[j] = true
		}
		if p.After < 0 {
			return never(i, "an after index below 0"), true
		}
		if p.After > 0 {
			j := p.After - 1
			if j >= i {
				return never(i, "an after index that is not below the part's own"), true
			}
			if d.parts[j].ch != pp.ch {
				d.needMark[j] = true
			}
		}
		switch p.Kind {
		case device.Launch:
			if p.Queue != qCompute {
				return never(i, "a launch on COPY:0"), true
			}
			f, ok := entryOf(p.Entry)
			if !ok || f.d != d {
				return never(i, "a launch of a function this device did not make"), true
			}
			if why := f.l.Check(p.Groups, p.Threads, p.Shared); why != "" {
				return never(i, why), true
			}
			if len(p.Params) < f.l.Kernel.ParamBytes {
				return never(i, fmt.Sprintf("fewer parameter bytes than the function reads (%d of %d)", len(p.Params), f.l.Kernel.ParamBytes)), true
			}
		case device.CopyRows:
			if p.Rows != 0 && p.RowBytes != 0 {
				if p.Queue == qCompute && !d.copyOnCompute && !pp.kernel {
					return never(i, "a copy of one byte or more on COMPUTE:0, which has no copy engine"), true
				}
				if why := checkCopy(p); why != "" {
					return never(i, why), true
				}
			}
		case device.Words:
			if len(p.Words)%2 != 0 {
				return never(i, "ring entries of an odd number of words"), true
			}
			if len(p.Words)/2 > 1<<31-1 {
				return never(i, "more than 2^31 - 1 ring entries"), true
			}
		default:
			return never(i, "a part that is no words, copy or launch"), true
		}
	}
	for _, wt := range s.Waits {
		if _, ok := d.gpuWord(wt.Word); !ok {
			return never(-1, "a wait on a word the device does not map"), true
		}
	}
	return device.RoomAnswer{}, false
}

// checkCopy is why the device does not run copy p, of one byte or more,
// or "": a region it did not make, rows of the destination that overlap,
// or rows past the end of either region. Bounded so, a copy's launches and
// words are counted without wrapping, and a fill's rows are no more than
// its region's bytes.
func checkCopy(p *device.Part) string {
	dst, ok := p.Dst.(*nvidia.Memory)
	if !ok || dst == nil {
		return "a copy to a region this device did not make"
	}
	if p.Rows > 1 && p.DstPitch < p.RowBytes {
		return fmt.Sprintf("a destination pitch of %d bytes, under the rows' %d", p.DstPitch, p.RowBytes)
	}
	if end, ok := rowsEnd(p.DstOffset, p.Rows, p.DstPitch, p.RowBytes); !ok || end > uint64(dst.Size) {
		return fmt.Sprintf("a copy of %d rows of %d bytes, %d bytes apart, from byte %d of its destination: past the region's %d bytes",
			p.Rows, p.RowBytes, p.DstPitch, p.DstOffset, dst.Size)
	}
	if p.Filling {
		if p.Fill32 {
			return p.Misfit32(dst.Address + p.DstOffset)
		}
		return ""
	}
	src, ok := p.Src.(*nvidia.Memory)
	if !ok || src == nil {
		return "a copy from a region this device did not make"
	}
	if p.Rows > 1 && p.SrcPitch < p.RowBytes {
		// Rows read that overlap, as cudadev refuses them: a program
		// runs alike on every driver.
		return fmt.Sprintf("a source pitch of %d bytes, under the rows' %d", p.SrcPitch, p.RowBytes)
	}
	if end, ok := rowsEnd(p.SrcOffset, p.Rows, p.SrcPitch, p.RowBytes); !ok || end > uint64(src.Size) {
		return fmt.Sprintf("a copy of %d rows of %d bytes, %d bytes apart, from byte %d of its source: past the region's %d bytes",
			p.Rows, p.RowBytes, p.SrcPitch, p.SrcOffset, src.Size)
	}
	return ""
}

// rowsEnd is one past the last byte of rows rows of n bytes, pitch bytes
// apart, from byte off, rows and n above 0, and whether it lies within
// 2^64.
func rowsEnd(off, rows, pitch, n uint64) (uint64, bool) {
	hi, lo := bits.Mul64(rows-1, pitch)
	end, c1 := bits.Add64(lo, n, 0)
	end, c2 := bits.Add64(end, off, 0)
	return end, hi == 0 && c1 == 0 && c2 == 0
}

// gpuWord is the GPU address of the host word w: a word of rig's array,
// or the device's own word.
func (d *gpu) gpuWord(w *uint64) (uint64, bool) {
	a := uintptr(unsafe.Pointer(w))
	switch {
	case a%8 != 0:
		return 0, false
	case d.array != nil && a >= d.arrayBase && a+8 <= d.arrayBase+d.arrayBytes:
		return d.array.Address + uint64(a-d.arrayBase), true
	case w == d.word:
		return d.wordGPU, true
	}
	return 0, false
}

// Submit hands s to the channels: it only stores to memory, and Kick
// makes the channels see it (kick.go).
func (d *gpu) Submit(s *device.Submission) device.SubmitAnswer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped.Load() {
		return device.SubmitAnswer{Kind: device.Failed, Reason: "submit after stop"}
	}
	if device.AtLeast(s.Value, d.given) {
		d.given = s.Value
	}
	p := &d.plan
	if !d.planned || p.s != s || p.emit {
		return device.SubmitAnswer{Kind: device.Failed, Reason: "submit without room"}
	}
	w := walk{d: d, s: s, emit: true, icache: p.icache, local: p.local, intr: p.intr}
	if s.Timed {
		var used uint8
		for q := range p.cur {
			if p.cur[q].used {
				used |= 1 << q
			}
		}
		d.timed(s.Value, endQueue(s, p.ender), used)
	}
	w.run()
	p.s, d.planned = nil, false
	for q, ch := range d.ch {
		c := &w.cur[q]
		if !c.used {
			continue
		}
		ch.segPos, ch.tail, ch.put, ch.base, ch.marks = c.segPos, c.tail, c.put, c.base, c.marks
		ch.published()
		if ch.oldSeg != nil {
			// The value's words on the channel follow those after its
			// last release on the replaced ring.
			d.retire(ch.oldSeg)
			ch.oldSeg = nil
		}
	}
	if w.cur[qCompute].used {
		if w.icache {
			d.icache.CompareAndSwap(true, false)
		}
		d.applied = w.local
		d.upAcquired = w.upAcquire
	}
	d.launchPos = w.launchPos
	d.last, d.lastEnder, d.lastOwn = s.Value, w.ender, w.own
	d.layPending = false
	d.recs[s.Value%records] = d.record()
	d.submittedInterrupt(s.Value, w.intr)
	if d.cfg.submitKicks {
		d.kickMu.Lock()
		d.kickNow()
		d.kickMu.Unlock()
	}
	return device.SubmitAnswer{Kind: device.Committed}
}

// run walks the submission.
func (w *walk) run() {
	d, s := w.d, w.s
	w.launchPos = d.launchPos
	w.ender = d.lastEnder
	w.upAcquire = d.upAcquired
	if n := len(s.Parts); n > 0 {
		w.ender = d.parts[n-1].ch
		w.own = !s.Timed && !w.intr && uint32(s.Value) != 0 && !d.cfg.NoOwnRelease && ownRelease.on &&
			(s.Parts[n-1].Kind == device.Launch || d.parts[n-1].kernel)
		for i := 0; w.own && i < n; i++ {
			w.own = d.parts[i].ch == qCompute
		}
	}
	for i := range s.Parts {
		p := &s.Parts[i]
		pp := &d.parts[i]
		c := pp.ch
		w.open(c)
		after := -1
		if p.After > 0 {
			if after = p.After - 1; d.parts[after].ch != c {
				w.acquire(c, d.ch[d.parts[after].ch].markGPU, d.partMarks[after])
			}
		}
		if j := pp.prevQ; j >= 0 && j != after && d.parts[j].ch != c {
			// The part before it on its queue ran on the other channel.
			w.acquire(c, d.ch[d.parts[j].ch].markGPU, d.partMarks[j])
		}
		w.last = i == len(s.Parts)-1
		if p.Kind != device.Launch && !pp.kernel {
			w.flushPending()
		}
		switch {
		case p.Kind == device.Launch:
			w.launch(c, p)
		case pp.kernel:
			w.launch(c, w.kernelPart(p, pp.bytes))
		case p.Kind == device.CopyRows:
			w.copyRows(c, p)
		case p.Kind == device.Words:
			w.words(c, p)
		}
		if d.needMark[i] {
			d.partMarks[i] = w.mark(c)
		}
	}
	w.flushPending()
	w.open(w.ender)
	for c := range w.cur {
		if c != w.ender && w.cur[c].used {
			m := w.mark(c)
			w.acquire(w.ender, d.ch[c].markGPU, m)
		}
	}
	if s.Timed {
		w.flushIfCopied(w.ender)
		w.stamp(w.ender, stampEnd)
	}
	if !w.own {
		w.release(w.ender, d.wordGPU, s.Value)
	}
	for c := range w.cur {
		// The release above, or on the other channel the mark its
		// ender acquired, is the channel's last: what follows is read
		// only later (channel.tail).
		w.cur[c].tail = w.cur[c].segPos
	}
	if w.intr {
		w.interrupt(w.ender)
	}
	for c := range w.cur {
		if w.cur[c].used {
			if d.sub {
				w.yield(c)
			}
			w.closeSegment(c)
		}
	}
}

// open starts the value's words on channel c: its waits, and on the
// compute channel what the channel owes before its parts.
func (w *walk) open(c int) {
	cur := &w.cur[c]
	if cur.used {
		return
	}
	d, ch := w.d, w.d.ch[c]
	cur.used = true
	cur.put, cur.base, cur.marks = ch.put, ch.base, ch.marks
	if w.emit {
		n, size := d.plan.cur[c].segPos, uint64(len(ch.seg))
		pos := ch.segPos
		if off := pos % size; off+n > size {
			pos += size - off
		}
		cur.segPos, cur.segStart = pos, pos
	}
	if c != d.lastEnder {
		w.acquire(c, d.wordGPU, w.s.Value-1)
	} else if d.lastOwn {
		// The last value's launch released it, and no wait for idle
		// followed it: the first part waits for it.
		cur.prev = prevLaunch
	}
	for _, wt := range w.s.Waits {
		a, _ := d.gpuWord(wt.Word)
		w.acquire(c, a, wt.Value)
	}
	if w.s.Timed {
		w.stamp(c, c)
	}
	if c != qCompute {
		return
	}
	if d.upMark != w.upAcquire {
		// An image upload on the copy channel: the compute channel's
		// work waits for it.
		w.acquire(c, d.ch[qCopy].markGPU, d.upMark)
		w.upAcquire = d.upMark
	}
	if w.icache {
		if b := w.take(c, icWords); b != nil {
			w.done(c, hw.InvalidateShaderCaches(b, hw.InvalidateInstruction|hw.InvalidateConstant), icWords)
		}
	}
	if l := w.local; l != nil && l != d.applied {
		if cur.prev == prevLaunch {
			// The last value's launch may still run, in the local
			// memory being replaced: it completes before the channel
			// takes the new one.
			w.wfi(c)
			cur.prev = prevIdle
		}
		if b := w.take(c, localWords); b != nil {
			w.done(c, hw.LocalMemory(b, d.gen, l.mem.Address, l.perTPC, 0xff), localWords)
		}
	}
}

// take is room for n words on channel c: a slice of the segment ring to
// append them to when the walk writes, nil when it counts.
func (w *walk) take(c int, n uint64) []uint32 {
	cur := &w.cur[c]
	if cur.segPos+n-cur.segStart > segChunk {
		// An entry names at most 4 MiB of words, closed between
		// builders, so that no method's data spans two entries.
		w.closeSegment(c)
	}
	if !w.emit {
		cur.segPos += n
		return nil
	}
	seg := w.d.ch[c].seg
	off := cur.segPos % uint64(len(seg))
	cur.segPos += n
	return seg[off : off : off+n]
}

// done checks that a builder appended exactly the n words take made room
// for, in place.
func (w *walk) done(c int, b []uint32, n uint64) {
	if uint64(len(b)) != n || uint64(cap(b)) != n {
		panic(fmt.Sprintf("nvdev: %d words written where %d were counted on the %s channel", len(b), n, w.d.ch[c].name))
	}
}

// acquire holds channel c until the word at addr holds v.
func (w *walk) acquire(c int, addr, v uint64) {
	if b := w.take(c, hw.AcquireWords); b != nil {
		if w.d.sub {
			w.done(c, hw.AcquireYield(b, w.d.gen, addr, v), hw.AcquireWords)
			return
		}
		w.done(c, hw.Acquire(b, w.d.gen, addr, v), hw.AcquireWords)
	}
}

// barrier makes the next part of kind next on channel c wait for what ran
// before it.
func (w *walk) barrier(c int, next uint8) {
	cur := &w.cur[c]
	switch {
	case cur.prev == prevLaunch, cur.prev == prevWords:
		w.wfi(c)
	case cur.prev == prevCopy && next != prevCopy:
		w.flushCopies(c)
		w.wfi(c)
	}
	cur.prev = prevIdle
}

func (w *walk) wfi(c int) {
	if b := w.take(c, wfiWords); b != nil {
		if w.d.sub {
			w.done(c, hw.WaitForIdleSubcontext(b), wfiWords)
			return
		}
		w.done(c, hw.WaitForIdle(b), wfiWords)
	}
}

// flushCopies makes the copy engine's writes visible: a launch of no data
// with FLUSH_ENABLE.
func (w *walk) flushCopies(c int) {
	if b := w.take(c, flushWords); b != nil {
		w.done(c, append(b, hw.Inc(hw.SubCopy, hw.CopyLaunchDMA, 1), hw.DMAFlushEnable), flushWords)
	}
}

// mark releases channel c's mark once its work so far has completed, and
// returns the mark.
func (w *walk) mark(c int) uint64 {
	cur := &w.cur[c]
	cur.marks++
	w.release(c, w.d.ch[c].markGPU, cur.marks)
	return cur.marks
}

// flushIfCopied flushes the copy engine's writes where copies ran last on
// channel c.
func (w *walk) flushIfCopied(c int) {
	if w.cur[c].prev == prevCopy {
		w.flushCopies(c)
	}
}

// release writes v into the word at addr once channel c's work so far has
// completed and its writes are visible.
func (w *walk) release(c int, addr, v uint64) {
	cur := &w.cur[c]
	w.flushIfCopied(c)
	if w.d.sub {
		// A wait for idle of the subcontext alone, where work ran since
		// the last, so that the release waits for no other timeline's.
		if cur.prev != prevIdle {
			w.wfi(c)
		}
		if b := w.take(c, hw.ReleaseWords); b != nil {
			w.done(c, hw.SubcontextRelease(b, w.d.gen, addr, v), hw.ReleaseWords)
		}
	} else if b := w.take(c, hw.ReleaseWords); b != nil {
		w.done(c, hw.Release(b, w.d.gen, addr, v), hw.ReleaseWords)
	}
	cur.prev = prevIdle
}

// interrupt raises channel c's non-stall interrupt once the host has
// run the words before.
func (w *walk) interrupt(c int) {
	if b := w.take(c, intrWords); b != nil {
		w.done(c, hw.NonStallInterrupt(b), intrWords)
	}
}

// yield ends the value's words on channel c of a shared group by passing
// the channel's PBDMA to the group's next channel with work: the
// timelines' channels share the group's PBDMAs, and a PBDMA stays on a
// channel while it has words, so that without it a timeline kept busy
// held the PBDMA and the others' work waited (four timelines of 16
// submitters of 15 µs kernels on the H200: one or two ran nearly every
// value, 67.8k a second in all, the others 16 to 66 values in 2 s).
func (w *walk) yield(c int) {
	if b := w.take(c, yieldWords); b != nil {
		w.done(c, hw.YieldChannel(b), yieldWords)
	}
}

// closeSegment closes the words written since the open segment's start
// into ring entries.
func (w *walk) closeSegment(c int) {
	cur := &w.cur[c]
	if cur.segPos == cur.segStart {
		return
	}
	ch := w.d.ch[c]
	// An entry for each 4 MiB of the segment: take closes it between
	// builders; only a builder of more than 4 MiB is split here.
	for cur.segStart != cur.segPos {
		n := min(cur.segPos-cur.segStart, segChunk)
		if !w.emit {
			// The segment ring lies below 2^40.
			if cur.base != 0 {
				cur.put++
			}
			cur.put++
			cur.base = 0
			cur.segStart += n
			continue
		}
		var tmp [2]hw.Entry
		addr := ch.segGPU + 4*(cur.segStart%uint64(len(ch.seg)))
		es, err := hw.AppendSegment(tmp[:0], w.d.gen, &cur.base, addr, uint32(n), hw.Subroutine, false)
		if err != nil {
			panic(fmt.Sprintf("nvdev: the %s channel's segment of %d words at 0x%x: %v", ch.name, n, addr, err))
		}
		for _, e := range es {
			ch.gp[cur.put%ch.entries] = uint64(e)
			cur.put++
		}
		cur.segStart += n
	}
}

// launch stamps a launch's constant bank 0 and descriptor into the launch
// ring and sends the descriptor.
func (w *walk) launch(c int, p *device.Part) {
	d := w.d
	cur := &w.cur[c]
	// A launch right after a launch of the same value, with no word
	// between, is linked to it: the descriptor before schedules it as it
	// completes (Config.NoLinkLaunches).
	linked := !d.cfg.NoLinkLaunches && w.pend && cur.segPos == w.pendSeg && cur.put == w.pendPut
	if !linked {
		w.flushPending()
		w.barrier(c, prevLaunch)
	}
	f, _ := entryOf(p.Entry)
	l := f.l
	bank := roundUp(uint64(l.Bank0Bytes), 256)
	qmd := roundUp(uint64(d.gen.Qmd.Bytes()), 256)
	size := uint64(len(d.launchHost))
	pos := w.launchPos
	if off := pos % size; off+bank+qmd > size {
		pos += size - off
	}
	w.launchPos = pos + bank + qmd
	w.launches += bank + qmd
	off := pos % size
	qmdAddr := d.launchMem.Address + off + bank
	var b []uint32
	if !linked {
		b = w.take(c, pcasWords)
	}
	if w.emit {
		bankAddr := d.launchMem.Address + off
		scratch := d.qmd[w.slot][:]
		l.Stamp(scratch, d.bank0, bankAddr, p.Groups, p.Threads, p.Shared, p.Params)
		q := hw.QmdOf(d.gen.Qmd, scratch)
		if w.own && w.last {
			ownRelease.set(q, d.wordGPU, w.s.Value)
		}
		copy(d.launchHost[off:off+uint64(l.Bank0Bytes)], d.bank0[:l.Bank0Bytes])
		if linked {
			hw.QmdOf(d.gen.Qmd, d.qmd[w.slot^1][:]).SetDependent(qmdAddr, !d.cfg.noDepPrefetch)
			w.flushPending()
		}
		if b != nil {
			action := d.gen.PcasAction
			if d.cfg.pcas != 0 {
				action = d.cfg.pcas
			}
			w.done(c, append(b, hw.Inc(hw.SubCompute, hw.ComputeSendPcasA, 1), uint32(qmdAddr>>8),
				hw.Immd(hw.SubCompute, hw.ComputeSendSignalingPcas2B, action)), pcasWords)
		}
	}
	// The descriptor stays in the scratch until the next launch is known.
	w.pend, w.pendOff, w.pendSeg, w.pendPut = true, off+bank, cur.segPos, cur.put
	w.slot ^= 1
	cur.prev = prevLaunch
}

// flushPending writes the last launch's descriptor into the launch ring.
func (w *walk) flushPending() {
	if !w.pend {
		return
	}
	w.pend = false
	if !w.emit {
		return
	}
	d := w.d
	words := d.gen.Qmd.Words
	if d.cfg.tweak != nil {
		d.cfg.tweak(hw.QmdOf(d.gen.Qmd, d.qmd[w.slot^1][:]))
	}
	copy(unsafe.Slice((*uint32)(unsafe.Pointer(&d.launchHost[w.pendOff])), words), d.qmd[w.slot^1][:words])
}

// copyRows copies or fills rows with the copy engine bound on channel c.
func (w *walk) copyRows(c int, p *device.Part) {
	if p.Rows == 0 || p.RowBytes == 0 {
		return
	}
	d := w.d
	dst := p.Dst.(*nvidia.Memory).Address + p.DstOffset
	if p.Filling {
		w.barrier(c, prevCopy)
		f := hw.FillRows{Dst: dst, Pitch: p.DstPitch, RowBytes: p.RowBytes, Rows: p.Rows}
		n, err := f.Words()
		if err != nil {
			panic(fmt.Sprintf("nvdev: a fill Room took: %v", err))
		}
		// One take: rows of at most 2 GiB, under 4 GiB apart, take a few
		// multi-line launches however many they are; larger rows or
		// pitches, a Fill a row, come to segChunk words only past 30 TiB
		// of memory (checkCopy bounds the rows by their region).
		if b := w.take(c, n); b != nil {
			if p.Fill32 {
				b = f.AppendWords(b, d.gen, p.Value)
			} else {
				b = f.Append(b, d.gen, p.Byte)
			}
			w.done(c, b, n)
		}
	} else {
		// One take: a copy's launches come to segChunk words only past
		// memory any GPU has (rows of more than 2 GiB, or 4 GiB or more
		// apart, one launch each; otherwise one for each 2^32-1 rows).
		r := hw.Rows{Src: p.Src.(*nvidia.Memory).Address + p.SrcOffset, Dst: dst,
			SrcPitch: p.SrcPitch, DstPitch: p.DstPitch, RowBytes: p.RowBytes, Rows: p.Rows}
		l, err := r.Launches()
		if err != nil {
			panic(fmt.Sprintf("nvdev: a copy Room took: %v", err))
		}
		n := l * hw.CopyLaunchWords
		w.barrier(c, prevCopy)
		if b := w.take(c, n); b != nil {
			w.done(c, hw.CopyRows(b, d.gen, r), n)
		}
	}
	w.cur[c].prev = prevCopy
}

// words hands the part's ring entries to channel c, between segments of
// the driver's words.
func (w *walk) words(c int, p *device.Part) {
	if len(p.Words) == 0 {
		return
	}
	w.barrier(c, prevWords)
	w.closeSegment(c)
	cur := &w.cur[c]
	ch := w.d.ch[c]
	k := uint64(len(p.Words) / 2)
	if w.emit {
		for i := range k {
			ch.gp[(cur.put+i)%ch.entries] = uint64(hw.EntryOf(p.Words[2*i], p.Words[2*i+1]))
		}
	}
	cur.put += k
	// The entries may have moved the extended base: the next segment sets
	// its own.
	if w.d.gen.ExtendedBase {
		cur.base = 1
	}
	cur.prev = prevWords
}
