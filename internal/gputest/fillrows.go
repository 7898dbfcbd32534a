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
	mid, err := dev.Alloc(device.DeviceMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	defer mid.Free()
	host, err := dev.Alloc(device.PinnedMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	run := func(parts ...rig.Part) {
		t.Helper()
		s, err := rig.NewSubmission(dev, parts...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Take().Submit(ctx, host, mid)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
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
			ctx := context.Background()
			mid, err := dev.Alloc(device.DeviceMemory, int(c.off+c.rows*c.pitch))
			if err != nil {
				b.Fatal(err)
			}
			defer mid.Free()
			s, err := rig.NewSubmission(dev, rig.FillRows(0, c.off, c.rowBytes, c.rows, c.pitch, 7))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.Take().Submit(ctx, mid)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
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
	mid, err := dev.Alloc(device.DeviceMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	defer mid.Free()
	host, err := dev.Alloc(device.PinnedMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	do := func(bufs []*rig.Buffer, parts ...rig.Part) error {
		t.Helper()
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
			if err := do([]*rig.Buffer{host, mid}, rig.Copy(0, 0, 1, 0, n).On(q), fill.On(q), rig.Copy(1, 0, 0, 0, n).On(q)); err != nil {
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
	if err := do([]*rig.Buffer{mid}, rig.FillUint32(0, 2, 4, 1)); !errors.Is(err, rig.ErrInvalid) {
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
	err = do([]*rig.Buffer{lent}, rig.FillUint32(0, 0, 4, 0xa1b2c3d4))
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
			ctx := context.Background()
			mid, err := dev.Alloc(device.DeviceMemory, int(4*n))
			if err != nil {
				b.Fatal(err)
			}
			defer mid.Free()
			s, err := rig.NewSubmission(dev, rig.FillUint32(0, 0, n, 0x3f800000))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(4 * n))
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.Take().Submit(ctx, mid)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
