//go:build linux && (amd64 || arm64)

package cudadev

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/cudadev/cuda"
)

// TestGraphKernelNodeLimits adds kernel nodes past the GPU's limits or
// the function's, to a graph and to an executable graph, as Room refuses
// for a launch: each is refused with an error naming what is wrong,
// before CUDA is asked, and holds nothing; a node within the limits
// added afterwards is taken, so the graph stays usable.
func TestGraphKernelNodeLimits(t *testing.T) {
	var adds, sets atomic.Int64
	tab := fakeTable(t, map[string]fakeFn{
		"cuGraphCreate": func(a [6]uintptr) result {
			*cWord(a[0]) = 0x9a
			return 0
		},
		"cuGraphInstantiateWithFlags": func(a [6]uintptr) result {
			*cWord(a[0]) = 0x9b
			return 0
		},
		"cuFuncGetAttribute": fakeFuncAttrs(256, 1000),
		"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
		"cuGraphAddKernelNode_v2": func(a [6]uintptr) result {
			*cWord(a[0]) = uint64(0x700 + adds.Add(1))
			return 0
		},
		"cuGraphExecKernelNodeSetParams_v2": func([6]uintptr) result {
			sets.Add(1)
			return 0
		},
	})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.maxBlock, d.maxGrid = [3]uint32{1024, 1024, 64}, [3]uint32{1<<31 - 1, 65535, 65535}
	gs := &graphs{d: d}
	const fn = 0xf3
	img := fakeModule(t, d, fn)
	good := cuda.Kernel{Func: fn, Grid: [3]uint32{1<<31 - 1, 65535, 65535}, Block: [3]uint32{64, 2, 2}, Shared: 1000}

	for _, c := range []struct {
		name     string
		mod      func(k *cuda.Kernel)
		maxBlock [3]uint32 // the GPU's, where not zero
		want     string
	}{
		{"no groups along x", func(k *cuda.Kernel) { k.Grid[0] = 0 }, [3]uint32{}, "0 groups along axis x"},
		{"no groups along z", func(k *cuda.Kernel) { k.Grid[2] = 0 }, [3]uint32{}, "0 groups along axis z"},
		{"no threads along y", func(k *cuda.Kernel) { k.Block[1] = 0 }, [3]uint32{}, "0 threads along axis y"},
		{"grid past the GPU's", func(k *cuda.Kernel) { k.Grid[1] = 65536 }, [3]uint32{},
			"65536 groups along axis y, more than the GPU's 65535 (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)"},
		{"block past the GPU's", func(k *cuda.Kernel) { k.Block = [3]uint32{1, 1, 65} }, [3]uint32{},
			"65 threads along axis z, more than the GPU's 64 (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)"},
		{"threads past the kernel's", func(k *cuda.Kernel) { k.Block = [3]uint32{32, 3, 3} }, [3]uint32{},
			`288 threads per group, more than the 256 of "k"`},
		{"threads past 2^32", func(k *cuda.Kernel) { k.Block = [3]uint32{1 << 16, 1 << 16, 1} }, [3]uint32{1 << 16, 1 << 16, 1 << 16},
			`4294967296 threads per group, more than the 256 of "k"`},
		{"shared past the kernel's", func(k *cuda.Kernel) { k.Shared = 1001 }, [3]uint32{},
			`1001 bytes of dynamic shared memory, more than the 1000 of "k"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.maxBlock != [3]uint32{} {
				prev := d.maxBlock
				d.maxBlock = c.maxBlock
				defer func() { d.maxBlock = prev }()
			}
			bad := good
			c.mod(&bad)
			refused := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s took the node", what)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, "cudadev: graph: ") || !strings.Contains(msg, c.want) {
					t.Fatalf("%s answered %q; want an error naming %q", what, msg, c.want)
				}
			}
			held := func() int {
				img.mu.Lock()
				defer img.mu.Unlock()
				return img.graphs
			}

			g, err := gs.NewGraph()
			if err != nil {
				t.Fatal(err)
			}
			a0 := adds.Load()
			_, err = g.Kernel(bad)
			refused("Kernel", err)
			if n := adds.Load() - a0; n != 0 {
				t.Fatalf("CUDA was asked to add the refused node (%d calls)", n)
			}
			if n := held(); n != 0 {
				t.Fatalf("%d graphs hold the image after the refused node", n)
			}
			node, err := g.Kernel(good)
			if err != nil {
				t.Fatalf("a node within the limits after the refused one: %v", err)
			}
			if n := adds.Load() - a0; n != 1 {
				t.Fatalf("CUDA was asked %d times to add the node within the limits; want 1", n)
			}

			x, err := g.Instantiate()
			if err != nil {
				t.Fatal(err)
			}
			s0 := sets.Load()
			refused("SetKernel", x.SetKernel(node, bad))
			if n := sets.Load() - s0; n != 0 {
				t.Fatalf("CUDA was asked to set the refused node (%d calls)", n)
			}
			ex := x.(*execGraph)
			ex.holds.mu.Lock()
			n := ex.holds.images[img]
			ex.holds.mu.Unlock()
			if n != 1 {
				t.Fatalf("the executable graph holds the image %d times after the refused node; want 1", n)
			}
			if err := x.SetKernel(node, good); err != nil {
				t.Fatalf("setting the node within the limits after the refused one: %v", err)
			}
			if n := sets.Load() - s0; n != 1 {
				t.Fatalf("CUDA was asked %d times to set the node within the limits; want 1", n)
			}
			if err := x.Destroy(); err != nil {
				t.Fatal(err)
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if n := held(); n != 0 {
				t.Fatalf("%d graphs hold the image once the graphs are destroyed", n)
			}
		})
	}
}

// TestGraphKernelNodeParamBytes: a kernel node given more parameter bytes
// than its function reads passes CUDA the bytes the function reads, as a
// launch does, when it is added and when it is set.
func TestGraphKernelNodeParamBytes(t *testing.T) {
	var added, set atomic.Int64 // the parameter bytes CUDA was given
	size := func(np uintptr) int64 {
		p := (*kernelNodeParams)(ptr(np))
		if p.extra == 0 {
			return 0
		}
		ex := (*[5]uintptr)(ptr(p.extra))
		return int64(*(*uint64)(ptr(ex[3])))
	}
	var calls atomic.Int64
	tab := fakeTable(t, map[string]fakeFn{
		"cuGraphCreate": func(a [6]uintptr) result {
			*cWord(a[0]) = 0x9a
			return 0
		},
		"cuGraphInstantiateWithFlags": func(a [6]uintptr) result {
			*cWord(a[0]) = 0x9b
			return 0
		},
		"cuFuncGetAttribute": fakeFuncAttrs(256, 0),
		"cuFuncGetParamInfo": paramAnswers(&calls, func(i uint64) (uint64, uint64, bool) { return 0, 8, i == 0 }),
		"cuGraphAddKernelNode_v2": func(a [6]uintptr) result {
			added.Store(size(a[4]))
			*cWord(a[0]) = 0x701
			return 0
		},
		"cuGraphExecKernelNodeSetParams_v2": func(a [6]uintptr) result {
			set.Store(size(a[2]))
			return 0
		},
	})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	gs := &graphs{d: d}
	const fn = 0xf3
	fakeModule(t, d, fn)
	k := cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: make([]byte, 24)}
	g, err := gs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	node, err := g.Kernel(k)
	if err != nil {
		t.Fatal(err)
	}
	if n := added.Load(); n != 8 {
		t.Errorf("the node was added with %d parameter bytes; want the function's 8", n)
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.SetKernel(node, k); err != nil {
		t.Fatal(err)
	}
	if n := set.Load(); n != 8 {
		t.Errorf("the node was set with %d parameter bytes; want the function's 8", n)
	}
	if err := x.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}
