package rig

import (
	"math"
	"math/bits"

	"github.com/rig-go/rig/device"
)

// Limits of a submission's integers, which NewSubmission checks.
const (
	// MaxBuffers is one more than the largest buffer index a ref may hold:
	// a run is submitted with at most MaxBuffers buffers.
	MaxBuffers = 4096
	// MaxParams is the most parameter bytes a launch passes: CUDA's limit
	// on Volta and later, which no driver exceeds.
	MaxParams = 32764
)

// Access is how a part uses a buffer.
type Access uint8

const (
	// Reads: the part reads the buffer.
	Reads Access = 1 << iota
	// Writes: the part writes the buffer.
	Writes
	// ReadsWrites: the part reads and writes the buffer.
	ReadsWrites = Reads | Writes
)

// Ref says how a part uses one of the buffers a run is submitted with, and
// where a launch's parameters hold its address.
type Ref struct {
	// Buf indexes the buffers given to Run.Submit.
	Buf int
	// At is the byte of the launch's parameters where rig writes the
	// buffer's address (plus Offset), as 8 little-endian bytes; -1 for a
	// ref that only states the use.
	At int
	// Offset is added to the address written.
	Offset uint64
	// Access is how the part uses the buffer.
	Access Access
	// arg is 1 + the index of the parameter that At is taken from, at
	// NewSubmission (ReadArg and the like); 0 where At is a byte, and
	// negative for a ref to a negative index.
	arg int
	// past says that Plus added offsets whose sum passes 2^64, which
	// NewSubmission refuses; Offset is then the largest uint64.
	past bool
}

// Read is a ref to buffer buf that the part reads, its address at byte at.
func Read(buf, at int) Ref { return Ref{Buf: buf, At: at, Access: Reads} }

// Write is a ref to buffer buf that the part writes, its address at byte at.
func Write(buf, at int) Ref { return Ref{Buf: buf, At: at, Access: Writes} }

// ReadWrite is a ref to buffer buf that the part reads and writes, its
// address at byte at.
func ReadWrite(buf, at int) Ref { return Ref{Buf: buf, At: at, Access: ReadsWrites} }

// Uses is a ref that states a use of buffer buf and patches nothing.
func Uses(buf int, a Access) Ref { return Ref{Buf: buf, At: -1, Access: a} }

// Plus is the ref with off added to the address it writes. Offsets whose
// sum passes 2^64 do not wrap round: NewSubmission refuses the ref, with
// an error matching ErrInvalid.
func (r Ref) Plus(off uint64) Ref {
	sum, carry := bits.Add64(r.Offset, off, 0)
	if carry != 0 || r.past {
		r.Offset, r.past = math.MaxUint64, true
		return r
	}
	r.Offset = sum
	return r
}

// Part is one piece of a submission's work, on one queue of the device.
// Kernel, Launch, Copy, CopyRows, FillBytes, FillRows, FillUint32,
// FillFloat32, Fill and Words make parts; On
// and After place them.
type Part struct {
	kind  device.PartKind
	queue int
	// after is 1 + the index After names, 0 for none; afterSet says that
	// After was called, so that After(-1) is not taken for none.
	after    int
	afterSet bool
	fn       *Function
	params   int
	auto     bool // params is the function's own count (Kernel)
	refs     []Ref

	src, dst           int
	srcOff, dstOff     uint64
	rowBytes, rows     uint64
	srcPitch, dstPitch uint64
	filling            bool
	fillByte           byte
	fill32             bool // FillUint32: fillValue's words, not fillByte's bytes
	fillValue          uint32
	fillCount          uint64 // FillUint32's words
	fillFn             any
	fillArg            uintptr
	words              []uint32
	// srcEnd and dstEnd are one past the last byte a copy reads and
	// writes, which Submit checks against the buffers' lengths.
	srcEnd, dstEnd uint64
}

// Launch runs fn, with params bytes of parameters, over the groups and
// threads a run sets (Run.Groups, Run.Threads), on "COMPUTE:0". Each ref
// writes a buffer's address into the parameters and states how fn uses it.
func Launch(fn *Function, params int, refs ...Ref) Part {
	return Part{kind: device.Launch, queue: device.Compute, src: -1, dst: -1, fn: fn, params: params, refs: refs}
}

// Rows is a copy of Rows rows of RowBytes bytes between two of a run's
// buffers, with SrcPitch and DstPitch bytes between the starts of rows on
// each side. A pitch of 0 is RowBytes.
type Rows struct {
	// Src and Dst index the buffers given to Run.Submit.
	Src, Dst int
	// SrcOffset and DstOffset are where the first row starts in each buffer.
	SrcOffset, DstOffset uint64
	// RowBytes is each row's length, and Rows the number of rows.
	RowBytes, Rows uint64
	// SrcPitch and DstPitch are the bytes from one row's start to the
	// next's; 0 is RowBytes.
	SrcPitch, DstPitch uint64
}

// Copy copies n bytes from buffer src at srcOff to buffer dst at dstOff,
// on "COPY:0". The bytes read and the bytes written must not overlap:
// where they do (src and dst the same buffer), the bytes the copy leaves
// are undefined, as the GPUs' copy engines and kernels move them in no set
// order.
func Copy(src int, srcOff uint64, dst int, dstOff uint64, n uint64) Part {
	return CopyRows(Rows{Src: src, Dst: dst, SrcOffset: srcOff, DstOffset: dstOff, RowBytes: n, Rows: 1})
}

