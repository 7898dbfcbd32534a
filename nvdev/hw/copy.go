package hw

import (
	"fmt"
	"math"
	"math/bits"
)

// Copy-engine launches, mirroring clc6b5.h, clc7b5.h and clc8b5.h
// (NVC?B5_OFFSET_IN_UPPER .. LINE_COUNT, SET_REMAP_*, LAUNCH_DMA): a
// launch copies LINE_COUNT lines of LINE_LENGTH_IN bytes, PITCH_IN and
// PITCH_OUT apart, or writes a constant through the remap unit, which
// reads no memory.

// Copy-engine methods.
const (
	CopyLaunchDMA      = 0x300 // LAUNCH_DMA
	CopyOffsetInUpper  = 0x400 // OFFSET_IN_UPPER, then _LOWER, OFFSET_OUT_*, PITCH_IN/OUT, LINE_LENGTH_IN, LINE_COUNT
	CopyOffsetOutUpper = 0x408 // OFFSET_OUT_UPPER
	CopyLineLengthIn   = 0x418 // LINE_LENGTH_IN
	CopyLineCount      = 0x41c // LINE_COUNT
	CopyRemapConstA    = 0x700 // SET_REMAP_CONST_A, then _CONST_B and SET_REMAP_COMPONENTS
	CopyRemapComponent = 0x708 // SET_REMAP_COMPONENTS
)

// LAUNCH_DMA fields.
const (
	DMATransferNone         = 0       // DATA_TRANSFER_TYPE_NONE
	DMATransferPipelined    = 1       // DATA_TRANSFER_TYPE_PIPELINED
	DMATransferNonPipelined = 2       // DATA_TRANSFER_TYPE_NON_PIPELINED
	DMAFlushEnable          = 1 << 2  // FLUSH_ENABLE
	DMASemaphoreOneWord     = 1 << 3  // SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE
	DMASemaphoreFourWord    = 2 << 3  // SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE
	DMASrcPitch             = 1 << 7  // SRC_MEMORY_LAYOUT_PITCH
	DMADstPitch             = 1 << 8  // DST_MEMORY_LAYOUT_PITCH
	DMAMultiLine            = 1 << 9  // MULTI_LINE_ENABLE
	DMARemap                = 1 << 10 // REMAP_ENABLE
	DMAFlushSys             = 0 << 25 // FLUSH_TYPE_SYS
	DMASemaphorePayload64   = 1 << 27 // SEMAPHORE_PAYLOAD_SIZE_TWO_WORD (C7B5, C8B5)
)

// SET_REMAP_COMPONENTS fields.
const (
	RemapDstXConstA    = 4       // DST_X_CONST_A
	RemapDstYNoWrite   = 6 << 4  // DST_Y_NO_WRITE
	RemapDstZNoWrite   = 6 << 8  // DST_Z_NO_WRITE
	RemapDstWNoWrite   = 6 << 12 // DST_W_NO_WRITE
	RemapComponentOne  = 0 << 16 // COMPONENT_SIZE_ONE
	RemapComponentFour = 3 << 16 // COMPONENT_SIZE_FOUR
	RemapSrcOne        = 0 << 20 // NUM_SRC_COMPONENTS_ONE
	RemapDstOne        = 0 << 24 // NUM_DST_COMPONENTS_ONE
)

// The copy engine's limits, by which a driver splits its work: a line
// of at most 2 GiB, at most 2^32 - 1 lines a launch, pitches below 2^32.
const (
	MaxLine  = 1 << 31
	MaxLines = 1<<32 - 1
)

// CopyLaunchWords is the words of one copy-engine launch: the eight
// offsets, pitches and lengths under one header, and LAUNCH_DMA.
const CopyLaunchWords = 11

// FillRemapWords is the words that set the remap unit's constant.
const FillRemapWords = 4

