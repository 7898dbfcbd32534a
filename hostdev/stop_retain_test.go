package hostdev

import (
	"runtime"
	"testing"
	"weak"

	"github.com/rig-go/rig/device"
)

// TestStoppedWorkHoldsNothing stops a device while a value runs and
// another waits behind it, both on host memory that the garbage collector
// may free once nothing holds it (freed Pinned regions, a fill's closure),
// and checks that the stopped device keeps none of it: rig keeps a closed
// device's driver for as long as the Device is reachable, and the Go
// memory of the buffers the dropped work used would stay with it, outside
// the budget.
func TestStoppedWorkHoldsNothing(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	hang := entry(t, d, "hang")
	dst, _ := alloc(t, d, 1<<16)
	defer d.Free(dst)
	running, queued := hostRegion(t, d, device.PinnedMemory), hostRegion(t, d, device.PinnedMemory)
	fill, wf := bigFill()
	// The first value hangs until Stop, its copy behind the kernel; the
	// second waits for the first.
	submit(t, d, one(hang, nil), device.Part{Kind: device.CopyRows, Queue: device.Compute, Src: running, Dst: dst, RowBytes: 1 << 16, Rows: 1})
	submit(t, d, device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: queued, Dst: dst, RowBytes: 1 << 16, Rows: 1},
		device.Part{Kind: device.Fill, Queue: device.Compute, FillFn: fill, FillArg: 3})
	ws := []weak.Pointer[region]{weak.Make(running), weak.Make(queued)}
	fill = nil
	d.Stop("")
	d.done.Wait()
	for _, r := range []*region{running, queued} {
		if err := d.Free(r); err != nil {
			t.Fatal(err)
		}
	}
	running, queued = nil, nil
	runtime.GC()
	runtime.GC()
	for i, w := range ws {
		if w.Value() != nil {
			t.Errorf("the stopped device holds the freed region of its %s value", []string{"running", "queued"}[i])
		}
	}
	if wf.Value() != nil {
		t.Error("the stopped device holds the fill function of a value it dropped, and what it holds")
	}
}

// bigFill is a fill function that holds a MiB, and a weak pointer to it.
func bigFill() (FillFunc, weak.Pointer[[1 << 20]byte]) {
	big := new([1 << 20]byte)
	return func(arg uintptr) { big[arg] = 1 }, weak.Make(big)
}
