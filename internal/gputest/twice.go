package gputest

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// Twice runs the example on dev, within ctx: n floats (a multiple of 256)
// go up by a copy from Pinned into Device memory, twice of the image bin
// doubles them, a copy brings them down, and the host checks each. It
// returns how long the three took from the first submit to the wait's
// return, and fails the test naming the device and the step that failed.
func Twice(t testing.TB, ctx context.Context, dev *rig.Device, bin []byte, n uint64) time.Duration {
	t.Helper()
	img, err := dev.LoadImage(bin)
	if err != nil {
		t.Fatalf("%s: example: load image: %v", dev.Name(), err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		t.Fatalf("%s: example: %v", dev.Name(), err)
	}
	x, err := dev.Alloc(device.DeviceMemory, 4*int(n))
	if err != nil {
		t.Fatalf("%s: example: %v", dev.Name(), err)
	}
	defer x.Free()
	h, err := dev.Alloc(device.PinnedMemory, 4*int(n))
	if err != nil {
		t.Fatalf("%s: example: %v", dev.Name(), err)
	}
	defer h.Free()
	hb := h.Bytes()
	for i := range n {
		binary.LittleEndian.PutUint32(hb[4*i:], math.Float32bits(float32(i)))
	}
	up, err := rig.NewSubmission(dev, rig.Copy(0, 0, 1, 0, 4*n))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rig.NewSubmission(dev, rig.Launch(twice, 8, rig.Write(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	down, err := rig.NewSubmission(dev, rig.Copy(0, 0, 1, 0, 4*n))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := up.Take().Submit(ctx, h, x); err != nil {
		t.Fatalf("%s: example: up: %v", dev.Name(), err)
	}
	run := s.Take()
	run.Groups(0, int(n/256), 1, 1)
	run.Threads(0, 256, 1, 1)
	if _, err := run.Submit(ctx, x); err != nil {
		t.Fatalf("%s: example: twice: %v", dev.Name(), err)
	}
	p, err := down.Take().Submit(ctx, x, h)
	if err != nil {
		t.Fatalf("%s: example: down: %v", dev.Name(), err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("%s: example: wait: %+v", dev.Name(), err)
	}
	took := time.Since(t0)
	for i := range n {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:])); got != 2*float32(i) {
			t.Fatalf("%s: example: x[%d] = %v, want %v", dev.Name(), i, got, 2*float32(i))
		}
	}
	return took
}
