package hostdev

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestFreeDuringCopyRows frees the destination of a copy of rows between
// two of its pieces, and allocates a region of the same size at once,
// which the host may map where the freed one lay. The copy must write no
// byte after Free returned: it faults the device, naming the freed
// region, and the new region keeps its zeros.
func TestFreeDuringCopyRows(t *testing.T) {
	for _, filling := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "fill"}[filling], func(t *testing.T) {
			d, _ := newDev(t, Config{}, 0)
			const size = 4 * rowsPiece
			src, sm := alloc(t, d, size)
			for i := range sm {
				sm[i] = 0xab
			}
			dst, _ := alloc(t, d, size)
			var fresh *region
			var freeErr, allocErr error
			look := func() {
				if fresh != nil || freeErr != nil || allocErr != nil {
					return
				}
				if freeErr = d.Free(dst); freeErr != nil {
					return
				}
				r, err := d.Alloc(device.DeviceMemory, size)
				if allocErr = err; err == nil {
					fresh = r.(*region)
				}
			}
			d.rowsLook.Store(&look)
			p := device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: src, Dst: dst,
				RowBytes: size, Rows: 1, SrcPitch: size, DstPitch: size, Filling: filling, Byte: 0xab}
			v := submit(t, d, p)
			var err error
			deadline := time.Now().Add(10 * time.Second)
			for err == nil && !device.AtLeast(atomic.LoadUint64(d.word), v) {
				if time.Now().After(deadline) {
					t.Fatal("neither the value nor a fault after 10 s")
				}
				err = d.Sleep(atomic.LoadUint64(d.word), 100*time.Millisecond)
			}
			if freeErr != nil || allocErr != nil {
				t.Fatalf("free: %v; alloc: %v", freeErr, allocErr)
			}
			var f *device.Fault
			if !errors.As(err, &f) || !strings.Contains(f.Why, "freed") {
				t.Errorf("sleep returned %v, want a fault that names a freed region", err)
			}
			if fresh == nil {
				t.Fatal("the copy never looked at the stop")
			}
			for i, b := range fresh.bytes(0, size) {
				if b != 0 {
					t.Fatalf("byte %d of the region allocated after the Free is %#x (it lies at %#x, the freed one at %#x)", i, b, fresh.addr, dst.addr)
				}
			}
		})
	}
}
