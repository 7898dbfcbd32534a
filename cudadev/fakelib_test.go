//go:build linux && (amd64 || arm64)

package cudadev

import (
	"errors"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
)

// A table of Go functions in place of libcuda's, for the paths that need
// no GPU: each symbol calls the test's function of its name (the first of
// symbols' names), or answers CUDA_SUCCESS where the test gave none.

type fakeFn func(a [6]uintptr) result

var fakeLib struct {
	once sync.Once
	addr []uintptr // by index in symbols

	mu    sync.Mutex
	fns   map[string]fakeFn
	calls []string
}

// fakeTable returns a table whose functions call fns, by name, for the
// rest of the test.
func fakeTable(t *testing.T, fns map[string]fakeFn) *table {
	t.Helper()
	fakeLib.once.Do(func() {
		fakeLib.addr = make([]uintptr, len(symbols))
		for i := range symbols {
			name := symbols[i].names[0]
			fakeLib.addr[i] = purego.NewCallback(func(a0, a1, a2, a3, a4, a5 uintptr) uintptr {
				fakeLib.mu.Lock()
				fn := fakeLib.fns[name]
				fakeLib.calls = append(fakeLib.calls, name)
				fakeLib.mu.Unlock()
				if fn == nil {
					return 0
				}
				return uintptr(fn([6]uintptr{a0, a1, a2, a3, a4, a5}))
			})
		}
	})
	fakeLib.mu.Lock()
	fakeLib.fns, fakeLib.calls = fns, nil
	fakeLib.mu.Unlock()
	t.Cleanup(func() {
		fakeLib.mu.Lock()
		fakeLib.fns, fakeLib.calls = nil, nil
		fakeLib.mu.Unlock()
	})
	tab := &table{version: minVersion}
	for i, s := range symbols {
		*s.at(tab) = fakeLib.addr[i]
	}
	return tab
}

// fakeEvents answers cuEventCreate with a new handle in its out-parameter.
func fakeEvents() fakeFn {
	var mu sync.Mutex
	next := uint64(0xe000)
	return func(a [6]uintptr) result {
		mu.Lock()
		next++
		*cWord(a[0]) = next
		mu.Unlock()
		return 0
	}
}

// fakeFuncAttrs answers cuFuncGetAttribute for a function of threads
// threads per block and shared bytes of dynamic shared memory at most.
func fakeFuncAttrs(threads, shared int32) fakeFn {
	return func(a [6]uintptr) result {
		switch a[1] {
		case funcMaxThreadsPerBlock:
			*(*int32)(ptr(a[0])) = threads
		case funcMaxDynamicShared:
			*(*int32)(ptr(a[0])) = shared
		default:
			*(*int32)(ptr(a[0])) = 0
		}
		return 0
	}
}

// fakeDevice is an open device of the fake table: GPU g's timeline k with
// streams and events made, and an H200's limits (fakeGPU).
func fakeDevice(tab *table, g *gpuInfo, k int, word *uint64) *gpu {
	if g.ctx.Load() == 0 {
		g.ctx.Store(0xc0)
	}
	lim := fakeGPU()
	d := &gpu{t: tab, info: g, ctx: g.ctx.Load(), timeline: k,
		streams: [2]uintptr{0x51, 0x52}, clockStream: 0x53, joins: [2]uintptr{0x61, 0x62},
		word: word, maxBlock: lim.maxBlock, maxGrid: lim.maxGrid, maxThreads: lim.maxThreads}
	g.mu.Lock()
	if g.open == nil {
		g.open = map[int]*gpu{}
	}
	g.open[k] = d
	g.mu.Unlock()
	return d
}

// settleOpen runs what an open of timeline k of g does with the work
// that stopped devices left running.
func settleOpen(tab *table, g *gpuInfo, k int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.settleKept(tab, k)
}

