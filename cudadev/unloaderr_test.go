//go:build linux && (amd64 || arm64)

package cudadev

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
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

// TestUnloadRefusedKeepsImage has CUDA refuse a module's first unload
// with an error of that call alone, then take the next. The module stays
// loaded, so the image must stay usable (its entries made, its functions
// recorded by graphs) until an unload CUDA takes: the refused Unload
// returns the error, a later Unload unloads the module, and one after
// that calls CUDA no more. Where the unload refused is the one a graph's
// release made, for an image rig unloaded while the graph held it, the
// next Unload tries again likewise.
func TestUnloadRefusedKeepsImage(t *testing.T) {
	for _, byGraph := range []bool{false, true} {
		t.Run(map[bool]string{false: "by Unload", true: "by a graph's release"}[byGraph], func(t *testing.T) {
			var unloads atomic.Int64
			tab := fakeTable(t, map[string]fakeFn{
				"cuModuleUnload": func([6]uintptr) result {
					if unloads.Add(1) == 1 {
						return 400 // CUDA_ERROR_INVALID_HANDLE
					}
					return 0
				},
				"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			const fn = 0xf2
			img := fakeModule(t, d, fn)
			if byGraph {
				var h holds
				if _, err := h.hold(fn); err != nil {
					t.Fatal(err)
				}
				if err := d.Unload(img); err != nil {
					t.Fatalf("Unload while a graph holds the image answered %v", err)
				}
				if err := h.release(); err == nil || !strings.Contains(err.Error(), "unloading") {
					t.Fatalf("the release whose unload CUDA refused answered %v; want an error naming the refusal", err)
				}
			} else if err := d.Unload(img); err == nil || !strings.Contains(err.Error(), "unloading") {
				t.Fatalf("the refused Unload answered %v; want an error naming the refusal", err)
			}
			if unloads.Load() != 1 {
				t.Fatalf("CUDA was asked %d times to unload the module; want 1", unloads.Load())
			}
			img.mu.Lock()
			gone := img.gone
			img.mu.Unlock()
			if gone {
				t.Fatal("the image is marked unloaded, and CUDA refused its unload")
			}
			if !byGraph {
				if _, err := d.Entry(img, "k"); err != nil {
					t.Fatalf("Entry of the image whose unload CUDA refused answered %v", err)
				}
				var h holds
				if _, err := h.hold(fn); err != nil {
					t.Fatalf("a graph cannot record a function of the image whose unload CUDA refused: %v", err)
				}
				if err := h.release(); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 2; i++ {
				if err := d.Unload(img); err != nil {
					t.Fatalf("Unload %d after the refused unload answered %v", i+1, err)
				}
			}
			img.mu.Lock()
			gone = img.gone
			img.mu.Unlock()
			modules.mu.Lock()
			held := modules.byFun[fn] != nil
			modules.mu.Unlock()
			if n := unloads.Load(); n != 2 || !gone || held {
				t.Fatalf("CUDA was asked %d times to unload the module (want 2), the image gone: %v, its function still a loaded image's: %v", n, gone, held)
			}
		})
	}
}

// TestGraphDestroyUnloadRefused destroys a graph, and an executable
// graph, that alone kept loaded the module of an image rig unloaded,
// where CUDA refuses the module's unload: Destroy must return the
// refusal rather than nil, the module stays loaded, and the image's next
// Unload unloads it.
func TestGraphDestroyUnloadRefused(t *testing.T) {
	for _, exec := range []bool{false, true} {
		t.Run(map[bool]string{false: "graph", true: "executable graph"}[exec], func(t *testing.T) {
			var unloads atomic.Int64
			tab := fakeTable(t, graphFakes(map[string]fakeFn{
				"cuModuleUnload": func([6]uintptr) result {
					if unloads.Add(1) == 1 {
						return 400 // CUDA_ERROR_INVALID_HANDLE
					}
					return 0
				},
				"cuFuncGetAttribute": fakeFuncAttrs(1024, 0),
				"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
			}))
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			gs := &graphs{d: d}
			const fn = 0xf4
			img := fakeModule(t, d, fn)
			g, err := gs.NewGraph()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Kernel(cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}); err != nil {
				t.Fatal(err)
			}
			destroy := holdingDestroy(t, g, exec)
			if err := d.Unload(img); err != nil {
				t.Fatalf("Unload while a graph holds the image answered %v", err)
			}
			if err := destroy(); err == nil || !strings.Contains(err.Error(), "unloading") {
				t.Fatalf("Destroy, whose unload of the module CUDA refused, answered %v; want an error naming the refusal", err)
			}
			img.mu.Lock()
			gone := img.gone
			img.mu.Unlock()
			if gone {
				t.Fatal("the image is marked unloaded, and CUDA refused its unload")
			}
			if err := d.Unload(img); err != nil {
				t.Fatalf("Unload after the refused unload answered %v", err)
			}
			if n := unloads.Load(); n != 2 {
				t.Fatalf("CUDA was asked %d times to unload the module; want 2", n)
			}
		})
	}
}

// TestDeferredUnloadRefusedStop unloads an image while a graph holds it,
// as rig does once, and has CUDA refuse the module's unload when the last
// hold goes: at a graph's Destroy, an executable graph's, or a kernel
// node's refusal. rig calls no later Unload of the image, so the device's
// Stop tries again: where CUDA takes the unload, the module is unloaded
// and Stop answers nil; where CUDA still refuses, Stop returns the
// refusal, naming it. The refusal at a kernel node's refusal is returned
// with CUDA's refusal of the node.
func TestDeferredUnloadRefusedStop(t *testing.T) {
	for _, how := range []string{"graph", "executable graph", "refused node"} {
		for _, again := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, taken at Stop %v", how, again), func(t *testing.T) {
				var unloads atomic.Int64
				var d *gpu
				var img *image
				const fn = 0xf5
				tab := fakeTable(t, graphFakes(map[string]fakeFn{
					"cuModuleUnload": func([6]uintptr) result {
						if unloads.Add(1) == 1 || !again {
							return 400 // CUDA_ERROR_INVALID_HANDLE
						}
						return 0
					},
					"cuFuncGetAttribute": fakeFuncAttrs(1024, 0),
					"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
					"cuGraphAddKernelNode_v2": func(a [6]uintptr) result {
						if how != "refused node" {
							*cWord(a[0]) = 0x701
							return 0
						}
						// rig unloads the image while CUDA adds the node,
						// which it then refuses.
						if err := d.Unload(img); err != nil {
							t.Errorf("Unload while a graph holds the image answered %v", err)
						}
						return errInvalidValue
					},
				}))
				d = fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
				gs := &graphs{d: d}
				img = fakeModule(t, d, fn)
				g, err := gs.NewGraph()
				if err != nil {
					t.Fatal(err)
				}
				_, err = g.Kernel(cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}})
				if how == "refused node" {
					if err == nil || !strings.Contains(err.Error(), "adding a kernel node") || !strings.Contains(err.Error(), "unloading a module") {
						t.Fatalf("the refused node, whose unload of the module CUDA refused, answered %v; want both refusals", err)
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					destroy := holdingDestroy(t, g, how == "executable graph")
					if err := d.Unload(img); err != nil {
						t.Fatalf("Unload while a graph holds the image answered %v", err)
					}
					if err := destroy(); err == nil || !strings.Contains(err.Error(), "unloading") {
						t.Fatalf("Destroy, whose unload of the module CUDA refused, answered %v; want the refusal", err)
					}
				}
				if n := unloads.Load(); n != 1 {
					t.Fatalf("CUDA was asked %d times to unload the module before Stop; want 1", n)
				}
				err = d.Stop("")
				if n := unloads.Load(); n != 2 {
					t.Fatalf("CUDA was asked %d times to unload the module once the device stopped; want 2", n)
				}
				img.mu.Lock()
				gone := img.gone
				img.mu.Unlock()
				modules.mu.Lock()
				held := modules.byFun[fn] != nil
				modules.mu.Unlock()
				if again {
					if err != nil || !gone || held {
						t.Fatalf("Stop answered %v, the image gone: %v, its function still a loaded image's: %v; want nil, true, false", err, gone, held)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "unloading a module") {
					t.Fatalf("Stop, whose unload of the module CUDA refused again, answered %v; want the refusal", err)
				}
				if gone || !held {
					t.Fatalf("the image is gone: %v, its function a loaded image's: %v, though CUDA refused the unload", gone, held)
				}
			})
		}
	}
}

