//go:build linux && (amd64 || arm64)

package cudadev

import (
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestUnloadPerCallError has CUDA refuse a module's unload with an error
// of that call alone (CUDA_ERROR_INVALID_HANDLE): Unload is counted, and
// a *device.Fault would lose every CUDA device of the process for a
// refusal that says nothing of the GPU's work. A fault of the context's
// work is still a fault.
func TestUnloadPerCallError(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     result
		fault bool
	}{
		{"per call", 400, false},
		{"fault", errIllegalAddress, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := fakeTable(t, map[string]fakeFn{
				"cuModuleUnload": func([6]uintptr) result { return c.r },
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			img := &image{d: d, mod: 0x77, funcs: map[string]uintptr{}, entries: map[string]*device.Entry{}}
			err := d.Unload(img)
			_, isFault := device.AsFault(err)
			if err == nil || isFault != c.fault || (d.faulted() != "") != c.fault {
				t.Fatalf("Unload answered %v (a fault: %v), the device's fault %q; want an error, a fault %v", err, isFault, d.faulted(), c.fault)
			}
			if !strings.Contains(err.Error(), "unloading") {
				t.Fatalf("the error %q does not say what was refused", err)
			}
		})
	}
}
