package cudadev

import (
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/ccall"
)

// The hot path: Room, Submit and Commit, which rig calls one at a time, in
// value order, under its submit lock. They allocate nothing but on a
// refusal or a failure, and the first time a submission needs more events
// for the order between its parts than any before.

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }

// never returns a refusal of part i (-1 for the submission).
func never(i int, reason string) device.RoomAnswer {
	return device.RoomAnswer{Kind: device.RoomNever, Part: i, Reason: reason}
}

var axes = [3]byte{'x', 'y', 'z'}

// Room returns RoomOK, or RoomNever for parts the device never runs. It
// never returns RoomLater, since a stream takes any amount of work: Submit
// and Commit block instead while a stream is full.
func (d *gpu) Room(s *device.Submission) device.RoomAnswer {
	for i := range s.Parts {
		p := &s.Parts[i]
		if p.Queue != device.Compute && p.Queue != device.Copy {
			return never(i, fmt.Sprintf("no queue %d: the device has COMPUTE:0 and COPY:0", p.Queue))
		}
		if p.After < 0 || p.After > i {
			return never(i, fmt.Sprintf("the part runs after part %d, which does not precede it", p.After-1))
		}
		switch p.Kind {
		case device.Launch:
			if why := d.checkLaunch(p); why != "" {
				return never(i, why)
			}
		case device.CopyRows:
			if why := checkCopy(p); why != "" {
				return never(i, why)
			}
		case device.Fill:
			switch fn := p.FillFn.(type) {
			case uintptr:
				if fn == 0 {
					return never(i, "a fill of a null function")
				}
			case cuda.Exec:
				if fn == nil || fn.Handle() == 0 {
					return never(i, "a fill of a destroyed graph")
				}
				if x, ok := fn.(*execGraph); ok && x.gs.d.ctx != d.ctx {
					return never(i, fmt.Sprintf("a fill of a graph made on GPU %s, not this GPU (%s)", x.gs.d.info.bus, d.info.bus))
				}
			default:
				return never(i, fmt.Sprintf("a fill's function is %T: CUDA runs a C function pointer (uintptr) or a cuda.Exec", p.FillFn))
			}
		default:
			return never(i, fmt.Sprintf("CUDA runs launches, copies and fills, not %s parts", p.Kind))
		}
	}
	for _, w := range s.Waits {
		if !d.maps(w.Word) {
			return never(-1, "a wait on a word the GPU does not map: the device waits only on words of rig's array")
		}
	}
	return device.RoomAnswer{Kind: device.RoomOK}
}

// checkLaunch is why d never runs launch p, or "".
func (d *gpu) checkLaunch(p *device.Part) string {
	if p.Queue != device.Compute {
		return `a launch on queue 1 ("COPY:0"), which runs copies and fills only`
	}
	var k *kernel
	if p.Entry != nil {
		k, _ = p.Entry.Data.(*kernel)
	}
	if k == nil {
		return "a launch of a function that no CUDA device loaded"
	}
	if k.ctx != d.ctx {
		return fmt.Sprintf("a launch of %q, loaded in another GPU's context", p.Entry.Name)
	}
	if why := d.checkShape(k, p.Entry.Name, &p.Groups, &p.Threads, p.Shared); why != "" {
		return why
	}
	if len(p.Params) < k.params {
		return fmt.Sprintf("%d parameter bytes, and %q reads %d", len(p.Params), p.Entry.Name, k.params)
	}
	return ""
}