// Rows is a copy of Rows rows of RowBytes bytes, from Src with SrcPitch
// bytes from one row's start to the next's, to Dst with DstPitch.
type Rows struct {
	Src, Dst           uint64
	SrcPitch, DstPitch uint64
	RowBytes, Rows     uint64
}

// multiLine reports whether r runs as multi-line launches: more than one
// row, rows of at most 2 GiB, pitches below 2^32.
func (r Rows) multiLine() bool {
	return r.Rows > 1 && r.RowBytes <= MaxLine && r.SrcPitch < 1<<32 && r.DstPitch < 1<<32
}

// Launches is the number of copy-engine launches CopyRows makes of r: one
// multi-line launch for each 2^32 - 1 rows; and for a copy of one row, or
// of rows of more than 2 GiB or 2^32 bytes or more apart, one single-line
// launch for each 2 GiB of each row. A copy of no byte makes none. It
// refuses, wrapping ErrAddress, a copy whose source or destination rows
// pass 2^64 bytes of addresses, or whose launches' words (CopyLaunchWords
// each) do not fit 64 bits.
func (r Rows) Launches() (uint64, error) {
	if r.Rows == 0 || r.RowBytes == 0 {
		return 0, nil
	}
	if !rowsFit(r.Src, r.Rows, r.SrcPitch, r.RowBytes) || !rowsFit(r.Dst, r.Rows, r.DstPitch, r.RowBytes) {
		return 0, fmt.Errorf("%w: %d rows of %d bytes from %#x (%d apart) to %#x (%d apart) pass 2^64",
			ErrAddress, r.Rows, r.RowBytes, r.Src, r.SrcPitch, r.Dst, r.DstPitch)
	}
	n := ceilDiv(r.Rows, MaxLines)
	if !r.multiLine() {
		hi, lo := bits.Mul64(r.Rows, ceilDiv(r.RowBytes, MaxLine))
		if hi != 0 {
			return 0, fmt.Errorf("%w: %d rows of %d bytes take more than 2^64 launches", ErrAddress, r.Rows, r.RowBytes)
		}
		n = lo
	}
	if n > math.MaxUint64/CopyLaunchWords {
		return 0, fmt.Errorf("%w: %d rows of %d bytes take %d launches, whose words pass 2^64", ErrAddress, r.Rows, r.RowBytes, n)
	}
	return n, nil
}

// rowsFit reports whether rows rows of n bytes, pitch bytes apart, from
// addr end within 2^64 bytes of addresses; rows and n are above 0.
func rowsFit(addr, rows, pitch, n uint64) bool {
	hi, lo := bits.Mul64(rows-1, pitch)
	end, c1 := bits.Add64(lo, n, 0)
	_, c2 := bits.Add64(end, addr, 0)
	return hi == 0 && c1 == 0 && c2 == 0
}

// ceilDiv is x / d rounded up, d above 0.
func ceilDiv(x, d uint64) uint64 {
	q := x / d
	if x%d != 0 {
		q++
	}
	return q
}

func copyLaunch(b []uint32, g *Generation, src, dst uint64, srcPitch, dstPitch uint64, length, lines uint32, launch uint32) []uint32 {
	return append(b, Inc(SubCopy, CopyOffsetInUpper, 8),
		hi32(src, g.CopyAddressBits), lo32(src),
		hi32(dst, g.CopyAddressBits), lo32(dst),
		uint32(srcPitch), uint32(dstPitch), length, lines,
		Inc(SubCopy, CopyLaunchDMA, 1), launch)
}