// TestOpenPeersConcurrently opens two GPUs at once: each open holds its
// GPU's lock while it enables access to the other GPU, which must not wait
// for the other GPU's lock.
func TestOpenPeersConcurrently(t *testing.T) {
	a := &gpuInfo{ordinal: 0, bus: "0000:01:00.0"}
	b := &gpuInfo{ordinal: 1, bus: "0000:02:00.0"}
	listMu.Lock()
	saved := gpus
	gpus = []*gpuInfo{a, b}
	listMu.Unlock()
	defer func() {
		listMu.Lock()
		gpus = saved
		listMu.Unlock()
	}()
	var held sync.WaitGroup
	held.Add(2)
	done := make(chan struct{}, 2)
	for i, g := range []*gpuInfo{a, b} {
		d := &gpu{info: g, index: i, ordinal: g.ordinal}
		go func() {
			g.mu.Lock() // as open holds it through make
			held.Done()
			held.Wait()
			d.enablePeers(getFrame())
			g.mu.Unlock()
			done <- struct{}{}
		}()
	}
	for range 2 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("two opens of two GPUs wait for each other's lock")
		}
	}
}

// TestKeptWithoutEvents stops a device whose work still runs where CUDA
// makes no event to keep behind it: the next open of the GPU must not take
// the missing events for a fault of the GPU's work, and the GPU forgets
// the work once its streams tell that it ended.
func TestKeptWithoutEvents(t *testing.T) {
	var ended atomic.Bool
	tab := fakeTable(t, map[string]fakeFn{
		"cuStreamQuery": func([6]uintptr) result {
			if ended.Load() {
				return 0
			}
			return errNotReady
		},
		"cuEventCreate": func([6]uintptr) result { return errOutOfMemory },
		"cuEventQuery": func(a [6]uintptr) result {
			if a[0] == 0 {
				return 400 // CUDA_ERROR_INVALID_HANDLE
			}
			return errNotReady
		},
	})
	g, _, _ := stoppedFake(t, tab, 0, 7, 7)
	if err := settleOpen(tab, g, 1); err != nil {
		t.Fatal(err)
	}
	// Stop's watcher settles the kept work beside the test, under g.mu.
	g.mu.Lock()
	fault := g.fault
	g.mu.Unlock()
	if fault != "" {
		t.Fatalf("the GPU is taken as faulted: %s", fault)
	}
	ended.Store(true)
	if err := settleOpen(tab, g, 0); err != nil {
		t.Fatalf("an open once the work ended: %v", err)
	}
	g.mu.Lock()
	n := len(g.kept)
	g.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d kept once the work ended", n)
	}
}

// TestKeptOwnWordFreed stops a device of a word of its own whose work
// still runs; rig frees the word once it reads the last value. A fault of
// the context after that must not make the next open touch the freed word.
func TestKeptOwnWordFreed(t *testing.T) {
	page, err := unix.Mmap(-1, 0, int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	host := uintptr(unsafe.Pointer(&page[0]))
	var faulted bool
	var mu sync.Mutex
	tab := fakeTable(t, map[string]fakeFn{
		"cuStreamQuery": func([6]uintptr) result { return errNotReady },
		"cuEventCreate": fakeEvents(),
		"cuEventQuery": func([6]uintptr) result {
			mu.Lock()
			defer mu.Unlock()
			if faulted {
				return errIllegalAddress
			}
			return errNotReady
		},
		"cuMemFreeHost": func(a [6]uintptr) result {
			if a[0] == host {
				_ = unix.Munmap(page)
			}
			return 0
		},
	})
	g := &gpuInfo{bus: "0000:01:00.0"}
	word := (*uint64)(unsafe.Pointer(&page[0]))
	d := fakeDevice(tab, g, 0, word)
	d.own = &region{kind: ownWord, size: 8, host: host, loc: device.Location{Address: 0xd0, Handle: uint64(host)}}
	d.last, d.written = 7, 7
	if err := d.Stop(""); err != nil {
		t.Fatal(err)
	}
	*word = 7 // the kept work wrote the last value: rig frees the word
	if err := d.Free(d.own); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	faulted = true
	mu.Unlock()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("the open read the freed word: %v", v)
			}
		}()
		_ = settleOpen(tab, g, 1)
	}()
	g.mu.Lock()
	fault := g.fault
	g.mu.Unlock()
	if fault == "" {
		t.Fatal("the fault of the kept work is not the GPU's")
	}
}

