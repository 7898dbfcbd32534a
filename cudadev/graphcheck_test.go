//go:build linux && (amd64 || arm64)

package cudadev

import (
	"math/big"
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
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
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
	}))
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
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
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
	}))
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

// TestGraphCopyMemsetNodeChecks adds memcpy and memset nodes that no
// copy can be, to a graph and to an executable graph: rows of 0 bytes, a
// pitch under the rows' bytes with more than one row (rows that overlap),
// and an extent whose end passes 2^64. Each is refused with an error
// naming what is wrong, before CUDA is asked; a node within the rules
// added or set afterwards is taken, so the graph stays usable.
func TestGraphCopyMemsetNodeChecks(t *testing.T) {
	var adds, sets atomic.Int64
	added := func(a [6]uintptr) result {
		*cWord(a[0]) = uint64(0x800 + adds.Add(1))
		return 0
	}
	set := func([6]uintptr) result {
		sets.Add(1)
		return 0
	}
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
		"cuGraphAddMemcpyNode":           added,
		"cuGraphAddMemsetNode":           added,
		"cuGraphExecMemcpyNodeSetParams": set,
		"cuGraphExecMemsetNodeSetParams": set,
	}))
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	gs := &graphs{d: d}
	const top = ^uint64(0)
	goodCopy := cuda.Copy{Dst: 0x10000, Src: 0x20000, RowBytes: 16, Rows: 4, DstPitch: 32}
	goodMemset := cuda.Memset{Dst: 0x10000, Value: 7, RowBytes: 16, Rows: 4, Pitch: 32}

	for _, c := range []struct {
		name   string
		copy   *cuda.Copy   // a memcpy node, or
		memset *cuda.Memset // a memset node
		want   string
	}{
		{"copy of rows of 0 bytes", &cuda.Copy{Dst: 0x10000, Src: 0x20000, Rows: 2}, nil, "rows of 0 bytes"},
		{"copy to past 2^64", &cuda.Copy{Dst: top - 15, Src: 0x20000, RowBytes: 16}, nil,
			"1 rows of 16 bytes, 16 bytes apart, from the destination address 0xfffffffffffffff0: past 2^64"},
		{"copy from past 2^64", &cuda.Copy{Dst: 0x10000, Src: top - 15, RowBytes: 16}, nil,
			"from the source address 0xfffffffffffffff0: past 2^64"},
		{"copy from past 2^64 through the pitch", &cuda.Copy{Dst: 0x10000, Src: 0x20000, RowBytes: 8, Rows: 3, SrcPitch: 1 << 63}, nil,
			"3 rows of 8 bytes, 9223372036854775808 bytes apart, from the source address 0x20000: past 2^64"},
		{"copy to past 2^64 through the rows", &cuda.Copy{Dst: 0x10000, Src: 0x20000, RowBytes: 1 << 32, Rows: 1 << 32}, nil,
			"from the destination address 0x10000: past 2^64"},
		{"copy to overlapping rows", &cuda.Copy{Dst: 0x10000, Src: 0x20000, RowBytes: 16, Rows: 2, DstPitch: 8}, nil,
			"a destination pitch of 8 bytes, under the rows' 16"},
		{"copy from overlapping rows", &cuda.Copy{Dst: 0x10000, Src: 0x20000, RowBytes: 16, Rows: 2, SrcPitch: 15}, nil,
			"a source pitch of 15 bytes, under the rows' 16"},
		{"memset of rows of 0 bytes", nil, &cuda.Memset{Dst: 0x10000, Value: 1}, "rows of 0 bytes"},
		{"memset past 2^64", nil, &cuda.Memset{Dst: top, RowBytes: 2}, "from the destination address 0xffffffffffffffff: past 2^64"},
		{"memset past 2^64 through the pitch", nil, &cuda.Memset{Dst: 0x10000, RowBytes: 1, Rows: 1 << 33, Pitch: 1 << 32},
			"8589934592 rows of 1 bytes, 4294967296 bytes apart, from the destination address 0x10000: past 2^64"},
		{"memset of overlapping rows", nil, &cuda.Memset{Dst: 0x10000, RowBytes: 16, Rows: 3, Pitch: 4},
			"a destination pitch of 4 bytes, under the rows' 16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			add := func(g cuda.Graph, good bool) (cuda.Node, error) {
				switch {
				case c.copy != nil && good:
					return g.Copy(goodCopy)
				case c.copy != nil:
					return g.Copy(*c.copy)
				case good:
					return g.Memset(goodMemset)
				}
				return g.Memset(*c.memset)
			}
			setNode := func(x cuda.Exec, n cuda.Node, good bool) error {
				switch {
				case c.copy != nil && good:
					return x.SetCopy(n, goodCopy)
				case c.copy != nil:
					return x.SetCopy(n, *c.copy)
				case good:
					return x.SetMemset(n, goodMemset)
				}
				return x.SetMemset(n, *c.memset)
			}
			refused := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s took the node", what)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, "cudadev: graph: ") || !strings.Contains(msg, c.want) {
					t.Fatalf("%s answered %q; want an error naming %q", what, msg, c.want)
				}
			}

			g, err := gs.NewGraph()
			if err != nil {
				t.Fatal(err)
			}
			a0 := adds.Load()
			_, err = add(g, false)
			refused("adding", err)
			if n := adds.Load() - a0; n != 0 {
				t.Fatalf("CUDA was asked to add the refused node (%d calls)", n)
			}
			node, err := add(g, true)
			if err != nil {
				t.Fatalf("a node within the rules after the refused one: %v", err)
			}
			if n := adds.Load() - a0; n != 1 {
				t.Fatalf("CUDA was asked %d times to add the node within the rules; want 1", n)
			}
			x, err := g.Instantiate()
			if err != nil {
				t.Fatal(err)
			}
			s0 := sets.Load()
			refused("setting", setNode(x, node, false))
			if n := sets.Load() - s0; n != 0 {
				t.Fatalf("CUDA was asked to set the refused node (%d calls)", n)
			}
			if err := setNode(x, node, true); err != nil {
				t.Fatalf("setting the node within the rules after the refused one: %v", err)
			}
			if n := sets.Load() - s0; n != 1 {
				t.Fatalf("CUDA was asked %d times to set the node within the rules; want 1", n)
			}
			if err := x.Destroy(); err != nil {
				t.Fatal(err)
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// FuzzGraphCopyNode: the params of a memcpy or memset node that CUDA is
// given hold rows of 1 byte or more, at least 1 row, pitches of a row or
// more, and each side's extent ends below 2^64; a node is refused only
// where its rows are of 0 bytes, overlap, or end past 2^64.
func FuzzGraphCopyNode(f *testing.F) {
	f.Add(uint64(0x10000), uint64(0x20000), uint64(16), uint64(4), uint64(32), uint64(0))
	f.Add(uint64(0x10000), uint64(0x20000), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add(^uint64(0)-15, uint64(0x20000), uint64(16), uint64(1), uint64(0), uint64(0))
	f.Add(uint64(0x10000), uint64(0x20000), uint64(8), uint64(3), uint64(8), uint64(1<<63))
	f.Add(uint64(0x10000), uint64(0x20000), uint64(16), uint64(2), uint64(8), uint64(3))
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	// within is whether rows rows of n bytes, pitch bytes apart (0 is n;
	// one row's pitch is not read), from at, are a node's side.
	within := func(at, rows, pitch, n uint64) bool {
		rows = max(rows, 1)
		if pitch == 0 || rows == 1 {
			pitch = n
		}
		if n == 0 || pitch < n {
			return false
		}
		end := new(big.Int).Mul(new(big.Int).SetUint64(rows-1), new(big.Int).SetUint64(pitch))
		end.Add(end, new(big.Int).SetUint64(at))
		end.Add(end, new(big.Int).SetUint64(n))
		return end.Cmp(two64) < 0
	}
	// given checks a side as CUDA is given it.
	given := func(t *testing.T, side string, at, pitch, n, height uint64) {
		t.Helper()
		if n == 0 || height == 0 || pitch < n || !within(at, height, pitch, n) {
			t.Fatalf("CUDA is given the %s's %d rows of %d bytes, %d bytes apart, from %#x", side, height, n, pitch, at)
		}
	}
	f.Fuzz(func(t *testing.T, dst, src, n, rows, dpitch, spitch uint64) {
		c := cuda.Copy{Dst: dst, Src: src, RowBytes: n, Rows: rows, DstPitch: dpitch, SrcPitch: spitch}
		p, err := copy3D(c)
		if ok := within(dst, rows, dpitch, n) && within(src, rows, spitch, n); ok != (err == nil) {
			t.Fatalf("copy3D(%+v) answered %v", c, err)
		}
		if err == nil {
			given(t, "destination", p.dstDevice, p.dstPitch, p.widthInBytes, p.height)
			given(t, "source", p.srcDevice, p.srcPitch, p.widthInBytes, p.height)
			if p.dstDevice != dst || p.srcDevice != src || p.widthInBytes != n || p.height != max(rows, 1) || p.depth != 1 {
				t.Fatalf("copy3D(%+v) gives CUDA %+v", c, *p)
			}
		}
		m := cuda.Memset{Dst: dst, Value: byte(src), RowBytes: n, Rows: rows, Pitch: dpitch}
		q, err := memset1(m)
		if ok := within(dst, rows, dpitch, n); ok != (err == nil) {
			t.Fatalf("memset1(%+v) answered %v", m, err)
		}
		if err == nil {
			given(t, "destination", q.dst, q.pitch, q.width, q.height)
			if q.dst != dst || q.width != n || q.height != max(rows, 1) || q.value != uint32(byte(src)) || q.elementSize != 1 {
				t.Fatalf("memset1(%+v) gives CUDA %+v", m, *q)
			}
		}
	})
}

// TestGraphHoldingImageAfterUnload: cuda.Graph's contract says "an
// unloaded image's functions cannot be recorded", and Unload's says "After
// it no new graph records the image's functions"; holds.hold says it
// refuses where "rig unloaded it". A graph (or executable graph) that
// already holds an image records its functions again after rig unloaded
// the image.
func TestGraphHoldingImageAfterUnload(t *testing.T) {
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
		"cuFuncGetAttribute": fakeFuncAttrs(1024, 48<<10),
		"cuFuncGetParamInfo": func([6]uintptr) result { return errInvalidValue },
		"cuGraphAddKernelNode_v2": func(a [6]uintptr) result {
			*cWord(a[0]) = 0x701
			return 0
		},
	}))
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.maxBlock, d.maxGrid = [3]uint32{1024, 1024, 64}, [3]uint32{1<<31 - 1, 65535, 65535}
	gs := &graphs{d: d}
	const fn = 0xf7
	img := fakeModule(t, d, fn)
	k := cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}

	g, err := gs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.Kernel(k)
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Unload(img); err != nil {
		t.Fatal(err)
	}
	// A graph that held nothing is refused, as documented.
	g2, err := gs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Kernel(k); err == nil {
		t.Fatal("a fresh graph recorded a function of an unloaded image")
	}
	if _, err := g.Kernel(k, n); err == nil {
		t.Error("the graph recorded a function of an image rig unloaded (it already held the image)")
	}
	if err := x.SetKernel(n, k); err == nil {
		t.Error("the executable graph recorded a function of an image rig unloaded (it already held the image)")
	}
}