// CopyRows appends the launches that copy r (r.Launches() of them, each
// CopyLaunchWords words); it appends nothing for a copy Launches refuses.
// Each launch waits for the copy engine's earlier launches
// (NON_PIPELINED), so a copy keeps its place in the channel's order; a
// release after it (CopyRelease) flushes its writes.
func CopyRows(b []uint32, g *Generation, r Rows) []uint32 {
	if n, err := r.Launches(); n == 0 || err != nil {
		return b
	}
	if r.multiLine() {
		for done := uint64(0); done < r.Rows; {
			n := min(r.Rows-done, MaxLines)
			b = copyLaunch(b, g, r.Src+done*r.SrcPitch, r.Dst+done*r.DstPitch, r.SrcPitch, r.DstPitch,
				uint32(r.RowBytes), uint32(n), DMATransferNonPipelined|DMASrcPitch|DMADstPitch|DMAMultiLine)
			done += n
		}
		return b
	}
	for row := uint64(0); row < r.Rows; row++ {
		src, dst := r.Src+row*r.SrcPitch, r.Dst+row*r.DstPitch
		for off := uint64(0); off < r.RowBytes; {
			n := min(r.RowBytes-off, MaxLine)
			b = copyLaunch(b, g, src+off, dst+off, 0, 0, uint32(n), 1,
				DMATransferNonPipelined|DMASrcPitch|DMADstPitch)
			off += n
		}
	}
	return b
}

// fillPieces splits a fill of n bytes at dst, where dst+n does not pass
// 2^64, into its head and tail bytes (at most three each) and its body of
// four-byte components from the first multiple of 4 of dst. Where no
// four-byte component fits, all n bytes are the head (at most six).
func fillPieces(dst, n uint64) (head, body, tail uint64) {
	head = -dst & 3 // the bytes up to the first multiple of 4 of dst
	if n <= head {
		return n, 0, 0
	}
	a := dst + head
	e := (dst + n) &^ 3
	if a >= e {
		return n, 0, 0
	}
	return head, (e - a) / 4, dst + n - e
}

// FillLaunches is the number of copy-engine launches Fill makes for n
// bytes at dst, and the remap settings among them. It refuses, wrapping
// ErrAddress, a fill that passes 2^64 bytes of addresses.
func FillLaunches(dst, n uint64) (launches, remaps uint64, err error) {
	if _, c := bits.Add64(dst, n, 0); c != 0 {
		return 0, 0, fmt.Errorf("%w: a fill of %d bytes at %#x passes 2^64", ErrAddress, n, dst)
	}
	head, body, tail := fillPieces(dst, n)
	bodyLaunches := (body + MaxLine/4 - 1) / (MaxLine / 4)
	launches = bodyLaunches
	if bodyLaunches > 0 {
		remaps++
	}
	if head > 0 {
		launches++
		remaps++
	}
	if tail > 0 {
		launches++
		if body > 0 || head == 0 {
			remaps++
		}
	}
	return launches, remaps, nil
}

func remap(b []uint32, v uint32, size uint32) []uint32 {
	return append(b, Inc(SubCopy, CopyRemapConstA, 3), v, v,
		RemapDstXConstA|RemapDstYNoWrite|RemapDstZNoWrite|RemapDstWNoWrite|size|RemapSrcOne|RemapDstOne)
}

const fillLaunch = DMATransferNonPipelined | DMASrcPitch | DMADstPitch | DMARemap

// Fill appends the launches that set n bytes at dst to v by the copy
// engine's remap of a constant, which reads no memory: four-byte
// components from the first multiple of 4 of dst, 2 GiB a launch, and one-
// byte components for the at most three bytes at each end.
// FillLaunches says how many launches and remap settings it makes; Fill
// appends nothing for a fill FillLaunches refuses.
func Fill(b []uint32, g *Generation, dst, n uint64, v byte) []uint32 {
	return fillWord(b, g, dst, n, uint32(v)*0x01010101)
}