// TestTimedSubmitFault fails a timed submit where measuring the clock meets
// a fault of the context's work: the device must take it as a fault.
func TestTimedSubmitFault(t *testing.T) {
	tab := fakeTable(t, map[string]fakeFn{
		"cuEventCreate": fakeEvents(),
		"cuEventRecord": func([6]uintptr) result { return errIllegalAddress },
	})
	g := &gpuInfo{bus: "0000:01:00.0"}
	d := fakeDevice(tab, g, 0, new(uint64))
	a := d.Submit(&device.Submission{Value: 1, Timed: true})
	if a.Kind != device.Failed {
		t.Fatalf("the submit answered %v", a.Kind)
	}
	if !d.ctxFailed || d.faulted() == "" {
		t.Fatalf("the fault is not the device's: %s", a.Reason)
	}
}

// TestOrderEventRefused fails a submit whose parts need an event for their
// order where CUDA makes none: the failure is CUDA's answer to the event's
// making.
func TestOrderEventRefused(t *testing.T) {
	tab := fakeTable(t, map[string]fakeFn{
		"cuEventCreate": func([6]uintptr) result { return errOutOfMemory },
		"cuEventRecord": func(a [6]uintptr) result {
			if a[0] == 0 {
				return 400 // CUDA_ERROR_INVALID_HANDLE
			}
			return 0
		},
	})
	g := &gpuInfo{bus: "0000:01:00.0"}
	d := fakeDevice(tab, g, 0, new(uint64))
	dst := &region{kind: devMem, size: 8}
	s := &device.Submission{Value: 1, Parts: []device.Part{
		{Kind: device.CopyRows, Queue: device.Copy, Dst: dst, Src: dst},
		{Kind: device.CopyRows, Queue: device.Compute, After: 1, Dst: dst, Src: dst},
	}}
	a := d.Submit(s)
	if a.Kind != device.Failed {
		t.Fatalf("the submit answered %v", a.Kind)
	}
	if want := (&Error{Code: int(errOutOfMemory)}).Error(); !strings.Contains(a.Reason, want) {
		t.Fatalf("the failure %q is not CUDA's %q", a.Reason, want)
	}
}