// checkShape is why d's GPU never runs k, the function name, over groups
// of threads with shared bytes of dynamic shared memory, or "": 0 groups
// or threads along an axis, more along one than the GPU has, more threads
// per group than k has (their product taken in 64 bits, past uint32's
// overflow), or more dynamic shared memory than k takes. A launch's check
// and a graph's kernel node's share it; it allocates only on a refusal.
func (d *gpu) checkShape(k *kernel, name string, groups, threads *[3]uint32, shared uint32) string {
	for a := 0; a < 3; a++ {
		if groups[a] == 0 {
			return fmt.Sprintf("a block of 0 groups along axis %c", axes[a])
		}
		if threads[a] == 0 {
			return fmt.Sprintf("a block of 0 threads along axis %c", axes[a])
		}
		if groups[a] > d.maxGrid[a] {
			return fmt.Sprintf("%d groups along axis %c, more than the GPU's %d (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_%c)", groups[a], axes[a], d.maxGrid[a], axes[a]-32)
		}
		if threads[a] > d.maxBlock[a] {
			return fmt.Sprintf("%d threads along axis %c, more than the GPU's %d (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_%c)", threads[a], axes[a], d.maxBlock[a], axes[a]-32)
		}
	}
	if k.clusterAtLaunch && k.cluster == [3]uint32{} {
		return fmt.Sprintf("%q needs a cluster size set at its launch, which rig's launches do not set", name)
	}
	for a := 0; a < 3; a++ {
		if c := k.cluster[a]; c > 0 && groups[a]%c != 0 {
			return fmt.Sprintf("%d groups along axis %c, not a multiple of the %d of the clusters %q requires", groups[a], axes[a], c, name)
		}
	}
	if n := uint64(threads[0]) * uint64(threads[1]) * uint64(threads[2]); n > uint64(k.threads) {
		return fmt.Sprintf("%d threads per group, more than the %d of %q", n, k.threads, name)
	}
	if int(shared) > k.shared {
		return fmt.Sprintf("%d bytes of dynamic shared memory, more than the %d of %q", shared, k.shared, name)
	}
	return ""
}

// checkCopy is why no CUDA device runs copy p, or "".
func checkCopy(p *device.Part) string {
	dst, ok := p.Dst.(*region)
	if !ok || dst == nil {
		return "a copy to a region of no CUDA device"
	}
	if p.Rows == 0 || p.RowBytes == 0 {
		return ""
	}
	if p.Rows > 1 && p.DstPitch < p.RowBytes {
		return fmt.Sprintf("a destination pitch of %d bytes, under the rows' %d", p.DstPitch, p.RowBytes)
	}
	if end, ok := rowsEnd(p.DstOffset, p.Rows, p.DstPitch, p.RowBytes); !ok {
		return fmt.Sprintf("a copy of %d rows of %d bytes, %d bytes apart, from byte %d of its destination: past 2^64 bytes", p.Rows, p.RowBytes, p.DstPitch, p.DstOffset)
	} else if end > dst.size {
		return fmt.Sprintf("a copy to bytes up to %d of a region of %d", end, dst.size)
	}
	if p.Filling {
		if p.Fill32 {
			return p.Misfit32(dst.loc.Address + p.DstOffset)
		}
		return ""
	}
	src, ok := p.Src.(*region)
	if !ok || src == nil {
		return "a copy from a region of no CUDA device"
	}
	if p.Rows > 1 && p.SrcPitch < p.RowBytes {
		return fmt.Sprintf("a source pitch of %d bytes, under the rows' %d", p.SrcPitch, p.RowBytes)
	}
	if end, ok := rowsEnd(p.SrcOffset, p.Rows, p.SrcPitch, p.RowBytes); !ok {
		return fmt.Sprintf("a copy of %d rows of %d bytes, %d bytes apart, from byte %d of its source: past 2^64 bytes", p.Rows, p.RowBytes, p.SrcPitch, p.SrcOffset)
	} else if end > src.size {
		return fmt.Sprintf("a copy from bytes up to %d of a region of %d", end, src.size)
	}
	return ""
}

// rowsEnd returns the end of rows rows of n bytes, pitch bytes apart, from
// byte off, rows and n above 0, and false where it lies past 2^64.
func rowsEnd(off, rows, pitch, n uint64) (uint64, bool) {
	hi, lo := bits.Mul64(rows-1, pitch)
	end, c1 := bits.Add64(lo, n, 0)
	end, c2 := bits.Add64(end, off, 0)
	return end, hi == 0 && c1 == 0 && c2 == 0
}

// maps reports whether the GPU maps the word w: a word of rig's array,
// once the array is registered.
func (d *gpu) maps(w *uint64) bool {
	if d.arrayDev == 0 || w == nil {
		return false
	}
	p := uintptr(unsafe.Pointer(w))
	return p >= array.base && p+8 <= array.base+uintptr(array.n) && p%8 == 0
}

// devWord is the device address of the word w of rig's array.
func (d *gpu) devWord(w *uint64) uint64 {
	return d.arrayDev + uint64(uintptr(unsafe.Pointer(w))-array.base)
}

// Grow never runs: Room never returns RoomGrow.
func (d *gpu) Grow() error { return nil }