// fillWord is Fill with the body's four-byte components set to w and the
// head's and tail's bytes to w's low byte: Fill's for a byte repeated, and
// a fill of words where dst and n are multiples of 4 (no head or tail).
func fillWord(b []uint32, g *Generation, dst, n uint64, w uint32) []uint32 {
	if _, c := bits.Add64(dst, n, 0); c != 0 {
		return b
	}
	head, body, tail := fillPieces(dst, n)
	return pieces(b, head, body, tail, w, func(b []uint32, off, length, size uint64) []uint32 {
		at := dst + off
		for left := length; left > 0; {
			k := min(left, MaxLine/4)
			b = copyLaunch(b, g, at, at, 0, 0, uint32(k), 1, fillLaunch)
			at += size * k
			left -= k
		}
		return b
	})
}

// pieces appends a fill's remap settings and, by launch, the launches of
// its head, body and tail (fillPieces), in that order: launch appends
// those of length components of size bytes from byte off of the fill, or
// of each of its rows. The body's components are w, the head's and
// tail's bytes w's low byte.
func pieces(b []uint32, head, body, tail uint64, w uint32, launch func(b []uint32, off, length, size uint64) []uint32) []uint32 {
	byteRemap := false
	if head > 0 {
		b = remap(b, w&255, RemapComponentOne)
		byteRemap = true
		b = launch(b, 0, head, 1)
	}
	if body > 0 {
		b = remap(b, w, RemapComponentFour)
		byteRemap = false
		b = launch(b, head, body, 4)
	}
	if tail > 0 {
		if !byteRemap {
			b = remap(b, w&255, RemapComponentOne)
		}
		b = launch(b, head+4*body, tail, 1)
	}
	return b
}

// FillRows is a fill of Rows rows of RowBytes bytes from Dst, with Pitch
// bytes from one row's start to the next's.
type FillRows struct {
	Dst, Pitch     uint64
	RowBytes, Rows uint64
}

// contiguous reports whether f's rows follow one another with no gap:
// one row, or a pitch of the rows' bytes.
func (f FillRows) contiguous() bool { return f.Rows == 1 || f.Pitch == f.RowBytes }

// multiLine reports whether f runs as multi-line launches, a launch for
// each 2^32 - 1 rows of each of a row's pieces: rows of at most 2 GiB,
// a pitch below 2^32.
func (f FillRows) multiLine() bool { return f.RowBytes <= MaxLine && f.Pitch < 1<<32 }

// Launches is the number of copy-engine launches f.Append makes, and the
// remap settings among them:
//
//   - rows with no gap: those of one fill of all their bytes (Fill);
//   - a pitch that is a multiple of 4: every row starts at the same
//     offset from a multiple of 4, so a row's head, body and tail
//     (Fill's pieces) are each one column of rows, a multi-line launch
//     for each 2^32 - 1 rows;
//   - another pitch of rows of at most 2 GiB: one-byte components, a
//     multi-line launch for each 2^32 - 1 rows;
//   - rows of more than 2 GiB, or 2^32 bytes or more apart: a Fill for
//     each row.
//
// A fill of no byte makes none. It refuses, wrapping ErrAddress, rows
// that pass 2^64 bytes of addresses, or launches whose words do not fit
// 64 bits.
func (f FillRows) Launches() (launches, remaps uint64, err error) {
	if f.Rows == 0 || f.RowBytes == 0 {
		return 0, 0, nil
	}
	if !rowsFit(f.Dst, f.Rows, f.Pitch, f.RowBytes) {
		return 0, 0, fmt.Errorf("%w: a fill of %d rows of %d bytes from %#x, %d apart, passes 2^64", ErrAddress, f.Rows, f.RowBytes, f.Dst, f.Pitch)
	}
	if f.contiguous() {
		return FillLaunches(f.Dst, f.Rows*f.RowBytes)
	}
	chunks := ceilDiv(f.Rows, MaxLines)
	if f.multiLine() {
		if f.Pitch%4 != 0 {
			return chunks, 1, nil
		}
		// The pieces of the first row are every row's.
		l, m, _ := FillLaunches(f.Dst, f.RowBytes)
		return l * chunks, m, nil
	}
	// A Fill a row: the rows' starts repeat their offsets from a multiple
	// of 4 every 4 rows, and so do their pieces.
	for k := range min(f.Rows, 4) {
		l, m, _ := FillLaunches(f.Dst+k*f.Pitch, f.RowBytes)
		n := (f.Rows-k-1)/4 + 1 // the rows k, k+4, ... below Rows
		lh, ll := bits.Mul64(l, n)
		mh, ml := bits.Mul64(m, n)
		var c1, c2 uint64
		launches, c1 = bits.Add64(launches, ll, 0)
		remaps, c2 = bits.Add64(remaps, ml, 0)
		if lh|mh|c1|c2 != 0 {
			return 0, 0, fmt.Errorf("%w: a fill of %d rows of %d bytes takes more than 2^64 launches", ErrAddress, f.Rows, f.RowBytes)
		}
	}
	if remaps > math.MaxUint64/FillRemapWords || launches > (math.MaxUint64-remaps*FillRemapWords)/CopyLaunchWords {
		return 0, 0, fmt.Errorf("%w: a fill of %d rows of %d bytes takes %d launches, whose words pass 2^64", ErrAddress, f.Rows, f.RowBytes, launches)
	}
	return launches, remaps, nil
}

