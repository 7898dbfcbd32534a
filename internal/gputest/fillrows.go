package gputest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// allocs returns a buffer of n bytes of dev for each kind of memory,
// freed when t ends.
func allocs(t testing.TB, dev *rig.Device, n int, kinds ...device.Memory) []*rig.Buffer {
	t.Helper()
	bufs := make([]*rig.Buffer, len(kinds))
	for i, k := range kinds {
		b, err := dev.Alloc(k, n)
		if err != nil {
			t.Fatalf("an alloc of %d bytes of %v memory: %v", n, k, err)
		}
		t.Cleanup(func() { b.Free() })
		bufs[i] = b
	}
	return bufs
}

// do submits a run of a submission of parts on dev with bufs, and waits
// for its point.
func do(ctx context.Context, dev *rig.Device, bufs []*rig.Buffer, parts ...rig.Part) error {
	s, err := rig.NewSubmission(dev, parts...)
	if err != nil {
		return err
	}
	p, err := s.Take().Submit(ctx, bufs...)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}

// loop submits a run of a submission of part on dev with bufs and waits
// for its point, b.N times, and reports the allocations.
func loop(b *testing.B, dev *rig.Device, bufs []*rig.Buffer, part rig.Part) {
	ctx := context.Background()
	s, err := rig.NewSubmission(dev, part)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.Take().Submit(ctx, bufs...)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// FillRows fills rows with gaps between them in Device memory of dev, on
// each of its queues, rows of many shapes (a start and a pitch at each
// offset from a multiple of 4, an odd pitch, a row of one byte, rows that
// touch, a million rows of a few bytes, wide rows), and checks every byte
// of the buffer copied back to the host: each row's set, and every byte between
// and around them as the buffer held it before.
func FillRows(t *testing.T, dev *rig.Device) {
	t.Helper()
	const n = 16 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bufs := allocs(t, dev, n, device.PinnedMemory, device.DeviceMemory)
	host := bufs[0]
	run := func(parts ...rig.Part) {
		t.Helper()
		if err := do(ctx, dev, bufs, parts...); err != nil {
			t.Fatal(err)
		}
	}
	want := make([]byte, n)
	for q := range dev.Facts().Queues {
		shapes := []struct{ off, rowBytes, rows, pitch uint64 }{
			{1, 10, 1000, 16},       // a head, a body and a tail a row
			{0, 8, 1000, 12},        // bodies
			{2, 6, 1000, 20},        // a head and a body
			{0, 7, 1000, 16},        // a body and a tail
			{3, 1, 5000, 8},         // a byte a row
			{5, 9, 3000, 13},        // an odd pitch
			{7, 4096, 64, 8192},     // rows of pages
			{6, 100, 500, 100},      // rows that touch
			{4, 3, 1 << 20, 16},     // a million rows
			{9, 2000, 1, 0},         // one row
			{11, 1 << 20, 3, 0},     // rows that touch, from an odd byte
			{2, 5, 400000, 41},      // many rows, an odd pitch
			{3, 300000, 20, 300001}, // wide rows, an odd pitch
			{5, 1024, 300, 1030},    // rows of 1 KiB
		}
		for i, c := range shapes {
			name := fmt.Sprintf("queue %d, fill %d (%d rows of %d bytes, pitch %d, from byte %d)", q, i, c.rows, c.rowBytes, c.pitch, c.off)
			// The buffer's bytes before: a pattern that no fill writes.
			for j := range want {
				want[j] = byte(j*7+i) | 1
			}
			copy(host.Bytes(), want)
			v := byte(i*2 + 2)
			run(rig.Copy(0, 0, 1, 0, n).On(q), rig.FillRows(1, c.off, c.rowBytes, c.rows, c.pitch, v).On(q), rig.Copy(1, 0, 0, 0, n).On(q))
			pitch := c.pitch
			if pitch == 0 {
				pitch = c.rowBytes
			}
			for r := range c.rows {
				at := c.off + r*pitch
				for k := range c.rowBytes {
					want[at+k] = v
				}
			}
			if got := host.Bytes(); !bytes.Equal(got, want) {
				k := 0
				for got[k] == want[k] {
					k++
				}
				t.Fatalf("%s: byte %d reads %#x, want %#x", name, k, got[k], want[k])
			}
		}
		t.Logf("queue %d: %d fills of rows checked", q, len(shapes))
	}
}

// FillRowsBench times fills of rows with gaps between them in Device
// memory of dev, one submission and its wait an op, on COPY:0: 4,096 rows
// of 64 bytes 128 apart, a million rows of 4 bytes 16 apart from byte 1,
// 256 rows of 1 KiB, 64 of 4 KiB, and 16 rows of 1 MiB 4 bytes apart and
// 1 byte apart. It reports the rows a second.
func FillRowsBench(b *testing.B, dev *rig.Device) {
	for _, c := range []struct {
		name                       string
		off, rowBytes, rows, pitch uint64
	}{
		{"4096x64", 0, 64, 4096, 128},
		{"1Mx4", 1, 4, 1 << 20, 16},
		{"256x1KiB,pitch+16", 0, 1 << 10, 256, 1<<10 + 16},
		{"64x4KiB,pitch+4", 0, 4 << 10, 64, 4<<10 + 4},
		{"16x1MiB,pitch+4", 0, 1 << 20, 16, 1<<20 + 4},
		{"16x1MiB,pitch+1", 0, 1 << 20, 16, 1<<20 + 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			mid := allocs(b, dev, int(c.off+c.rows*c.pitch), device.DeviceMemory)
			loop(b, dev, mid, rig.FillRows(0, c.off, c.rowBytes, c.rows, c.pitch, 7))
			b.ReportMetric(float64(c.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// FillWords fills four-byte words (FillUint32, FillFloat32) in Device
// memory of dev, on each of its queues, of several counts and offsets,
// the largest 4 MiB, and checks every byte of the buffer copied back to
// the host; an offset that is not a multiple of 4 is refused with
// ErrInvalid. Where dev maps host memory (Facts.MapsHost), it fills words
// of a MapHost buffer that starts 2 bytes past a multiple of 4: unaligned
// says whether dev fills it (the host driver) or refuses it with
// ErrRefused (the GPU drivers).
func FillWords(t *testing.T, dev *rig.Device, unaligned bool) {
	t.Helper()
	const n = 8 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bufs := allocs(t, dev, n, device.PinnedMemory, device.DeviceMemory)
	host, mid := bufs[0], bufs[1]
	want := make([]byte, n)
	le := func(b []byte, v uint32) {
		for i := range b {
			b[i] = byte(v >> (8 * (i % 4)))
		}
	}
	for q := range dev.Facts().Queues {
		for i, c := range []struct {
			off, count uint64
			float      bool
		}{
			{0, 1, false},
			{4, 3, false},
			{12, 1000, false},
			{1 << 20, 1 << 20, false},
			{8, 77777, true},
			{n - 8, 2, false},
		} {
			for j := range want {
				want[j] = byte(j*5+i) | 1
			}
			copy(host.Bytes(), want)
			v := uint32(0x12345600 + 2*i)
			fill := rig.FillUint32(1, c.off, c.count, v)
			if c.float {
				f := float32(i) + 0.25
				v = math.Float32bits(f)
				fill = rig.FillFloat32(1, c.off, c.count, f)
			}
			if err := do(ctx, dev, bufs, rig.Copy(0, 0, 1, 0, n).On(q), fill.On(q), rig.Copy(1, 0, 0, 0, n).On(q)); err != nil {
				t.Fatalf("queue %d, fill %d: %v", q, i, err)
			}
			le(want[c.off:c.off+4*c.count], v)
			if got := host.Bytes(); !bytes.Equal(got, want) {
				k := 0
				for got[k] == want[k] {
					k++
				}
				t.Fatalf("queue %d, fill %d (%d words from byte %d): byte %d reads %#x, want %#x", q, i, c.count, c.off, k, got[k], want[k])
			}
		}
		t.Logf("queue %d: 6 fills of words checked", q)
	}
	if err := do(ctx, dev, []*rig.Buffer{mid}, rig.FillUint32(0, 2, 4, 1)); !errors.Is(err, rig.ErrInvalid) {
		t.Errorf("a fill of words from byte 2: %v, want ErrInvalid", err)
	}
	if !dev.Facts().MapsHost {
		return
	}
	back := make([]byte, 4096+64)
	at := 2
	for (uintptr(unsafe.Pointer(&back[at])))%4 != 2 {
		at++
	}
	lent, err := dev.MapHost(back[at : at+64])
	if err != nil {
		t.Fatal(err)
	}
	defer lent.Free()
	err = do(ctx, dev, []*rig.Buffer{lent}, rig.FillUint32(0, 0, 4, 0xa1b2c3d4))
	switch {
	case unaligned && err != nil:
		t.Errorf("a fill of words of a buffer 2 bytes past a multiple of 4: %v", err)
	case unaligned:
		w := make([]byte, 16)
		le(w, 0xa1b2c3d4)
		if !bytes.Equal(back[at:at+16], w) {
			t.Errorf("a fill of words of a buffer 2 bytes past a multiple of 4 reads % x", back[at:at+16])
		}
	case !errors.Is(err, rig.ErrRefused):
		t.Errorf("a fill of words of a buffer 2 bytes past a multiple of 4: %v, want ErrRefused", err)
	default:
		t.Logf("a fill of words of a buffer 2 bytes past a multiple of 4: %v", err)
	}
}

// FillWordsBench times fills of four-byte words in Device memory of dev,
// one submission and its wait an op, on COPY:0: 4 KiB, 4 MiB and 64 MiB.
// It reports the bytes a second.
func FillWordsBench(b *testing.B, dev *rig.Device) {
	for _, n := range []uint64{1 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dKiB", 4*n>>10), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			loop(b, dev, allocs(b, dev, int(4*n), device.DeviceMemory), rig.FillUint32(0, 0, n, 0x3f800000))
		})
	}
}

// CopyRowsBench times copies of rows with gaps between them, from one
// Device buffer of dev to another, one submission and its wait an op, on
// COPY:0: 4,096 rows of 64 bytes, 256 rows of 1 KiB and 16 rows of 1 MiB,
// each side's pitch the rows' bytes and 16 more. It reports the bytes a
// second.
func CopyRowsBench(b *testing.B, dev *rig.Device) {
	for _, c := range []struct {
		name           string
		rowBytes, rows uint64
	}{
		{"4096x64", 64, 4096},
		{"256x1KiB", 1 << 10, 256},
		{"16x1MiB", 1 << 20, 16},
	} {
		b.Run(c.name, func(b *testing.B) {
			pitch := c.rowBytes + 16
			b.SetBytes(int64(c.rows * c.rowBytes))
			bufs := allocs(b, dev, int(c.rows*pitch), device.DeviceMemory, device.DeviceMemory)
			loop(b, dev, bufs, rig.CopyRows(rig.Rows{Src: 0, Dst: 1, RowBytes: c.rowBytes, Rows: c.rows, SrcPitch: pitch, DstPitch: pitch}))
		})
	}
}

// CopyRows copies rows with gaps between them from one Device buffer of
// dev to another, on each of its queues, rows of several shapes (narrow
// and wide, source and destination at the same offset from a multiple of
// 16 and at others, odd pitches), and checks every byte of the
// destination copied back to the host.
func CopyRows(t *testing.T, dev *rig.Device) {
	t.Helper()
	const n = 16 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The host's, the source, the destination.
	bufs := allocs(t, dev, n, device.PinnedMemory, device.DeviceMemory, device.DeviceMemory)
	host := bufs[0].Bytes()
	run := func(parts ...rig.Part) {
		t.Helper()
		if err := do(ctx, dev, bufs, parts...); err != nil {
			t.Fatal(err)
		}
	}
	src := make([]byte, n)
	want := make([]byte, n)
	shapes := []rig.Rows{
		{SrcOffset: 5, DstOffset: 3, RowBytes: 4100, Rows: 64, SrcPitch: 4200, DstPitch: 8192},
		{SrcOffset: 16, DstOffset: 32, RowBytes: 4096, Rows: 64, SrcPitch: 4112, DstPitch: 8192},
		{SrcOffset: 0, DstOffset: 0, RowBytes: 100, Rows: 1000, SrcPitch: 128, DstPitch: 256},
		{SrcOffset: 1, DstOffset: 1, RowBytes: 300000, Rows: 20, SrcPitch: 300001, DstPitch: 300003},
		{SrcOffset: 0, DstOffset: 7, RowBytes: 1 << 20, Rows: 3, SrcPitch: 1 << 20, DstPitch: 1<<20 + 5},
		{SrcOffset: 9, DstOffset: 2, RowBytes: 1024, Rows: 300, SrcPitch: 1031, DstPitch: 1040},
	}
	for q := range dev.Facts().Queues {
		for i, c := range shapes {
			for j := range src {
				src[j] = byte(j*13 + j>>9 + i)
				want[j] = byte(j*5+i) | 1
			}
			copy(host, src)
			run(rig.Copy(0, 0, 1, 0, n).On(q))
			copy(host, want)
			c.Src, c.Dst = 1, 2
			run(rig.Copy(0, 0, 2, 0, n).On(q), rig.CopyRows(c).On(q), rig.Copy(2, 0, 0, 0, n).On(q))
			for r := range c.Rows {
				s, d := c.SrcOffset+r*c.SrcPitch, c.DstOffset+r*c.DstPitch
				copy(want[d:d+c.RowBytes], src[s:s+c.RowBytes])
			}
			if !bytes.Equal(host, want) {
				k := 0
				for host[k] == want[k] {
					k++
				}
				t.Fatalf("queue %d, copy %d (%d rows of %d bytes, from byte %d, %d apart, to byte %d, %d apart): byte %d reads %#x, want %#x",
					q, i, c.Rows, c.RowBytes, c.SrcOffset, c.SrcPitch, c.DstOffset, c.DstPitch, k, host[k], want[k])
			}
		}
		t.Logf("queue %d: %d copies of rows checked", q, len(shapes))
	}
}