// Submit enqueues s: its waits, then its parts in order on their streams,
// with events for the order between the streams; it commits the value
// where the last commit is 64 values back. It returns Committed, Pending,
// or Failed with what it was doing and CUDA's error.
func (d *gpu) Submit(s *device.Submission) device.SubmitAnswer {
	d.last = s.Value
	if a, ok := d.submitLaunch(s); ok {
		return a
	}
	f := &d.hot
	d.beginCalls(f, &d.hotBare, d.ctxFree(s))
	var a device.SubmitAnswer
	if d.failed != "" {
		d.afterFailure(f, s)
		a = device.SubmitAnswer{Kind: device.Failed, Reason: d.failed}
	} else {
		a = d.submit(f, s)
	}
	d.endCalls(f)
	return a
}

// submitLaunch is Submit for the commonest value: one launch, no waits,
// untimed, after a value that ended on the compute stream, while the
// stream calls run bare. It makes submit's calls (the launch, and the
// word's write where the last one is 64 values back) in fewer steps:
// streamed one-launch values feel each step between libcuda's calls
// (BENCHMARKS.md, beside C). It returns false, having done nothing, for
// any other value, and where CUDA refuses the launch, which enqueues
// nothing: submit then makes the launch again and deals with CUDA's
// answer.
func (d *gpu) submitLaunch(s *device.Submission) (device.SubmitAnswer, bool) {
	if len(s.Parts) != 1 || len(s.Waits) != 0 || s.Timed || d.end != device.Compute || d.failed != "" || !d.bare.Load() {
		return device.SubmitAnswer{}, false
	}
	p := &s.Parts[0]
	if p.Kind != device.Launch || p.Queue != device.Compute || p.Entry == nil {
		return device.SubmitAnswer{}, false
	}
	k, ok := p.Entry.Data.(*kernel)
	if !ok {
		return device.SubmitAnswer{}, false
	}
	f, t, v := &d.hot, d.t, s.Value
	d.setLaunch(f, p, k, d.streams[device.Compute])
	f.c.Fn = t.cuLaunchKernel
	if f.c.Call() != 0 {
		return device.SubmitAnswer{}, false
	}
	if v-d.written < wordsCommittedLater {
		return device.SubmitAnswer{Kind: device.Pending}, true
	}
	d.beginCalls(f, &d.hotBare, true)
	a := device.SubmitAnswer{Kind: device.Committed}
	if r := f.c4(t.cuStreamWriteValue64, d.streams[device.Compute], uintptr(d.wordDev), uintptr(v), 0); r != 0 {
		a = d.failSubmit(f, s, doCommit, r, 1<<device.Compute, device.Compute)
	} else {
		d.written = v
	}
	d.endCalls(f)
	return a, true
}

// ctxFree reports whether s's calls run without the context made
// current: the device's stream calls do (gpu.bare), unless s is timed
// (the stamps' events), runs a C fill function (whose code may call CUDA
// in the current context) or follows a failure.
func (d *gpu) ctxFree(s *device.Submission) bool {
	if !d.bare.Load() || s.Timed || d.failed != "" {
		return false
	}
	for i := range s.Parts {
		if s.Parts[i].Kind == device.Fill {
			if _, ok := s.Parts[i].FillFn.(uintptr); ok {
				return false
			}
		}
	}
	return true
}

// beginCalls starts a run of calls on f: without the context made current
// where free (b keeps the run's state), in the context otherwise.
func (d *gpu) beginCalls(f *frame, b *bareCall, free bool) {
	if free {
		*b = bareCall{t: d.t, ctx: d.ctx}
		f.bare = b
		return
	}
	*b = bareCall{t: d.t, ctx: d.ctx, prev: enterCtx(d.t, f, d.ctx), entered: true}
	f.bare = b
}

// endCalls ends a run begun by beginCalls. Where CUDA refused a call for
// want of a current context, later runs make it current from the start.
func (d *gpu) endCalls(f *frame) {
	if f.leave() {
		d.bare.Store(false)
	}
}

// What a failed submit was doing.
const (
	doOrder  = "ordering the streams"
	doWait   = "waiting for words"
	doLaunch = "running a launch"
	doCopy   = "running a copy"
	doFill   = "running a fill"
	doGraph  = "launching a graph"
	doStamp  = "stamping a value"
	doCommit = "committing a value"
)

