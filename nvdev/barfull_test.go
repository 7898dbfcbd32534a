package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
)

// TestBARFull opens a device whose BAR has room for the channels' rings
// alone: the segment rings, the launch ring and the driver's copy
// kernels go to Pinned memory, and the kernels run.
func TestBARFull(t *testing.T) {
	f := newFake()
	ringBytes := defaultRingEntries*8 + 4096
	f.barFull = func(n int) bool { return n != ringBytes }
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.open(w, Config{})
	if err != nil {
		timeline.Give(slot)
		t.Fatalf("make with the BAR full: %v", err)
	}
	r := &raw{t: t, f: f, d: d, slot: slot, v: d.Signaled()}
	t.Cleanup(r.close)
	if d.copyK == nil || d.copyK.img.mem.Kind != device.PinnedMemory || d.launchMem.Kind != device.PinnedMemory {
		t.Fatalf("copy kernels %v, launch ring %v", d.copyK, d.launchMem.Kind)
	}
	m := r.alloc(device.DeviceMemory, 1<<20)
	launched := 0
	f.onLaunch = func(q hw.Qmd, _ []byte) { launched++ }
	r.wait(r.submit(nil, fillPart(qCopy, m, 0, 1<<20, 1)))
	if launched != 1 {
		t.Errorf("%d launches of the fill kernel", launched)
	}
}
