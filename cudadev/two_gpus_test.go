package cudadev

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPUTwoGPUs runs work across two GPUs: a buffer of GPU 0 that GPU 1's
// work reads and writes through map_peer, with the hazards between the two
// devices waited on the GPU (a stream wait on the other device's word in
// rig's array). It skips where CUDA sees one GPU.
func TestGPUTwoGPUs(t *testing.T) {
	needGPU(t)
	if n, err := Count(); err != nil || n < 2 {
		t.Skipf("CUDA sees %d GPU(s) (%v): needs two", n, err)
	}
	ctx := context.Background()
	open := func(i int) *rig.Device {
		d, err := rig.Open(ctx, GPU(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(); <-d.Done() })
		return d
	}
	a, b := open(0), open(1)
	t.Logf("%s at %s, %s at %s", a.Name(), a.Facts().Bus, b.Name(), b.Facts().Bus)
	if !a.Facts().Waits.Has(device.WaitStores) || a.Word() == nil || b.Word() == nil {
		t.Fatal("the devices cannot wait on each other's words on the GPU")
	}
	const n = 1 << 20
	x := alloc(t, a, device.DeviceMemory, 4*n)
	y := alloc(t, b, device.DeviceMemory, 4*n)
	host := alloc(t, b, device.PinnedMemory, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(host.Bytes()[4*i:], math.Float32bits(float32(i)))
	}
	imgB, err := b.LoadImage(kernels(t, b.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	twiceB := resolve(t, imgB, "twice")
	imgA, err := a.LoadImage(kernels(t, a.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	twiceA := resolve(t, imgA, "twice")

	// B copies the host's floats into A's x (B's work, A's memory).
	up := submission(t, b, rig.Copy(0, 0, 1, 0, 4*n))
	if _, err := up.Take().Submit(ctx, host, x); err != nil {
		t.Fatalf("a copy on GPU 1 into GPU 0's memory: %v", err)
	}
	// A doubles x: it waits for B's write, on the GPU.
	dbl := submission(t, a, rig.Launch(twiceA, 8, rig.ReadWrite(0, 0)))
	r := dbl.Take()
	r.Groups(0, n/256, 1, 1)
	r.Threads(0, 256, 1, 1)
	if _, err := r.Submit(ctx, x); err != nil {
		t.Fatal(err)
	}
	// B doubles x again through the peer mapping, then copies it into y and
	// back to the host: each waits for the one before, across the devices.
	r = submission(t, b, rig.Launch(twiceB, 8, rig.ReadWrite(0, 0))).Take()
	r.Groups(0, n/256, 1, 1)
	r.Threads(0, 256, 1, 1)
	if _, err := r.Submit(ctx, x); err != nil {
		t.Fatal(err)
	}
	down := submission(t, b, rig.Copy(0, 0, 1, 0, 4*n), rig.Copy(1, 0, 2, 0, 4*n).After(0))
	p, err := down.Take().Submit(ctx, x, y, host)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 997 {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(host.Bytes()[4*i:])); got != 4*float32(i) {
			t.Fatalf("x[%d] = %v after two doublings on two GPUs, want %v", i, got, 4*float32(i))
		}
	}
	t.Logf("%d floats doubled on GPU 0 and GPU 1 through peer access, ordered across the devices", n)
}