// Words is the words of f.Append's launches and remap settings, where
// Launches takes f.
func (f FillRows) Words() (uint64, error) {
	l, m, err := f.Launches()
	if err != nil {
		return 0, err
	}
	return l*CopyLaunchWords + m*FillRemapWords, nil
}

// Append appends the launches that set f's bytes to v, as Launches counts
// them; it appends nothing for a fill Launches refuses. Each launch waits
// for the copy engine's earlier launches (NON_PIPELINED).
func (f FillRows) Append(b []uint32, g *Generation, v byte) []uint32 {
	return f.appendWord(b, g, uint32(v)*0x01010101)
}

// AppendWords appends the launches that set f's four-byte words to w,
// little-endian, as Launches counts them: f's Dst and RowBytes, and its
// Pitch where it has more than one row, are multiples of 4, so that its
// rows have no head or tail bytes. It appends nothing for another fill,
// or one Launches refuses.
func (f FillRows) AppendWords(b []uint32, g *Generation, w uint32) []uint32 {
	if f.Dst%4 != 0 || f.RowBytes%4 != 0 || (f.Rows > 1 && f.Pitch%4 != 0) {
		return b
	}
	return f.appendWord(b, g, w)
}

// appendWord is Append with the body's components set to w and any
// head's and tail's bytes to w's low byte (fillWord).
func (f FillRows) appendWord(b []uint32, g *Generation, w uint32) []uint32 {
	if _, _, err := f.Launches(); err != nil || f.Rows == 0 || f.RowBytes == 0 {
		return b
	}
	if f.contiguous() {
		return fillWord(b, g, f.Dst, f.Rows*f.RowBytes, w)
	}
	if !f.multiLine() {
		for r := range f.Rows {
			b = fillWord(b, g, f.Dst+r*f.Pitch, f.RowBytes, w)
		}
		return b
	}
	// column launches the rows' columns of length components from byte
	// off of each row, a launch for each MaxLines rows.
	column := func(b []uint32, off, length, _ uint64) []uint32 {
		for done := uint64(0); done < f.Rows; {
			n := min(f.Rows-done, MaxLines)
			at := f.Dst + done*f.Pitch + off
			b = copyLaunch(b, g, at, at, f.Pitch, f.Pitch, uint32(length), uint32(n), fillLaunch|DMAMultiLine)
			done += n
		}
		return b
	}
	if f.Pitch%4 != 0 {
		b = remap(b, w&255, RemapComponentOne)
		return column(b, 0, f.RowBytes, 1)
	}
	head, body, tail := fillPieces(f.Dst, f.RowBytes)
	return pieces(b, head, body, tail, w, column)
}