// submit enqueues s (Submit) and keeps the word's order: a write of a
// value into the word may run only once all the work enqueued before it
// ended, since rig gives the values' buffers back by the word. Between
// submits, the next call on streams[d.end] follows all the work enqueued
// (unless d.split, after a failure): a value starts there, or on the
// other stream joined to it, and ends on a stream that a join orders
// after the value's work on the other one. Where CUDA refuses a call,
// failSubmit writes the failed value behind the earlier values' work and
// whatever of its own work is enqueued, on either stream (closeValue).
func (d *gpu) submit(f *frame, s *device.Submission) device.SubmitAnswer {
	t := d.t
	v := s.Value
	used := 0
	for i := range s.Parts {
		used |= 1 << s.Parts[i].Queue
	}
	// The value starts on the stream the last one ended on, where it uses
	// it; its other stream waits for that one.
	e := d.end
	start := e
	if used != 0 && used&(1<<e) == 0 {
		start = 1 - e
	}
	if start != e {
		// Refused, the start stream is not ordered after the work of
		// the values before: the value is written behind that work, on
		// the stream they ended on, where it enqueued nothing.
		if r := d.join(f, e, start); r != 0 {
			return d.failBeforeWaits(f, s, doOrder, r, e)
		}
	}
	if r := d.waitWords(f, start, s.Waits); r != 0 {
		// None of the waits, or some of them, are on the stream.
		return d.failBeforeWaits(f, s, doWait, r, start)
	}
	var st *stamp
	if s.Timed {
		var r result
		if st, r = d.stampStart(f, start); r != 0 {
			return d.failSubmit(f, s, doStamp, r, 1<<start, start)
		}
	}
	if used == 3 {
		if r := d.join(f, start, 1-start); r != 0 {
			return d.failSubmit(f, s, doOrder, r, used, start)
		}
		if st != nil {
			if r := d.stampOn(f, st, 1-start); r != 0 {
				return d.failSubmit(f, s, doStamp, r, used, start)
			}
		}
	}
	// Parts that a part on the other stream runs after record an event.
	parts := s.Parts
	marks, r := d.marks(parts)
	if r != 0 {
		return d.failSubmit(f, s, doOrder, r, used, start)
	}
	z := start
	for i := range parts {
		p := &parts[i]
		q := p.Queue
		if p.After != 0 {
			if j := p.After - 1; parts[j].Queue != q {
				if r := f.c3(t.cuStreamWaitEvent, d.streams[q], d.afterEv[j], 0); r != 0 {
					return d.failSubmit(f, s, doOrder, r, used, z)
				}
			}
		}
		if r, what := d.enqueue(f, p, d.streams[q], v); r != 0 {
			return d.failSubmit(f, s, what, r, used, q)
		}
		if marks && d.mark[i] {
			if r := f.c2(t.cuEventRecord, d.afterEv[i], d.streams[q]); r != 0 {
				return d.failSubmit(f, s, doOrder, r, used, q)
			}
		}
		z = q
	}
	if used == 3 {
		if r := d.join(f, 1-z, z); r != 0 {
			return d.failSubmit(f, s, doOrder, r, used, z)
		}
	}
	d.end = z
	if st != nil {
		if r := d.stampEnd(f, st, v, z); r != 0 {
			return d.failSubmit(f, s, doStamp, r, 1<<z, z)
		}
	}
	if v-d.written >= wordsCommittedLater {
		if r := f.c4(t.cuStreamWriteValue64, d.streams[z], uintptr(d.wordDev), uintptr(v), 0); r != 0 {
			return d.failSubmit(f, s, doCommit, r, 1<<z, z)
		}
		d.written = v
		return device.SubmitAnswer{Kind: device.Committed}
	}
	return device.SubmitAnswer{Kind: device.Pending}
}

// marks marks in d.mark the parts that a later part on the other stream
// runs after, making their events where none exist yet, and reports
// whether any is marked, or CUDA's refusal to make an event.
func (d *gpu) marks(parts []device.Part) (bool, result) {
	cross := false
	for i := range parts {
		if a := parts[i].After; a != 0 && parts[a-1].Queue != parts[i].Queue {
			cross = true
			break
		}
	}
	if !cross {
		return false, 0
	}
	for len(d.mark) < len(parts) {
		d.mark = append(d.mark, false)
	}
	clear(d.mark)
	for i := range parts {
		if a := parts[i].After; a != 0 && parts[a-1].Queue != parts[i].Queue {
			d.mark[a-1] = true
		}
	}
	for len(d.afterEv) < len(parts) {
		d.afterEv = append(d.afterEv, 0)
	}
	for i := range parts {
		if d.mark[i] && d.afterEv[i] == 0 {
			f := &d.hot
			f.enter() // cuEventCreate needs the context current
			f.out[5] = 0
			if r := f.c2(d.t.cuEventCreate, f.outp(5), eventDisableTime); r != 0 {
				return false, r
			}
			d.afterEv[i] = uintptr(f.out[5])
		}
	}
	return true, 0
}