// CopyRows copies rows between two buffers, on "COPY:0". As Copy's, the
// rows read and the rows written must not overlap. Where there are two
// rows or more, the drivers refuse a pitch under RowBytes on either side,
// whose rows overlap (Submit returns a *RefusalError), as CUDA's copies
// of rows do.
func CopyRows(r Rows) Part {
	if r.SrcPitch == 0 {
		r.SrcPitch = r.RowBytes
	}
	if r.DstPitch == 0 {
		r.DstPitch = r.RowBytes
	}
	return Part{kind: device.CopyRows, queue: device.Copy, src: r.Src, dst: r.Dst,
		srcOff: r.SrcOffset, dstOff: r.DstOffset, rowBytes: r.RowBytes, rows: r.Rows,
		srcPitch: r.SrcPitch, dstPitch: r.DstPitch,
		refs: []Ref{Uses(r.Src, Reads), Uses(r.Dst, Writes)}}
}

// FillBytes sets n bytes of buffer dst at off to b: a copy that fills, on
// "COPY:0".
func FillBytes(dst int, off, n uint64, b byte) Part {
	return Part{kind: device.CopyRows, queue: device.Copy, src: -1, dst: dst, dstOff: off,
		rowBytes: n, rows: 1, dstPitch: n, filling: true, fillByte: b,
		refs: []Ref{Uses(dst, Writes)}}
}

// FillRows sets rows rows of rowBytes bytes of buffer dst to b, the first
// at off, with pitch bytes from one row's start to the next's (0 is
// rowBytes), and leaves the bytes between rows: a copy that fills, on
// "COPY:0". As a copy's, the rows' bytes must lie within the buffer, and
// the drivers refuse a pitch under rowBytes where there are two rows or
// more, whose rows overlap (Submit returns a *RefusalError).
func FillRows(dst int, off, rowBytes, rows, pitch uint64, b byte) Part {
	if pitch == 0 {
		pitch = rowBytes
	}
	return Part{kind: device.CopyRows, queue: device.Copy, src: -1, dst: dst, dstOff: off,
		rowBytes: rowBytes, rows: rows, dstPitch: pitch, filling: true, fillByte: b,
		refs: []Ref{Uses(dst, Writes)}}
}

// FillUint32 sets n four-byte words of buffer dst, from byte off, to v,
// little-endian: a copy that fills, on "COPY:0". off must be a multiple
// of 4, and the GPU drivers refuse a buffer whose address is not (only
// memory the caller lends, such as Device.MapHost's, can be so).
func FillUint32(dst int, off, n uint64, v uint32) Part {
	p := Part{kind: device.CopyRows, queue: device.Copy, src: -1, dst: dst, dstOff: off,
		rows: 1, filling: true, fill32: true, fillValue: v, fillCount: n,
		refs: []Ref{Uses(dst, Writes)}}
	if n <= math.MaxUint64/4 {
		// Past it, NewSubmission refuses the part.
		p.rowBytes, p.dstPitch = 4*n, 4*n
	}
	return p
}

// FillFloat32 sets n float32s of buffer dst, from byte off, to f: a
// FillUint32 of f's bits.
func FillFloat32(dst int, off, n uint64, f float32) Part {
	return FillUint32(dst, off, n, math.Float32bits(f))
}

// Fill calls the driver's fill function fn with arg, on "COPY:0": on
// cudadev a C function pointer (a uintptr) of compiled code or a
// cuda.Exec, on hostdev a hostdev.FillFunc; nvdev runs no fill function
// and refuses the part at Submit with a *RefusalError, as every driver
// refuses a fn of another type. Its refs state which buffers it uses.
func Fill(fn any, arg uintptr, refs ...Ref) Part {
	return Part{kind: device.Fill, queue: device.Copy, src: -1, dst: -1, fillFn: fn, fillArg: arg, refs: refs}
}

// Words hands ring entries that compiled code wrote to "COMPUTE:0" (nvdev
// runs them). Its refs state which buffers they use. The submission
// keeps words itself, not a copy, and the driver copies them at each
// Submit: a change to them reaches the submissions made after it, and
// must not happen while a Submit of the submission runs.
func Words(words []uint32, refs ...Ref) Part {
	return Part{kind: device.Words, queue: device.Compute, src: -1, dst: -1, words: words, refs: refs}
}

// The queues every device has, for Part.On: their indexes in the device's
// Facts.Queues.
const (
	ComputeQueue = device.Compute // "COMPUTE:0", the queue of launches by default
	CopyQueue    = device.Copy    // "COPY:0", the queue of copies and fills by default
)

// On places the part on queue q, an index into the device's Facts.Queues:
// ComputeQueue (0) is "COMPUTE:0" and CopyQueue (1) "COPY:0" on every
// driver. NewSubmission keeps any q; Submit refuses a q the device has no
// queue for, with a *RefusalError.
func (p Part) On(q int) Part { p.queue = q; return p }

// After makes the part run after part i of its submission as well as after
// the parts before it on its own queue.
//
// Submit orders the parts of a submission by their refs as it orders
// submissions, whatever their queues: a part runs after the earlier parts
// that write a buffer it uses and after the earlier parts that use a
// buffer it writes, where two buffer indices naming one buffer are one
// buffer. Parts with no such conflict run side by side. After is for an
// order that no ref states. NewSubmission refuses an i that names no
// earlier part of the submission (-1, the part itself, a later part, one
// past the last), which no submission could run, with an error matching
// ErrInvalid.
func (p Part) After(i int) Part { p.after, p.afterSet = i+1, true; return p }
