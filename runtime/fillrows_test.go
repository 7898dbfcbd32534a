package rig_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/gputest"
	rig "github.com/rig-go/rig/runtime"
)

// TestFillRows fills rows with gaps between them on the host driver: each
// row's bytes are set and every byte between and around them is left.
func TestFillRows(t *testing.T) {
	d := host(t, hostdev.Config{})
	for _, tc := range []struct {
		name                       string
		off, rowBytes, rows, pitch uint64
	}{
		{"rows with gaps", 3, 5, 7, 16},
		{"a pitch of 0 is the rows' bytes", 1, 9, 4, 0},
		{"rows that touch", 0, 8, 8, 8},
		{"one row", 10, 20, 1, 0},
		{"an odd pitch", 2, 6, 9, 11},
		{"no rows", 5, 8, 0, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := alloc(t, d, device.PinnedMemory, 256)
			for i := range b.Bytes() {
				b.Bytes()[i] = 0x11
			}
			wait(t, submit(t, sub(t, d, rig.FillRows(0, tc.off, tc.rowBytes, tc.rows, tc.pitch, 0xc3)), b))
			want := bytes.Repeat([]byte{0x11}, 256)
			pitch := tc.pitch
			if pitch == 0 {
				pitch = tc.rowBytes
			}
			for r := range tc.rows {
				for i := range tc.rowBytes {
					want[tc.off+r*pitch+i] = 0xc3
				}
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("the buffer reads\n% x\nwant\n% x", b.Bytes(), want)
			}
		})
	}
	// The GPU drivers' check of rows, on the host driver.
	t.Run("shapes", func(t *testing.T) { gputest.FillRows(t, d) })
	x := alloc(t, d, device.PinnedMemory, 64)
	runHostile(t, d, []hostile{
		{"rows past 2^64", newSub(d, rig.FillRows(0, 8, 8, 1<<62, 16, 1)), rig.ErrInvalid, "past 2^64"},
		{"a row past 2^64", newSub(d, rig.FillRows(0, math.MaxUint64-3, 8, 1, 0, 1)), rig.ErrInvalid, "past 2^64"},
		{"rows past the buffer", runCall(sub(t, d, rig.FillRows(0, 0, 8, 4, 20, 1)), nil, x), rig.ErrRefused, "writes from byte 0 up to byte 68 of buffer 0, which holds 64"},
		{"rows that overlap", runCall(sub(t, d, rig.FillRows(0, 0, 8, 4, 4, 1)), nil, x), rig.ErrRefused, "(fill of rows): part 0 copies rows of 8 bytes with a destination pitch of 4"},
	})
}

// TestFillWords fills four-byte words on the host driver, a buffer lent
// at an address 2 bytes past a multiple of 4 too.
func TestFillWords(t *testing.T) {
	d := host(t, hostdev.Config{MapsHost: true})
	gputest.FillWords(t, d, true)
	runHostile(t, d, []hostile{
		{"words past 2^64", newSub(d, rig.FillUint32(0, 0, 1<<62, 1)), rig.ErrInvalid, "past 2^64"},
		{"words from an odd byte", newSub(d, rig.FillFloat32(0, 6, 4, 1)), rig.ErrInvalid, "from byte 6, not a multiple of 4"},
		{"words from 2^64-4", newSub(d, rig.FillUint32(0, math.MaxUint64-3, 2, 1)), rig.ErrInvalid, "past 2^64"},
	})
}

// BenchmarkFillRows times fills of rows on the host driver.
func BenchmarkFillRows(b *testing.B) { gputest.FillRowsBench(b, host(b, hostdev.Config{})) }

// BenchmarkFillWords times fills of four-byte words on the host driver.
func BenchmarkFillWords(b *testing.B) { gputest.FillWordsBench(b, host(b, hostdev.Config{})) }

// TestCopyRowsShapes runs the GPU drivers' check of copies of rows on the
// host driver.
func TestCopyRowsShapes(t *testing.T) { gputest.CopyRows(t, host(t, hostdev.Config{})) }