// TestKeptWorkWatched stops a device whose work still runs, and opens no
// device of the GPU after: where that work then faults, the device's word
// reaches its last value all the same (rig gives a stopped device's memory
// back, and closes its Done, once it does); where it ends, the GPU forgets
// it and leaves the word to the work.
func TestKeptWorkWatched(t *testing.T) {
	for _, c := range []struct {
		name  string
		end   result // cuEventQuery's answer once the work ends
		word  uint64 // the word then
		fault bool
	}{
		{"faults", errIllegalAddress, 7, true},
		{"ends", 0, 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			ended := false
			tab := fakeTable(t, map[string]fakeFn{
				"cuStreamQuery": func([6]uintptr) result { return errNotReady },
				"cuEventCreate": fakeEvents(),
				"cuEventQuery": func([6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if ended {
						return c.end
					}
					return errNotReady
				},
			})
			g, _, word := stoppedFake(t, tab, 3, 7, 7)
			time.Sleep(20 * time.Millisecond)
			g.mu.Lock()
			kept := len(g.kept)
			g.mu.Unlock()
			if kept != 1 || atomic.LoadUint64(word) != 3 {
				t.Fatalf("while the work runs: %d kept, word %d; want 1 kept, word 3", kept, atomic.LoadUint64(word))
			}
			mu.Lock()
			ended = true
			mu.Unlock()
			deadline := time.Now().Add(5 * time.Second)
			for {
				g.mu.Lock()
				kept, fault := len(g.kept), g.fault
				g.mu.Unlock()
				if kept == 0 {
					if w := atomic.LoadUint64(word); w != c.word || (fault != "") != c.fault {
						t.Fatalf("the work settled with word %d and fault %q; want word %d, a fault %v", w, fault, c.word, c.fault)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the kept work was not settled in 5 s without an open (word %d)", atomic.LoadUint64(word))
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestInitNoDevice initialises a CUDA that sees no GPU, as where
// CUDA_VISIBLE_DEVICES names none: cuInit answers CUDA_ERROR_NO_DEVICE and
// every later call CUDA_ERROR_NOT_INITIALIZED. CUDA then sees 0 GPUs,
// which is no error.
func TestInitNoDevice(t *testing.T) {
	const notInitialized = 3
	tab := fakeTable(t, map[string]fakeFn{
		"cuInit": func([6]uintptr) result { return errNoDevice },
		"cuDriverGetVersion": func(a [6]uintptr) result {
			*(*int32)(ptr(a[0])) = 13000
			return 0
		},
		"cuDeviceGetCount": func([6]uintptr) result { return notInitialized },
	})
	listMu.Lock()
	saved := gpus
	gpus = nil
	listMu.Unlock()
	defer func() {
		listMu.Lock()
		gpus = saved
		listMu.Unlock()
	}()
	if err := tab.start(); err != nil {
		t.Fatalf("initialising a CUDA that sees no GPU: %v", err)
	}
	l, err := tab.list()
	if err != nil || len(l) != 0 {
		t.Fatalf("a CUDA that sees no GPU lists %d GPUs, error %v; want 0, no error", len(l), err)
	}
}

// TestPinnedPastHostMemory asks for more Pinned memory than the host has:
// no page-locking can give it, and the Go memory it would lock cannot be
// made either (the runtime's out of memory ends the process). The answer
// is ErrNoMemory.
func TestPinnedPastHostMemory(t *testing.T) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Skip(err)
	}
	ram := uint64(si.Totalram) * uint64(si.Unit)
	if ram >= 1<<62 {
		t.Skipf("the host states %d bytes of memory", ram)
	}
	tab := fakeTable(t, nil)
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	for _, n := range []uint64{ram + uint64(pageSize), 2 * ram} {
		r, err := d.Alloc(device.PinnedMemory, int(n))
		if !errors.Is(err, device.ErrNoMemory) {
			t.Fatalf("%d bytes of Pinned memory on a host of %d: region %v, error %v; want ErrNoMemory", n, ram, r, err)
		}
	}
}

// TestPinnedUnlockRefused frees Pinned memory whose unlock CUDA refuses,
// as it refuses every call of a context after a fault of its work: CUDA
// keeps the pages locked and mapped for every device, so the process
// must keep them, rather than let the collector give them to other Go
// values, where a later Pinned allocation would meet CUDA's refusal to
// lock them again and a GPU would still address them. An unlock that
// CUDA took, or refused as of memory not locked, lets them go. The same
// holds for an allocation whose mapping CUDA refused after locking it.
func TestPinnedUnlockRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		mapping result // cuMemHostGetDevicePointer's answer
		unlock  result // cuMemHostUnregister's
		kept    bool
	}{
		{"unlocked", 0, 0, false},
		{"unlock refused", 0, errIllegalAddress, true},
		{"not locked", 0, errHostNotRegistered, false},
		{"mapping refused, unlock refused", errIllegalAddress, errIllegalAddress, true},
		{"mapping refused, unlocked", errIllegalAddress, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := fakeTable(t, map[string]fakeFn{
				"cuMemHostGetDevicePointer_v2": func([6]uintptr) result { return c.mapping },
				"cuMemHostUnregister":          func([6]uintptr) result { return c.unlock },
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			hosts.mu.Lock()
			before := len(hosts.refused)
			hosts.mu.Unlock()
			t.Cleanup(func() {
				hosts.mu.Lock()
				hosts.refused = hosts.refused[:before]
				hosts.mu.Unlock()
			})
			var pages []byte
			r, err := d.Alloc(device.PinnedMemory, 3*int(pageSize))
			if c.mapping == 0 {
				if err != nil {
					t.Fatal(err)
				}
				pages = r.(*region).rng.pages
				if err := d.Free(r); err != nil {
					t.Fatal(err)
				}
			} else if err == nil {
				t.Fatal("an allocation whose mapping CUDA refused")
			}
			hosts.mu.Lock()
			kept := hosts.refused[before:]
			hosts.mu.Unlock()
			if len(kept) != 0 != c.kept || c.kept && (len(kept) != 1 || len(kept[0]) != 3*int(pageSize) || pages != nil && &kept[0][0] != &pages[0]) {
				t.Fatalf("the process keeps %d ranges of the pages CUDA was asked to unlock; want them kept: %v", len(kept), c.kept)
			}
		})
	}
}

// TestGraphFailedNodeHoldsNothing adds a kernel node that CUDA refuses,
// to a graph and to an executable graph: neither records the function, so
// neither keeps its image's module once rig unloads the image.
func TestGraphFailedNodeHoldsNothing(t *testing.T) {
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
		"cuFuncGetAttribute":                fakeFuncAttrs(1024, 48<<10),
		"cuFuncGetParamInfo":                func([6]uintptr) result { return errInvalidValue },
		"cuGraphAddKernelNode_v2":           func([6]uintptr) result { return errInvalidValue },
		"cuGraphExecKernelNodeSetParams_v2": func([6]uintptr) result { return errInvalidValue },
	}))
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	gs := &graphs{d: d}
	for _, c := range []struct {
		name string
		add  func(fn uint64) error
		want string // what CUDA refused
	}{
		{"graph", func(fn uint64) error {
			g, err := gs.NewGraph()
			if err != nil {
				return err
			}
			_, err = g.Kernel(cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}})
			return err
		}, "adding a kernel node"},
		{"executable graph", func(fn uint64) error {
			g, err := gs.NewGraph()
			if err != nil {
				return err
			}
			x, err := g.Instantiate()
			if err != nil {
				return err
			}
			return x.SetKernel(0, cuda.Kernel{Func: fn, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}})
		}, "setting a kernel node"},
	} {
		t.Run(c.name, func(t *testing.T) {
			const fn = 0xf1
			img := fakeModule(t, d, fn)
			if err := c.add(fn); err == nil {
				t.Fatal("CUDA refused the node, and the graph answered no error")
			} else if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the graph answered %q; want CUDA's refusal of %s", err, c.want)
			}
			if err := d.Unload(img); err != nil {
				t.Fatal(err)
			}
			img.mu.Lock()
			gone, held := img.gone, img.graphs
			img.mu.Unlock()
			if !gone {
				t.Fatalf("the module stays loaded after the image's unload: %d graphs hold it", held)
			}
		})
	}
}

