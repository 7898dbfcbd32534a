package cudadev

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// readSum and settle are testutil's ReadSum and Settle.
var (
	readSum = testutil.ReadSum
	settle  = testutil.Settle
)

// pinnedRanges is the number of ranges that cuMemHostRegister locked.
func pinnedRanges() int {
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	return len(hosts.ranges)
}

// do submits run with bufs and waits for its point.
func do(t *testing.T, run *rig.Run, bufs ...*rig.Buffer) {
	t.Helper()
	p, err := run.Submit(bg, bufs...)
	if err == nil {
		err = p.Wait(bg)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestGPUBytesOutliveFree runs work through Pinned memory, frees it and
// collects garbage, and reads the slices that Bytes returned: they keep
// the last bytes the GPU wrote, never fault, and never alias the Pinned
// memory allocated after. CUDA's locks of the freed memory go.
func TestGPUBytesOutliveFree(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	twice := resolve(t, img, "twice")
	ranges := pinnedRanges()
	used, _ := dev.Budget()
	const n = 1 << 16
	x := alloc(t, dev, device.DeviceMemory, 4*n)
	h := alloc(t, dev, device.PinnedMemory, 4*n)
	hb := h.Bytes()
	for i := range n {
		binary.LittleEndian.PutUint32(hb[4*i:], math.Float32bits(float32(i)))
	}
	do(t, submission(t, dev, rig.Copy(0, 0, 1, 0, 4*n)).Take(), h, x)
	run := submission(t, dev, rig.Launch(twice, 8, rig.Write(0, 0))).Take()
	run.Groups(0, n/256, 1, 1)
	run.Threads(0, 256, 1, 1)
	do(t, run, x)
	do(t, submission(t, dev, rig.Copy(0, 0, 1, 0, 4*n)).Take(), x, h)
	// A mapping inside the Pinned memory, freed after it.
	inner, err := dev.MapHost(hb[4096:8192])
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Free(); err != nil {
		t.Fatal(err)
	}
	// Work through the inner mapping after the Pinned buffer's Free.
	fill := submission(t, dev, rig.FillBytes(0, 0, 4096, 0x7f))
	do(t, fill.Take(), inner)
	_ = inner.Free()
	_ = x.Free()

	// The slice of a collected buffer, its memory full of 0xaa.
	old := alloc(t, dev, device.PinnedMemory, n).Bytes()
	for i := range old {
		old[i] = 0xaa
	}
	settle(t, dev, used)
	if got := pinnedRanges(); got != ranges {
		t.Errorf("%d ranges locked after every free, want %d", got, ranges)
	}
	var held []*rig.Buffer
	for range 8 {
		b := alloc(t, dev, device.PinnedMemory, n)
		do(t, fill.Take(), b)
		held = append(held, b)
	}
	readSum(t, hb)
	for i := range n {
		want := 2 * float32(i)
		if 4*i >= 4096 && 4*i < 8192 {
			continue
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:])); got != want {
			t.Fatalf("after Free and collection, x[%d] = %v, want %v", i, got, want)
		}
	}
	for i := 4096; i < 8192; i++ {
		if hb[i] != 0x7f {
			t.Fatalf("byte %d is %#x, want the fill through the inner mapping", i, hb[i])
		}
	}
	if sum := readSum(t, old); sum != 0xaa*n {
		t.Fatalf("the slice of a collected buffer reads %d, want %d: it aliases other memory", sum, 0xaa*n)
	}
	runtime.KeepAlive(held)
}
