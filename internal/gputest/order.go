package gputest

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// PartsOrderedByBuffers submits on dev, with the test image bin (which
// holds twice), with the default queues and no
// After, a copy of host memory into x on COPY:0, launches of twice on x on
// COMPUTE:0 and a copy of x back on COPY:0, many times over: rig orders
// the parts by their buffers, so every float comes back doubled as often
// as launched. Lone launches of twice on another buffer run between (the
// driver's shortest path for one launch).
func PartsOrderedByBuffers(t *testing.T, dev *rig.Device, bin []byte) {
	t.Helper()
	img, err := dev.LoadImage(bin)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 22
	newBuf := func(m device.Memory) *rig.Buffer {
		b, err := dev.Alloc(m, 4*n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in, x, out, y := newBuf(device.PinnedMemory), newBuf(device.DeviceMemory), newBuf(device.PinnedMemory), newBuf(device.DeviceMemory)
	subOf := func(parts ...rig.Part) *rig.Submission {
		s, err := rig.NewSubmission(dev, parts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	once := subOf(
		rig.Copy(0, 0, 1, 0, 4*n),
		rig.Launch(twice, 8, rig.ReadWrite(1, 0)),
		rig.Copy(1, 0, 2, 0, 4*n))
	twiceTwice := subOf(
		rig.Copy(0, 0, 1, 0, 4*n),
		rig.Launch(twice, 8, rig.ReadWrite(1, 0)),
		rig.Launch(twice, 8, rig.ReadWrite(1, 0)),
		rig.Copy(1, 0, 2, 0, 4*n))
	// The launch names x through index 3 as well: one buffer.
	aliased := subOf(
		rig.Copy(0, 0, 1, 0, 4*n),
		rig.Launch(twice, 8, rig.ReadWrite(3, 0)),
		rig.Copy(1, 0, 2, 0, 4*n))
	lone := subOf(rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inF := unsafe.Slice((*float32)(unsafe.Pointer(&in.Bytes()[0])), n)
	outF := unsafe.Slice((*float32)(unsafe.Pointer(&out.Bytes()[0])), n)
	for it := range 300 {
		s, launches, factor := once, []int{1}, float32(2)
		switch it % 3 {
		case 1:
			s, launches, factor = twiceTwice, []int{1, 2}, 4
		case 2:
			s = aliased
		}
		base := float32(it % 1000)
		for i := range inF {
			inF[i] = base + float32(i%4096)
		}
		clear(out.Bytes())
		if it%5 == 0 {
			r := lone.Take()
			r.Groups(0, n/256, 1, 1)
			r.Threads(0, 256, 1, 1)
			if _, err := r.Submit(ctx, y); err != nil {
				t.Fatal(err)
			}
		}
		r := s.Take()
		for _, i := range launches {
			r.Groups(i, n/256, 1, 1)
			r.Threads(i, 256, 1, 1)
		}
		p, err := r.Submit(ctx, in, x, out, x)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		bad := 0
		for i, got := range outF {
			if want := factor * (base + float32(i%4096)); got != want {
				if bad == 0 {
					t.Errorf("iteration %d: out[%d] = %v, want %v: the parts ran out of their buffers' order", it, i, got, want)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Fatalf("iteration %d: %d of %d floats wrong", it, bad, n)
		}
	}
}
