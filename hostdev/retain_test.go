package hostdev

import (
	"runtime"
	"testing"
	"weak"

	"github.com/rig-go/rig/device"
)

// TestCompletedWorkHoldsNothing runs work on host memory that the garbage
// collector may free once the work completed and nothing else holds it (a
// freed Pinned or Mapped region, a fill's closure), and checks that the
// device keeps none of it: neither the launch ring's parts of values that
// completed nor the Ctx that ran a kernel. A Pinned staging buffer of each
// Upload would otherwise stay in Go's heap, outside the budget, until its
// part's place in the ring was taken again, up to 8,192 parts later.
func TestCompletedWorkHoldsNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, d *dev) weak.Pointer[region]
	}{
		{"copy from Pinned memory", func(t *testing.T, d *dev) weak.Pointer[region] {
			src := hostRegion(t, d, device.PinnedMemory)
			dst, _ := alloc(t, d, 1<<16)
			defer d.Free(dst)
			submitWait(t, d, device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: src, Dst: dst, RowBytes: 1 << 16, Rows: 1})
			return freeWeak(t, d, src)
		}},
		{"copy into Mapped memory", func(t *testing.T, d *dev) weak.Pointer[region] {
			src, _ := alloc(t, d, 1<<16)
			defer d.Free(src)
			dst := hostRegion(t, d, device.MappedMemory)
			submitWait(t, d, device.Part{Kind: device.CopyRows, Queue: device.Compute, Src: src, Dst: dst, RowBytes: 1 << 16, Rows: 1})
			return freeWeak(t, d, dst)
		}},
		{"fill of Pinned memory", func(t *testing.T, d *dev) weak.Pointer[region] {
			dst := hostRegion(t, d, device.PinnedMemory)
			submitWait(t, d, device.Part{Kind: device.CopyRows, Queue: device.Copy, Dst: dst, RowBytes: 1 << 16, Rows: 1, Filling: true, Byte: 7})
			return freeWeak(t, d, dst)
		}},
		{"kernel on Pinned memory", func(t *testing.T, d *dev) weak.Pointer[region] {
			dst := hostRegion(t, d, device.PinnedMemory)
			params := append(p64(uint64(dst.addr), 1<<16), 7)
			submitWait(t, d, one(entry(t, d, "fill"), params))
			return freeWeak(t, d, dst)
		}},
		{"kernel on a peer's view", func(t *testing.T, d *dev) weak.Pointer[region] {
			other, _ := newDev(t, Config{Name: "other"}, 0)
			base := hostRegion(t, other, device.PinnedMemory)
			v, err := d.MapPeer(other, base)
			if err != nil {
				t.Fatal(err)
			}
			params := append(p64(uint64(base.addr), 1<<16), 7)
			submitWait(t, d, one(entry(t, d, "fill"), params))
			if err := d.Free(v); err != nil {
				t.Fatal(err)
			}
			return freeWeak(t, other, base)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDev(t, Config{}, 0)
			w := tc.run(t, d)
			runtime.GC()
			runtime.GC()
			if w.Value() != nil {
				t.Fatal("the device holds a region whose work completed and that was freed: its memory is never collected")
			}
		})
	}
}

// TestCompletedFillHoldsNothing checks that a fill function that ran is
// not kept by the device, with what it holds.
func TestCompletedFillHoldsNothing(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	w := func() weak.Pointer[[1 << 20]byte] {
		big := new([1 << 20]byte)
		fill := FillFunc(func(arg uintptr) { big[arg] = 1 })
		submitWait(t, d, device.Part{Kind: device.Fill, Queue: device.Copy, FillFn: fill, FillArg: 3})
		return weak.Make(big)
	}()
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the device holds a fill function that ran, and what it holds")
	}
}

// hostRegion allocates 64 KiB of memory m, which Go's heap holds.
func hostRegion(t *testing.T, d *dev, m device.Memory) *region {
	t.Helper()
	r, err := d.Alloc(m, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	return r.(*region)
}

// submitWait submits parts as the next value and waits until the word
// shows it.
func submitWait(t *testing.T, d *dev, parts ...device.Part) {
	t.Helper()
	if err := reach(t, d, submit(t, d, parts...)); err != nil {
		t.Fatal(err)
	}
}

// freeWeak frees r and returns a weak pointer to it.
func freeWeak(t *testing.T, d *dev, r *region) weak.Pointer[region] {
	t.Helper()
	if err := d.Free(r); err != nil {
		t.Fatal(err)
	}
	return weak.Make(r)
}