// TestImagePlaceFailedUnloadRefused has CUDA load a module, refuse the
// count of its functions, then refuse the unload that Image makes of the
// module it cannot use: the module stays loaded, with no image of rig's
// to unload it later, so Image's error must say so besides the count's
// refusal.
func TestImagePlaceFailedUnloadRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		unload result
	}{
		{"unload taken", 0},
		{"unload refused", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			var unloads atomic.Int64
			tab := fakeTable(t, map[string]fakeFn{
				"cuModuleLoadData": func(a [6]uintptr) result {
					*cWord(a[0]) = 0x77
					return 0
				},
				"cuModuleGetFunctionCount": func([6]uintptr) result { return 400 },
				"cuModuleUnload": func(a [6]uintptr) result {
					if a[0] != 0x77 {
						t.Errorf("unload of module %#x, want 0x77", a[0])
					}
					unloads.Add(1)
					return c.unload
				},
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			_, err := d.Image(testkernels.Image("sm_90"))
			if err == nil || !strings.Contains(err.Error(), "counting") {
				t.Fatalf("Image answered %v, want the count's refusal", err)
			}
			if unloads.Load() != 1 {
				t.Fatalf("%d unloads of the module Image could not use, want 1", unloads.Load())
			}
			if refused := strings.Contains(err.Error(), "unloading"); refused != (c.unload != 0) {
				t.Fatalf("Image answered %q; an unload refusal named: %v, want %v", err, refused, c.unload != 0)
			}
		})
	}
}

// holdingDestroy returns the Destroy of the graph that holds g's images:
// g's, or where exec is set that of g's executable graph, once g, which
// the executable graph's holds outlive, is destroyed.
func holdingDestroy(t *testing.T, g cuda.Graph, exec bool) func() error {
	t.Helper()
	if !exec {
		return g.Destroy
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	return x.Destroy
}
