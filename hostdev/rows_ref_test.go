package hostdev

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// refRows is what the copy or fill of rows p does to dst, from src: each
// row copied as copy does, or set to the byte, or to the four-byte word
// little-endian from the row's first byte.
func refRows(dst, src []byte, p device.Part) {
	for r := range p.Rows {
		d := dst[p.DstOffset+r*p.DstPitch:][:p.RowBytes]
		switch {
		case !p.Filling:
			copy(d, src[p.SrcOffset+r*p.SrcPitch:][:p.RowBytes])
		case p.Fill32:
			for j := range d {
				d[j] = byte(p.Value >> (8 * (j % 4)))
			}
		default:
			for j := range d {
				d[j] = p.Byte
			}
		}
	}
}

// TestRowsAgainstReference runs copies and fills of rows of random shapes
// (rows of a few bytes to more than two pieces, packed or pitched,
// offsets anywhere, on either queue)
// between two regions, and compares every byte of the destination with
// refRows.
func TestRowsAgainstReference(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	const size = 1 << 20
	src, sm := alloc(t, d, size)
	dst, dm := alloc(t, d, size)
	want := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for it := range 200 {
		for i := range sm {
			sm[i], dm[i] = byte(rng.Uint32()), 0x55
		}
		copy(want, dm)
		p := device.Part{Kind: device.CopyRows, Queue: rng.IntN(2), Src: src, Dst: dst,
			Byte: byte(rng.Uint32()), Value: rng.Uint32()}
		mode := rng.IntN(3)
		p.Filling, p.Fill32 = mode > 0, mode == 2
		switch rng.IntN(3) {
		case 0:
			p.RowBytes = uint64(rng.IntN(64) + 1)
		case 1:
			p.RowBytes = uint64(rng.IntN(4096) + 1)
		default:
			p.RowBytes = uint64(rng.IntN(2*rowsPiece+rowsPiece/2) + 1)
		}
		if p.Fill32 {
			p.RowBytes = (p.RowBytes + 3) &^ 3
		}
		p.Rows = uint64(rng.IntN(int(min(size/(p.RowBytes+1), 5000)))) + 1
		pitch := func() uint64 {
			switch rng.IntN(3) {
			case 0:
				return p.RowBytes
			case 1:
				return p.RowBytes + uint64(rng.IntN(64))
			}
			return uint64(rng.IntN(int(p.RowBytes) + 1))
		}
		p.DstPitch, p.SrcPitch = max(pitch(), p.RowBytes), max(pitch(), p.RowBytes)
		if p.Fill32 {
			p.DstPitch = (p.DstPitch + 3) &^ 3
		}
		for p.Rows > 1 && (p.Rows-1)*max(p.DstPitch, p.SrcPitch)+p.RowBytes > size {
			p.Rows /= 2
		}
		spare := func(pitch uint64) int { return int(size - (p.Rows-1)*pitch - p.RowBytes) }
		p.DstOffset = uint64(rng.IntN(spare(p.DstPitch) + 1))
		p.SrcOffset = uint64(rng.IntN(spare(p.SrcPitch) + 1))
		refRows(want, sm, p)
		if err := reach(t, d, submit(t, d, p)); err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(dm, want); i >= 0 {
			t.Fatalf("case %d, %d rows of %d bytes, pitches %d to %d, offsets %d to %d, filling %v, words %v: byte %d is %#x, want %#x",
				it, p.Rows, p.RowBytes, p.SrcPitch, p.DstPitch, p.SrcOffset, p.DstOffset, p.Filling, p.Fill32, i, dm[i], want[i])
		}
	}
}

// TestWithinAgainstBigInts compares within, which Room checks rows
// against their region with, with the same sum taken in big integers,
// over counts near 0, the page, 2^32, 2^63 and 2^64.
func TestWithinAgainstBigInts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	edges := []uint64{0, 1, 2, 3, 4095, 4096, 1 << 32, 1<<63 - 1, 1 << 63, 1<<64 - 2, 1<<64 - 1}
	pick := func() uint64 {
		if rng.IntN(2) == 0 {
			return edges[rng.IntN(len(edges))]
		}
		return uint64(rng.IntN(10000))
	}
	u := func(x uint64) *big.Int { return new(big.Int).SetUint64(x) }
	for range 200000 {
		off, rows, n, pitch := pick(), max(pick(), 1), max(pick(), 1), pick()
		size := rng.IntN(20000)
		if rng.IntN(2) == 0 {
			size = int(pick() & (1<<62 - 1))
		}
		end := new(big.Int).Mul(u(rows-1), u(pitch))
		end.Add(end, u(n)).Add(end, u(off))
		want := end.Cmp(big.NewInt(int64(size))) <= 0
		if got := within(off, rows, n, pitch, size); got != want {
			t.Fatalf("within(%d, %d, %d, %d, %d) is %v, want %v", off, rows, n, pitch, size, got, want)
		}
	}
}

// TestFreePeerBaseDuringCopyRows frees, between two pieces of a copy of
// rows on one device, the region of another device that the copy reaches
// through a view (MapPeer), as its destination and as its source, and
// allocates a region of the same size on that device at once: the copy
// faults its device, naming the freed region, and writes no byte of the
// new region.
func TestFreePeerBaseDuringCopyRows(t *testing.T) {
	for _, as := range []string{"destination", "source"} {
		t.Run(as, func(t *testing.T) {
			a, _ := newDev(t, Config{}, 0)
			b, _ := newDev(t, Config{}, 0)
			const size = 4 * rowsPiece
			mine, m := alloc(t, b, size)
			for i := range m {
				m[i] = 0xab
			}
			base, _ := alloc(t, a, size)
			v, err := b.MapPeer(a, base)
			if err != nil {
				t.Fatal(err)
			}
			var fresh *region
			var freeErr, allocErr error
			look := func() {
				if fresh != nil || freeErr != nil || allocErr != nil {
					return
				}
				if freeErr = a.Free(base); freeErr != nil {
					return
				}
				r, err := a.Alloc(device.DeviceMemory, size)
				if allocErr = err; err == nil {
					fresh = r.(*region)
				}
			}
			b.rowsLook.Store(&look)
			p := device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: mine, Dst: v,
				RowBytes: size, Rows: 1, SrcPitch: size, DstPitch: size}
			if as == "source" {
				p.Src, p.Dst = v, mine
			}
			val := submit(t, b, p)
			deadline := time.Now().Add(10 * time.Second)
			for err = nil; err == nil && !device.AtLeast(atomic.LoadUint64(b.word), val); {
				if time.Now().After(deadline) {
					t.Fatal("neither the value nor a fault after 10 s")
				}
				err = b.Sleep(atomic.LoadUint64(b.word), 100*time.Millisecond)
			}
			if freeErr != nil || allocErr != nil {
				t.Fatalf("free: %v; alloc: %v", freeErr, allocErr)
			}
			if f, ok := device.AsFault(err); !ok || !strings.Contains(f.Why, "freed") {
				t.Errorf("sleep returned %v, want a fault that names a freed region", err)
			}
			if fresh == nil {
				t.Fatal("the copy never looked at the stop")
			}
			for i, x := range fresh.bytes(0, size) {
				if x != 0 {
					t.Fatalf("byte %d of the region allocated after the Free is %#x", i, x)
				}
			}
		})
	}
}
