//go:build linux && (amd64 || arm64)

package cudadev

import (
	"testing"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/internal/testkernels"
)

// fakeFnName is the C string the fake CUDA names a function with.
var fakeFnName = []byte("k\x00")

// TestUnloadFunctionReused unloads an image while another Image loads a
// module, which CUDA gives the function handle of the module just
// unloaded: the new image must keep its function recorded, so that a
// graph records it, however the unload and the load interleave.
func TestUnloadFunctionReused(t *testing.T) {
	const fn = 0xf1
	var d *gpu
	var loaded *image
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
		"cuFuncGetAttribute": fakeFuncAttrs(1024, 48<<10),
		"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
		"cuModuleLoadData": func(a [6]uintptr) result {
			*cWord(a[0]) = 0x78
			return 0
		},
		"cuModuleGetFunctionCount": func(a [6]uintptr) result {
			*(*uint32)(ptr(a[0])) = 1
			return 0
		},
		"cuModuleEnumerateFunctions": func(a [6]uintptr) result {
			*cWord(a[0]) = fn
			return 0
		},
		"cuFuncGetName": func(a [6]uintptr) result {
			*cWord(a[0]) = uint64(uintptr(unsafe.Pointer(&fakeFnName[0])))
			return 0
		},
		"cuModuleUnload": func(a [6]uintptr) result {
			if a[0] != 0x77 {
				return 0
			}
			// CUDA unloaded module 0x77: a load on another goroutine
			// now gets its function's handle.
			done := make(chan error)
			go func() {
				c, err := d.Image(testkernels.Image("sm_90"))
				if err == nil {
					loaded = c.Loaded.(*image)
				}
				done <- err
			}()
			if err := <-done; err != nil {
				t.Errorf("the load beside the unload: %v", err)
			}
			return 0
		},
	}))
	d = fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	old := fakeModule(t, d, fn)
	if err := d.Unload(old); err != nil {
		t.Fatal(err)
	}
	if loaded == nil {
		t.Fatal("no image loaded beside the unload")
	}
	modules.mu.Lock()
	got := modules.byFun[fn]
	modules.mu.Unlock()
	if got != loaded {
		t.Fatalf("the function of the image loaded beside the unload maps to %p, want the new image %p", got, loaded)
	}
	gs := &graphs{d: d}
	g, err := gs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if _, err := g.Kernel(cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}); err != nil {
		t.Fatalf("a graph of the new image's function: %v", err)
	}
}