// join orders stream to after the work enqueued on stream from.
func (d *gpu) join(f *frame, from, to int) result {
	t := d.t
	if r := f.c2(t.cuEventRecord, d.joins[from], d.streams[from]); r != 0 {
		return r
	}
	return f.c3(t.cuStreamWaitEvent, d.streams[to], d.joins[from], 0)
}

// waitWords holds stream q back until each word reaches its value, in
// batches of at most maxBatch.
func (d *gpu) waitWords(f *frame, q int, waits []device.Wait) result {
	t := d.t
	switch len(waits) {
	case 0:
		return 0
	case 1:
		return f.c4(t.cuStreamWaitValue64, d.streams[q], uintptr(d.devWord(waits[0].Word)), uintptr(waits[0].Value), waitValueGEQ)
	}
	for len(waits) > 0 {
		n := min(len(waits), maxBatch)
		for i := 0; i < n; i++ {
			d.ops[i].setWait(d.devWord(waits[i].Word), waits[i].Value)
		}
		if r := f.c4(t.cuStreamBatchMemOp, d.streams[q], uintptr(n), uintptr(unsafe.Pointer(&d.ops[0])), 0); r != 0 {
			return r
		}
		waits = waits[n:]
	}
	return 0
}

// enqueue enqueues part p of value v on stream, answering CUDA's result and
// what it was doing.
func (d *gpu) enqueue(f *frame, p *device.Part, stream uintptr, v uint64) (result, string) {
	t := d.t
	switch p.Kind {
	case device.Launch:
		d.setLaunch(f, p, p.Entry.Data.(*kernel), stream)
		return f.call(t.cuLaunchKernel, 11), doLaunch
	case device.CopyRows:
		return d.copy(f, p, stream), doCopy
	case device.Fill:
		switch fn := p.FillFn.(type) {
		case uintptr:
			return f.c3(fn, stream, p.FillArg, uintptr(v)), doFill
		case *execGraph:
			return fn.launch(f, t.cuGraphLaunch, stream), doGraph
		case cuda.Exec:
			return f.c2(t.cuGraphLaunch, fn.Handle(), stream), doGraph
		}
	}
	return errInvalidValue, "running a part"
}

// setLaunch puts cuLaunchKernel's arguments for launch p of k on stream
// in f: the params bytes the function reads, as one buffer.
func (d *gpu) setLaunch(f *frame, p *device.Part, k *kernel, stream uintptr) {
	var extra uintptr
	if k.params > 0 {
		d.psize = uint64(k.params)
		d.extra = [5]uintptr{launchParamBufferPointer, uintptr(unsafe.Pointer(&p.Params[0])),
			launchParamBufferSize, uintptr(unsafe.Pointer(&d.psize)), launchParamEnd}
		extra = uintptr(unsafe.Pointer(&d.extra[0]))
	}
	f.c.A = [ccall.MaxArgs]uintptr{k.fn,
		uintptr(p.Groups[0]), uintptr(p.Groups[1]), uintptr(p.Groups[2]),
		uintptr(p.Threads[0]), uintptr(p.Threads[1]), uintptr(p.Threads[2]),
		uintptr(p.Shared), stream, 0, extra}
}

// fill32 enqueues a fill of four-byte words at to, whose address,
// pitch and rows' bytes checkCopy found multiples of 4: one
// cuMemsetD32Async where the rows are contiguous, one cuMemsetD2D32Async
// otherwise, or one a row where the pitch exceeds the GPU's limit or CUDA
// refuses the 2D fill.
func (d *gpu) fill32(f *frame, p *device.Part, to uint64, stream uintptr) result {
	t := d.t
	rows, width := p.Rows, p.RowBytes
	v := uintptr(p.Value)
	if rows == 1 || p.DstPitch == width {
		return f.c4(t.cuMemsetD32Async, uintptr(to), v, uintptr(rows*width/4), stream)
	}
	if p.DstPitch <= d.maxPitch {
		if r := f.c6(t.cuMemsetD2D32Async, uintptr(to), uintptr(p.DstPitch), v, uintptr(width/4), uintptr(rows), stream); r != errInvalidValue {
			return r
		}
	}
	for i := uint64(0); i < rows; i++ {
		if r := f.c4(t.cuMemsetD32Async, uintptr(to+i*p.DstPitch), v, uintptr(width/4), stream); r != 0 {
			return r
		}
	}
	return 0
}

