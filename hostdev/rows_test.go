package hostdev

import (
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
)

// rowsCase is a copy or fill of rows, over regions of size bytes.
type rowsCase struct {
	name               string
	queue              int
	rowBytes, rows     uint64
	srcPitch, dstPitch uint64
	filling            bool
	size               int
}

var rowsCases = []rowsCase{
	{"packed", device.Copy, 4096, 1024, 4096, 4096, false, 4 << 20},
	{"pitched on compute", device.Compute, 1000, 4096, 1024, 1024, false, 4 << 20},
	{"fill", device.Copy, 4096, 1024, 0, 4096, true, 4 << 20},
	{"tiny rows", device.Copy, 1, 1 << 20, 2, 2, false, 2 << 20},
}

// part is the case's part between src and dst.
func (tc rowsCase) part(src, dst *region) device.Part {
	return device.Part{Kind: device.CopyRows, Queue: tc.queue, Src: src, Dst: dst,
		RowBytes: tc.rowBytes, Rows: tc.rows, SrcPitch: tc.srcPitch, DstPitch: tc.dstPitch,
		Filling: tc.filling, Byte: 0xab}
}

// rowsRegions allocates the case's regions: the source's bytes have the
// top bit set, and the destination's are 0x55, which no copied byte is.
func rowsRegions(t *testing.T, d *dev, tc rowsCase) (src, dst *region, sm, dm []byte) {
	src, sm = alloc(t, d, tc.size)
	dst, dm = alloc(t, d, tc.size)
	for i := range sm {
		sm[i], dm[i] = byte(i%251)|0x80, 0x55
	}
	return src, dst, sm, dm
}

// TestCopyRowsPieces copies rows over many pieces: each byte arrives, and
// the copy looks at the stop once for each piece.
func TestCopyRowsPieces(t *testing.T) {
	for _, tc := range rowsCases {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDev(t, Config{}, 0)
			src, dst, sm, dm := rowsRegions(t, d, tc)
			var looks atomic.Int64
			look := func() { looks.Add(1) }
			d.rowsLook.Store(&look)
			if err := reach(t, d, submit(t, d, tc.part(src, dst))); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, tc.size)
			for i := range want {
				want[i] = 0x55
			}
			for r := range tc.rows {
				for j := range tc.rowBytes {
					b := byte(0xab)
					if !tc.filling {
						b = sm[r*tc.srcPitch+j]
					}
					want[r*tc.dstPitch+j] = b
				}
			}
			if i := firstDiff(dm, want); i >= 0 {
				t.Fatalf("byte %d is %#x, want %#x", i, dm[i], want[i])
			}
			counted := tc.rows * max(tc.rowBytes, rowCost)
			if packed := tc.filling || tc.srcPitch == tc.rowBytes; packed && tc.dstPitch == tc.rowBytes {
				counted = tc.rows * tc.rowBytes
			}
			if got, want := looks.Load(), int64(counted/rowsPiece); got != want {
				t.Fatalf("the copy looked at the stop %d times, want %d", got, want)
			}
		})
	}
}

// TestCopyRowsStop stops the device at the copy's first look at the stop:
// the copy ends there, with the rest of its rows and the value's later
// part undone, and the word reaches the value.
func TestCopyRowsStop(t *testing.T) {
	for _, tc := range rowsCases {
		t.Run(tc.name, func(t *testing.T) {
			d, w := newDev(t, Config{}, 0)
			src, dst, _, dm := rowsRegions(t, d, tc)
			var looks atomic.Int64
			look := func() {
				if looks.Add(1) == 1 {
					d.Stop("")
				}
			}
			d.rowsLook.Store(&look)
			logReset()
			v := submit(t, d, tc.part(src, dst), fillPart(tc.queue, 1))
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			if got := atomic.LoadUint64(w); got != v {
				t.Fatalf("word at %d after stop, want %d", got, v)
			}
			if got := looks.Load(); got != 1 {
				t.Fatalf("the copy looked at the stop %d times after it stopped, want 1", got)
			}
			written := 0
			for _, b := range dm {
				if b != 0x55 {
					written++
				}
			}
			total := int(tc.rows * tc.rowBytes)
			if written == 0 || written > rowsPiece || written >= total {
				t.Fatalf("the stopped copy wrote %d of its %d bytes, want one piece of at most %d", written, total, rowsPiece)
			}
			if got := logVals(); len(got) != 0 {
				t.Fatalf("the part after the stopped copy ran: %v", got)
			}
		})
	}
}

// TestCopyWithinRegion copies a span of a region onto bytes of it that
// overlap the span, above it and below it, over many pieces: each byte
// arrives as one memmove would put it.
func TestCopyWithinRegion(t *testing.T) {
	const size, n = 2 << 20, 600 << 10
	for _, c := range []struct {
		name     string
		src, dst uint64
	}{
		{"onto bytes above its source", 1000, 5000},
		{"onto bytes below its source", 5000, 1000},
		{"onto bytes a piece above", 0, rowsPiece + 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := newDev(t, Config{}, 0)
			r, m := alloc(t, d, size)
			for i := range m {
				m[i] = byte(i % 251)
			}
			want := append([]byte(nil), m...)
			copy(want[c.dst:c.dst+n], want[c.src:c.src+n])
			p := device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: r, Dst: r,
				SrcOffset: c.src, DstOffset: c.dst, RowBytes: n, Rows: 1, SrcPitch: n, DstPitch: n}
			if err := reach(t, d, submit(t, d, p)); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if m[i] != want[i] {
					t.Fatalf("byte %d reads %d, want %d", i, m[i], want[i])
				}
			}
		})
	}
}

// TestRowsWithinThemselves copies rows of 1000 bytes one byte up within
// themselves (pitch 2000): each row moves as one memmove would, as a
// single row does (TestCopyWithinRegion), also a row that a look at the
// stop (every rowsPiece bytes counted) splits in two pieces.
func TestRowsWithinThemselves(t *testing.T) {
	const rowBytes, pitch, rows = 1000, 2000, 1024
	d, _ := newDev(t, Config{}, 0)
	r, m := alloc(t, d, pitch*rows+pitch)
	for i := range m {
		m[i] = byte(i % 251)
	}
	want := append([]byte(nil), m...)
	for row := 0; row < rows; row++ {
		o := row * pitch
		copy(want[o+1:o+1+rowBytes], want[o:o+rowBytes])
	}
	p := device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: r, Dst: r,
		SrcOffset: 0, DstOffset: 1, RowBytes: rowBytes, Rows: rows, SrcPitch: pitch, DstPitch: pitch}
	if err := reach(t, d, submit(t, d, p)); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if m[i] != want[i] {
			t.Fatalf("byte %d (row %d, byte %d of it) reads %d, want %d as a memmove of the row", i, i/pitch, i%pitch, m[i], want[i])
		}
	}
}
