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

// TestMappedFault fails the path's allocations of Mapped memory with a
// fault, rather than for want of room: a make whose segment and launch
// rings would be Mapped, a lay of the device's own and a growth of the
// segment and launch rings return the fault, which loses the device,
// rather than take Pinned memory in its place; for want of room they take
// Pinned memory.
func TestMappedFault(t *testing.T) {
	ringBytes := defaultRingEntries*8 + 4096
	for _, lack := range []bool{false, true} {
		f := newFake()
		if lack {
			f.barFull = func(n int) bool { return n != ringBytes }
		} else {
			f.mappedFault = func(n int) bool { return n != ringBytes }
		}
		slot, w, err := timeline.Take()
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.open(w, Config{})
		_, fault := device.AsFault(err)
		switch {
		case lack && err != nil:
			t.Errorf("make with no room in the BAR but for the rings: %v, want Pinned memory", err)
		case !lack && !fault:
			t.Errorf("make with a fault of the Mapped allocations but the rings': %v, want the fault", err)
		}
		if err == nil {
			r := &raw{t: t, f: f, d: d, slot: slot, v: d.Signaled()}
			r.close()
		} else {
			timeline.Give(slot)
		}
		if n := f.live(); err != nil && n != 0 {
			t.Errorf("%d memories left after the failed make", n)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(r *raw) error
	}{
		{"lay of the device's own", func(r *raw) error {
			code, err := r.d.Image(cubin(r.t))
			if err != nil {
				r.t.Fatal(err)
			}
			img, err := code.Lay(nil)
			if err == nil {
				r.imgs = append(r.imgs, img)
			}
			return err
		}},
		{"growth of the segment ring", func(r *raw) error {
			r.d.need = need{seg: [2]uint64{qCompute: 1 << 14}}
			return r.d.Grow()
		}},
		{"growth of the launch ring", func(r *raw) error {
			r.d.need = need{launch: 1 << 22}
			return r.d.Grow()
		}},
	} {
		for _, lack := range []bool{false, true} {
			name := tc.name + ", a fault"
			if lack {
				name = tc.name + ", no room"
			}
			t.Run(name, func(t *testing.T) {
				r := openRaw(t, Config{})
				r.f.mu.Lock()
				if lack {
					r.f.barFull = func(int) bool { return true }
				} else {
					r.f.mappedFault = func(int) bool { return true }
				}
				r.f.mu.Unlock()
				err := tc.run(r)
				_, fault := device.AsFault(err)
				switch {
				case lack && err != nil:
					t.Errorf("with no room in the BAR: %v, want Pinned memory", err)
				case !lack && !fault:
					t.Errorf("with a fault of the Mapped allocation: %v, want the fault", err)
				}
			})
		}
	}
}