// copy enqueues a copy part: one copy where the rows are contiguous, one
// 2D copy otherwise, or a copy per row where a pitch exceeds the GPU's
// CU_DEVICE_ATTRIBUTE_MAX_PITCH or CUDA refuses the 2D copy; a copy that
// fills is one memset, or one per row likewise. CUDA copies between two
// host regions with the calling thread once the stream's earlier work
// completed: such a copy makes Submit wait for the device's work.
func (d *gpu) copy(f *frame, p *device.Part, stream uintptr) result {
	if p.Rows == 0 || p.RowBytes == 0 {
		return 0
	}
	t := d.t
	dst := p.Dst.(*region)
	rows, width := p.Rows, p.RowBytes
	if p.Filling {
		to := dst.loc.Address + p.DstOffset
		if p.Fill32 {
			return d.fill32(f, p, to, stream)
		}
		b := uintptr(p.Byte)
		if rows == 1 || p.DstPitch == width {
			return f.c4(t.cuMemsetD8Async, uintptr(to), b, uintptr(rows*width), stream)
		}
		if p.DstPitch <= d.maxPitch {
			if r := f.c6(t.cuMemsetD2D8Async, uintptr(to), uintptr(p.DstPitch), b, uintptr(width), uintptr(rows), stream); r != errInvalidValue {
				return r
			}
		}
		for i := uint64(0); i < rows; i++ {
			if r := f.c4(t.cuMemsetD8Async, uintptr(to+i*p.DstPitch), b, uintptr(width), stream); r != 0 {
				return r
			}
		}
		return 0
	}
	src := p.Src.(*region)
	to, from := dst.handle()+p.DstOffset, src.handle()+p.SrcOffset
	if rows == 1 || (p.SrcPitch == width && p.DstPitch == width) {
		return f.c4(t.cuMemcpyAsync, uintptr(to), uintptr(from), uintptr(rows*width), stream)
	}
	if p.SrcPitch <= d.maxPitch && p.DstPitch <= d.maxPitch {
		d.cp = memcpy2D{
			srcMemoryType: memoryTypeUnified, srcDevice: from, srcPitch: p.SrcPitch,
			dstMemoryType: memoryTypeUnified, dstDevice: to, dstPitch: p.DstPitch,
			widthInBytes: width, height: rows,
		}
		if r := f.c2(t.cuMemcpy2DAsync, uintptr(unsafe.Pointer(&d.cp)), stream); r != errInvalidValue {
			return r
		}
	}
	for i := uint64(0); i < rows; i++ {
		if r := f.c4(t.cuMemcpyAsync, uintptr(to+i*p.DstPitch), uintptr(from+i*p.SrcPitch), uintptr(width), stream); r != 0 {
			return r
		}
	}
	return 0
}

// failSubmit records the failure of a submit whose waits are on its
// streams: what it was doing and CUDA's error. Unless the context failed,
// it writes the value after the work the submit enqueued on the streams of
// used, ending on stream z.
func (d *gpu) failSubmit(f *frame, s *device.Submission, what string, r result, used, z int) device.SubmitAnswer {
	return d.failWith(f, s, what, r, func() result { return d.closeValue(f, used, z, s.Value) })
}

// failBeforeWaits is failSubmit for a failure before the value's waits
// were all on a stream: it writes the value on stream z after the waits
// and every earlier value, as a submit after a failure does, and nothing
// where CUDA refuses a wait, so that the word never shows the value before
// the words it waits for show theirs.
func (d *gpu) failBeforeWaits(f *frame, s *device.Submission, what string, r result, z int) device.SubmitAnswer {
	return d.failWith(f, s, what, r, func() result { return d.writeAfterWaits(f, s, z) })
}

