//go:build linux && (amd64 || arm64)

package cudadev

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestAllocNoBytes asks for regions of no bytes or fewer, and of a kind
// of memory that is none: each is an error that names the bytes or the
// kind, with no call of CUDA's, not a panic of the caller's goroutine.
func TestAllocNoBytes(t *testing.T) {
	tab := fakeTable(t, nil)
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	for _, c := range []struct {
		name string
		call func() (device.Region, error)
		want string
	}{
		{"Device 0", func() (device.Region, error) { return d.Alloc(device.DeviceMemory, 0) }, "0 bytes"},
		{"Pinned -4", func() (device.Region, error) { return d.Alloc(device.PinnedMemory, -4) }, "-4 bytes"},
		{"kind 9", func() (device.Region, error) { return d.Alloc(device.Memory(9), 64) }, "kind 9"},
		{"MapHost 0", func() (device.Region, error) { return d.MapHost(0x10000, 0) }, "0 bytes"},
		{"MapHost -1", func() (device.Region, error) { return d.MapHost(0x10000, -1) }, "-1 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeLib.mu.Lock()
			fakeLib.calls = nil
			fakeLib.mu.Unlock()
			var r device.Region
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("panic: %v", v)
						r = nil
						t.Errorf("the call panicked: %v", v)
					}
				}()
				r, err = c.call()
			}()
			fakeLib.mu.Lock()
			calls := slices.Clone(fakeLib.calls)
			fakeLib.mu.Unlock()
			if r != nil || err == nil || !strings.Contains(err.Error(), c.want) || slices.ContainsFunc(calls, func(s string) bool { return strings.HasPrefix(s, "cuMem") }) {
				t.Fatalf("answered %v, %v, calling %v; want an error naming %q and no call", r, err, calls, c.want)
			}
		})
	}
}
