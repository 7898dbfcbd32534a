//go:build linux && (amd64 || arm64)

package cudadev

import (
	"errors"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestAllocRefusal: an allocation CUDA refuses for want of memory is
// ErrNoMemory, which the runtime meets with rounds of reclamation; one it
// refuses otherwise (not supported, say) is CUDA's error, which no
// reclamation changes, and no fault.
func TestAllocRefusal(t *testing.T) {
	for _, c := range []struct {
		name   string
		call   string
		kind   device.Memory
		answer result
		noMem  bool
		naming string
	}{
		{"Device, out of memory", "cuMemAlloc_v2", device.DeviceMemory, errOutOfMemory, true, "allocating Device memory"},
		{"Device, not supported", "cuMemAlloc_v2", device.DeviceMemory, 801, false, "allocating Device memory"},
		{"Pinned, out of memory", "cuMemHostRegister_v2", device.PinnedMemory, errOutOfMemory, true, "page-locking"},
		{"Pinned, not supported", "cuMemHostRegister_v2", device.PinnedMemory, 801, false, "page-locking"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := fakeTable(t, map[string]fakeFn{c.call: func([6]uintptr) result { return c.answer }})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			r, err := d.Alloc(c.kind, 4096)
			if r != nil || err == nil {
				t.Fatalf("answered %v, %v; want a refusal", r, err)
			}
			var f *device.Fault
			if errors.Is(err, device.ErrNoMemory) != c.noMem || errors.As(err, &f) || !strings.Contains(err.Error(), c.naming) {
				t.Fatalf("answered %v; want ErrNoMemory %v, no fault, naming %q", err, c.noMem, c.naming)
			}
		})
	}
}