// failWith records the failure and, unless the context failed, runs
// write, which writes the value and returns CUDA's refusal of it: where
// that is a fault of the context's work, the context failed with it
// (lostWith).
func (d *gpu) failWith(f *frame, s *device.Submission, what string, r result, write func() result) device.SubmitAnswer {
	why := d.t.text(r)
	d.failed = what + ": " + why
	if r.sticky() {
		d.ctxFailed = true
		d.noteFault(why)
	} else {
		d.lostWith(write())
	}
	return device.SubmitAnswer{Kind: device.Failed, Reason: d.failed}
}

// closeValue writes value v on a stream behind all the work enqueued: the
// work of earlier values, which the stream the last value ended on
// follows (d.end), and v's, on the streams of used, z among them, where a
// stream of used other than d.end was ordered after d.end before v's work.
// Where used has both streams it orders z after the other one, or, where
// CUDA refuses that, the other one after z, and writes there. The device
// then ends on that stream whether or not CUDA takes the write (a refused
// write leaves the value unwritten): the stream follows all the work, so
// later writes go there. Where CUDA refuses both joins, no stream follows
// all the work: it writes nothing, and d.split makes each later write
// join both streams first. Where CUDA refuses a join with a fault of the
// context's work, it stops there: the context runs nothing more. It
// returns CUDA's last refusal, of a join or of the write, or 0 where CUDA
// took the write.
func (d *gpu) closeValue(f *frame, used, z int, v uint64) result {
	if d.split {
		used = 3
	}
	if used == 3 {
		if r := d.join(f, 1-z, z); r.sticky() {
			return r
		} else if r != 0 {
			if r := d.join(f, z, 1-z); r != 0 {
				d.split = true
				return r
			}
			z = 1 - z
		}
	}
	d.end, d.split = z, false
	r := f.c4(d.t.cuStreamWriteValue64, d.streams[z], uintptr(d.wordDev), uintptr(v), 0)
	if r == 0 {
		d.written = v
	}
	return r
}

// writeAfterWaits writes s's value on stream z after s's waits and all
// the work enqueued, and nothing where CUDA refuses a wait, so that the
// word never shows the value before the words it waits for show theirs.
// It returns CUDA's refusal, of a wait or of the write (closeValue), or 0.
func (d *gpu) writeAfterWaits(f *frame, s *device.Submission, z int) result {
	if r := d.waitWords(f, z, s.Waits); r != 0 {
		return r
	}
	return d.closeValue(f, 1<<z, z, s.Value)
}

// lostWith takes r, CUDA's answer to a call that writes a failed value:
// where r is a fault of the context's work (a sticky error), the context
// failed with it, as where the submit's own call met it, and the device
// is lost with the fault (Sleep returns it); any other refusal is of the
// call alone.
func (d *gpu) lostWith(r result) {
	if r.sticky() {
		d.ctxFailed = true
		d.noteFault(d.t.text(r))
	}
}

// afterFailure is a submit after a failure: it enqueues none of the parts,
// and writes the value after its waits and all the work enqueued, unless
// a fault ended the context. Where CUDA refuses a wait or the write with
// a fault of the context's work, the context failed with it (lostWith),
// and later submits call CUDA no more.
func (d *gpu) afterFailure(f *frame, s *device.Submission) {
	if d.ctxFailed {
		return
	}
	d.lostWith(d.writeAfterWaits(f, s, d.end))
}

// Commit writes the last value submitted into the word after its work,
// on the stream it ended on, unless a write of v or later is enqueued.
func (d *gpu) Commit(v uint64) device.SubmitAnswer {
	if d.failed != "" {
		return device.SubmitAnswer{Kind: device.Failed, Reason: d.failed}
	}
	if device.AtLeast(d.written, v) {
		return device.SubmitAnswer{Kind: device.Committed}
	}
	t, f := d.t, &d.hot
	d.beginCalls(f, &d.hotBare, d.bare.Load())
	r := f.c4(t.cuStreamWriteValue64, d.streams[d.end], uintptr(d.wordDev), uintptr(d.last), 0)
	d.endCalls(f)
	if r != 0 {
		why := t.text(r)
		d.failed = fmt.Sprintf("committing value %d: %s", d.last, why)
		if r.sticky() {
			d.ctxFailed = true
			d.noteFault(why)
		}
		return device.SubmitAnswer{Kind: device.Failed, Reason: d.failed}
	}
	d.written = d.last
	return device.SubmitAnswer{Kind: device.Committed}
}