// stoppedFake is a device of GPU 0000:01:00.0 on tab, whose word reads w,
// which submitted values up to last and wrote the word up to written, and
// which Stop stopped; it returns the GPU, the device and the word.
func stoppedFake(t *testing.T, tab *table, w, last, written uint64) (*gpuInfo, *gpu, *uint64) {
	t.Helper()
	g := &gpuInfo{bus: "0000:01:00.0"}
	word := new(uint64)
	*word = w
	d := fakeDevice(tab, g, 0, word)
	d.last, d.written = last, written
	if err := d.Stop(""); err != nil {
		t.Fatal(err)
	}
	return g, d, word
}

// fakeModule registers, until the test ends, an image of d (module 0x77)
// whose one function "k" is fn, as a load would.
func fakeModule(t *testing.T, d *gpu, fn uintptr) *image {
	t.Helper()
	img := &image{d: d, mod: 0x77, funcs: map[string]uintptr{"k": fn}, entries: map[string]*device.Entry{}}
	modules.mu.Lock()
	if modules.byFun == nil {
		modules.byFun = map[uintptr]*image{}
	}
	modules.byFun[fn] = img
	modules.mu.Unlock()
	t.Cleanup(func() {
		modules.mu.Lock()
		delete(modules.byFun, fn)
		modules.mu.Unlock()
	})
	return img
}

// graphFakes is fns with CUDA's graph create and instantiate, which
// answer the graph 0x9a and the executable graph 0x9b.
func graphFakes(fns map[string]fakeFn) map[string]fakeFn {
	fns["cuGraphCreate"] = func(a [6]uintptr) result {
		*cWord(a[0]) = 0x9a
		return 0
	}
	fns["cuGraphInstantiateWithFlags"] = func(a [6]uintptr) result {
		*cWord(a[0]) = 0x9b
		return 0
	}
	return fns
}
