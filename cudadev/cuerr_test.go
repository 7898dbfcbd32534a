//go:build linux && (amd64 || arm64)

package cudadev

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
)

// TestKeptUnusableContext stops a device whose work still runs, then has
// the work end with an error that leaves the context unusable, though
// CUDA's fault list of launches does not name it: an uncorrectable ECC or
// NVLink error, a contained error, an unknown error. The next open of the
// GPU must take it as a fault of the work: the stopped device's word
// reaches its last value, so that rig gives its memory back and its Done
// closes, and the GPU is taken as faulted.
func TestKeptUnusableContext(t *testing.T) {
	for _, code := range []result{214, 220, 226, 709, 721, 810, 999} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var mu sync.Mutex
			ended := false
			tab := fakeTable(t, map[string]fakeFn{
				"cuStreamQuery": func([6]uintptr) result { return errNotReady },
				"cuEventCreate": fakeEvents(),
				"cuEventQuery": func([6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if ended {
						return code
					}
					return errNotReady
				},
			})
			g, _, word := stoppedFake(t, tab, 3, 7, 7)
			mu.Lock()
			ended = true
			mu.Unlock()
			_ = settleOpen(tab, g, 1)
			g.mu.Lock()
			kept, fault := len(g.kept), g.fault
			g.mu.Unlock()
			if w := atomic.LoadUint64(word); w != 7 || kept != 0 || fault == "" {
				t.Fatalf("CUresult %d ended the kept work with word %d, %d kept, fault %q; want word 7, none kept, a fault", code, w, kept, fault)
			}
		})
	}
}

// TestPerCallErrorNoFault has CUDA refuse a call of Sleep or Stop with an
// error of that call alone (CUDA_ERROR_INVALID_HANDLE), not one of the
// context's work: the device must not take it for a fault, and Stop must
// neither raise the word while the work may still run, which would let rig
// give its memory back under it, nor end the GPU's use for the process.
// Where Sleep asks the streams, the work moves the word to 5.
func TestPerCallErrorNoFault(t *testing.T) {
	const invalidHandle = 400
	refuse := func([6]uintptr) result { return invalidHandle }
	for _, c := range []struct {
		name  string
		query fakeFn // cuStreamQuery's answer
		fns   map[string]fakeFn
		still time.Duration
	}{
		{"stop", refuse, nil, -1},
		{"query", refuse, nil, 0},
		{"record", nil, map[string]fakeFn{"cuEventRecord": refuse}, time.Minute},
		{"synchronize", nil, map[string]fakeFn{"cuEventSynchronize": refuse}, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			word := new(uint64)
			*word = 3
			var ended atomic.Bool
			fns := map[string]fakeFn{
				"cuEventCreate": fakeEvents(),
				"cuEventQuery": func([6]uintptr) result {
					if ended.Load() {
						return 0
					}
					return errNotReady
				},
				"cuStreamQuery": func([6]uintptr) result {
					atomic.StoreUint64(word, 5)
					return errNotReady
				},
			}
			if c.query != nil {
				fns["cuStreamQuery"] = c.query
			}
			for name, fn := range c.fns {
				fns[name] = fn
			}
			tab := fakeTable(t, fns)
			g := &gpuInfo{bus: "0000:01:00.0"}
			d := fakeDevice(tab, g, 0, word)
			d.last, d.written = 7, 7
			if c.still >= 0 {
				if err := d.Sleep(3, c.still); err != nil {
					t.Fatalf("Sleep answered %v", err)
				}
				if why := d.faulted(); why != "" {
					t.Fatalf("the device is taken as faulted: %s", why)
				}
			}
			before := atomic.LoadUint64(word)
			if err := d.Stop(""); err != nil {
				t.Fatal(err)
			}
			g.mu.Lock()
			fault := g.fault
			g.mu.Unlock()
			if w := atomic.LoadUint64(word); w != before || fault != "" {
				t.Fatalf("after Stop: word %d, the GPU's fault %q; want word %d while the work may run, no fault", w, fault, before)
			}
			// The work ends: the GPU forgets it.
			ended.Store(true)
			_ = settleOpen(tab, g, 0)
		})
	}
}

// TestKeptUnwrittenLast stops a device whose work still runs where CUDA
// refuses Stop's write of the last value into the word, with an error of
// that call alone (CUDA_ERROR_INVALID_VALUE). Once the work ends, nothing
// on the GPU writes the last value: the next open of the GPU must raise
// the word to it, so that rig gives the stopped device's memory back and
// its Done closes, and must not take the refusal for a fault. Where CUDA
// makes or records no event behind the work as well (an event never
// recorded reads as complete), the stream itself tells when its work
// ends: Stop keeps it, and it is destroyed once the work ended.
func TestKeptUnwrittenLast(t *testing.T) {
	for _, c := range []struct {
		name           string
		create, record result // cuEventCreate's and cuEventRecord's answers
		streams        bool   // the streams are kept in place of events
	}{
		{"recorded", 0, 0, false},
		{"unrecorded", 0, errInvalidValue, true},
		{"no events", errOutOfMemory, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			ended := false
			var destroyed []uintptr
			events := fakeEvents()
			answer := func([6]uintptr) result {
				mu.Lock()
				defer mu.Unlock()
				if ended {
					return 0
				}
				return errNotReady
			}
			tab := fakeTable(t, map[string]fakeFn{
				"cuStreamQuery":           answer,
				"cuEventQuery":            answer,
				"cuStreamWriteValue64_v2": func([6]uintptr) result { return errInvalidValue },
				"cuEventCreate": func(a [6]uintptr) result {
					if c.create != 0 {
						return c.create
					}
					return events(a)
				},
				"cuEventRecord": func([6]uintptr) result { return c.record },
				"cuStreamDestroy_v2": func(a [6]uintptr) result {
					mu.Lock()
					destroyed = append(destroyed, a[0])
					mu.Unlock()
					return 0
				},
			})
			g, _, word := stoppedFake(t, tab, 5, 7, 5)
			// streamsGone reports whether both of the device's streams
			// are destroyed.
			streamsGone := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(destroyed, 0x51) && slices.Contains(destroyed, 0x52)
			}
			if w := atomic.LoadUint64(word); w != 5 {
				t.Fatalf("Stop raised the word to %d while the work runs", w)
			}
			if streamsGone() == c.streams {
				t.Fatalf("while the work runs, the streams destroyed: %v; want %v", !c.streams, c.streams)
			}
			if err := settleOpen(tab, g, 0); err == nil {
				t.Fatal("an open of the stopped timeline while its work runs answered no error")
			}
			mu.Lock()
			ended = true
			mu.Unlock()
			_ = settleOpen(tab, g, 0)
			g.mu.Lock()
			fault, kept := g.fault, len(g.kept)
			g.mu.Unlock()
			if w := atomic.LoadUint64(word); w != 7 || fault != "" || kept != 0 {
				t.Fatalf("once the work ended: word %d, fault %q, %d kept; want word 7, no fault, none kept", w, fault, kept)
			}
			if !streamsGone() {
				t.Fatal("once the work ended, a stream Stop kept is not destroyed")
			}
		})
	}
}

// TestRemeasureFailureKeepsReference fails a timed submit's measure of
// the GPU's clock at each of its steps. With an error of a call alone
// (CUDA_ERROR_INVALID_HANDLE) the submit goes on, its value's work
// enqueued and its stamp taken, and the reference event stays as the
// last measure left it, not recorded again, so that the stamps convert
// against the host time measured with it; the next measure comes a full
// remeasure later. With a fault of the context's work
// (CUDA_ERROR_ILLEGAL_ADDRESS) the submit fails, and the device with it.
func TestRemeasureFailureKeepsReference(t *testing.T) {
	for _, c := range []struct {
		r      result
		failed bool
	}{
		{400, false},
		{errIllegalAddress, true},
	} {
		for _, at := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprint(c.r, "/", at), func(t *testing.T) {
				var mu sync.Mutex
				failing, queries := false, 0
				var recorded []uintptr
				tab := fakeTable(t, map[string]fakeFn{
					"cuEventCreate": fakeEvents(),
					"cuEventRecord": func(a [6]uintptr) result {
						mu.Lock()
						defer mu.Unlock()
						if failing {
							recorded = append(recorded, a[0])
						}
						return 0
					},
					"cuEventQuery": func([6]uintptr) result {
						mu.Lock()
						defer mu.Unlock()
						if failing {
							if queries++; queries == at {
								return c.r
							}
						}
						return 0
					},
				})
				d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
				f := getFrame()
				err := d.measure(f)
				putFrame(f)
				if err != nil {
					t.Fatal(err)
				}
				p := &d.prof
				ref, host := p.ref, p.refHost
				p.at = time.Time{}
				mu.Lock()
				failing = true
				mu.Unlock()
				a := d.Submit(&device.Submission{Value: 1, Timed: true})
				if failed := a.Kind == device.Failed; failed != c.failed {
					t.Fatalf("the submit answered %v (%s); want failed %v", a.Kind, a.Reason, c.failed)
				}
				mu.Lock()
				again := slices.Contains(recorded, ref)
				mu.Unlock()
				if p.ref != ref || p.refHost != host || again {
					t.Fatalf("after the failed measure: reference %#x at %d, recorded again %v; want %#x at %d, not recorded again", p.ref, p.refHost, again, ref, host)
				}
				if c.failed {
					return
				}
				if p.head != 1 || time.Since(p.at) > time.Minute {
					t.Fatalf("after the refused measure: %d stamps taken, measured %v ago; want 1, now", p.head, time.Since(p.at))
				}
				// The next timed submit measures nothing: the refused
				// measure counts as one.
				mu.Lock()
				queries, recorded = 0, nil
				mu.Unlock()
				if a := d.Submit(&device.Submission{Value: 2, Timed: true}); a.Kind == device.Failed {
					t.Fatalf("the next timed submit failed: %s", a.Reason)
				}
				mu.Lock()
				n := queries
				mu.Unlock()
				if n != 0 || p.head != 2 {
					t.Fatalf("the next timed submit queried %d events, took %d stamps; want none, 2", n, p.head)
				}
			})
		}
	}
}

// TestKeptQueryRefused has CUDA refuse the first query of a stopped
// device's kept event with an error of the query alone, where Stop's write
// of the last value was refused too: the kept work is kept and asked about
// again, and once the event tells that it ended, the word is raised to the
// last value (a forgotten entry would leave it short, and the device never
// given back).
func TestKeptQueryRefused(t *testing.T) {
	var mu sync.Mutex
	refuse := true
	tab := fakeTable(t, map[string]fakeFn{
		"cuStreamQuery":           func([6]uintptr) result { return errNotReady },
		"cuStreamWriteValue64_v2": func([6]uintptr) result { return errInvalidValue },
		"cuEventCreate":           fakeEvents(),
		"cuEventRecord":           func([6]uintptr) result { return 0 },
		"cuEventQuery": func([6]uintptr) result {
			mu.Lock()
			defer mu.Unlock()
			if refuse {
				return errInvalidValue
			}
			return 0
		},
	})
	g, _, word := stoppedFake(t, tab, 5, 7, 5)
	_ = settleOpen(tab, g, 0)
	if w := atomic.LoadUint64(word); w != 5 {
		t.Fatalf("a refused query raised the word to %d", w)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	_ = settleOpen(tab, g, 0)
	g.mu.Lock()
	fault, kept := g.fault, len(g.kept)
	g.mu.Unlock()
	if w := atomic.LoadUint64(word); w != 7 || fault != "" || kept != 0 {
		t.Fatalf("once the event told the work ended: word %d, fault %q, %d kept; want 7, none, 0", w, fault, kept)
	}
}

// TestSettlePerCallError has CUDA refuse the conversion of a profile stamp
// with an error of that call alone (CUDA_ERROR_INVALID_HANDLE), in Settle
// and in a timed submit that reuses the stamp: the stamp is dropped, and
// the device keeps running, neither failed nor faulted, nor is the error a
// *device.Fault, which would lose every CUDA device of the process. A
// fault of the context's work is still a fault.
func TestSettlePerCallError(t *testing.T) {
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
				"cuEventCreate":         fakeEvents(),
				"cuEventElapsedTime_v2": func([6]uintptr) result { return c.r },
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			p := &d.prof
			p.ref, p.at = 0xe0, time.Now()
			p.ring[0] = stamp{value: 1, started: 1, ev: [3]uintptr{0xe1, 0xe2, 0xe3}}
			p.head = 1
			_, err := d.Settle(nil)
			_, isFault := device.AsFault(err)
			if err == nil || isFault != c.fault || (d.faulted() != "") != c.fault || !c.fault && p.tail != p.head {
				t.Fatalf("Settle answered %v (a fault: %v), the device's fault %q, %d stamps left; want a fault %v, and none left but a fault's", err, isFault, d.faulted(), p.head-p.tail, c.fault)
			}
			if c.fault {
				return
			}
			// A timed submit that needs the stamp of the value 1,024
			// stamps back converts it first.
			p.tail, p.head = 0, stampCount
			if a := d.Submit(&device.Submission{Value: 1, Timed: true}); a.Kind == device.Failed {
				t.Fatalf("the timed submit failed: %s", a.Reason)
			}
			if d.faulted() != "" || p.tail != 1 || p.done.Len() != 0 {
				t.Fatalf("after the timed submit: fault %q, tail %d, %d converted; want no fault, tail 1, none converted", d.faulted(), p.tail, p.done.Len())
			}
		})
	}
}

// TestOpenStickyError has CUDA answer a sticky error
// (CUDA_ERROR_ILLEGAL_ADDRESS) at each of several steps of an open, past
// the context's retain: the open must return ErrFaulted and take the GPU
// as faulted, so that the next open refuses the GPU without calling CUDA
// on the dead context.
func TestOpenStickyError(t *testing.T) {
	for _, at := range []string{"cuCtxGetLimit", "cuStreamCreate", "cuEventCreate", "cuMemHostAlloc", "cuEventRecord"} {
		t.Run(at, func(t *testing.T) {
			var calls atomic.Int32
			own := new(uint64)
			fns := map[string]fakeFn{
				"cuDeviceGetAttribute": func(a [6]uintptr) result {
					*(*int32)(ptr(a[0])) = 1
					return 0
				},
				"cuDevicePrimaryCtxRetain": func(a [6]uintptr) result {
					*cWord(a[0]) = 0xc0
					return 0
				},
				"cuStreamCreate": func(a [6]uintptr) result {
					*cWord(a[0]) = 0x51
					return 0
				},
				"cuEventCreate": fakeEvents(),
				"cuMemHostAlloc": func(a [6]uintptr) result {
					*cWord(a[0]) = uint64(uintptr(unsafe.Pointer(own)))
					return 0
				},
			}
			fns[at] = func([6]uintptr) result {
				calls.Add(1)
				return errIllegalAddress
			}
			tab := fakeTable(t, fns)
			withOneGPU(t, tab)
			if _, err := open(0, Config{}, nil); !errors.Is(err, ErrFaulted) {
				t.Fatalf("the open answered %v; want ErrFaulted", err)
			}
			n := calls.Load()
			if _, err := open(0, Config{Timeline: 1}, nil); !errors.Is(err, ErrFaulted) || calls.Load() != n {
				t.Fatalf("the next open answered %v, calling %s again %d times; want ErrFaulted, no call", err, at, calls.Load()-n)
			}
		})
	}
}

// TestOpenAttributeRefused has CUDA refuse the open's read of the
// attributes it checks first, unified addressing and 64-bit stream memory
// operations: the open's error must be CUDA's, not a GPU that lacks the
// feature, and a sticky error (CUDA's unknown error, as a GPU that fell
// off the bus answers) must fault the GPU, as an open that meets one
// later does.
func TestOpenAttributeRefused(t *testing.T) {
	for _, c := range []struct {
		attr    uintptr
		code    result
		faulted bool
	}{
		{attrUnifiedAddressing, 3, false}, // CUDA_ERROR_NOT_INITIALIZED
		{attrUnifiedAddressing, errUnknown, true},
		{attr64BitStreamMemOps, 3, false},
		{attr64BitStreamMemOps, errUnknown, true},
	} {
		t.Run(fmt.Sprintf("attribute %d, error %d", c.attr, c.code), func(t *testing.T) {
			tab := fakeTable(t, map[string]fakeFn{
				"cuDeviceGetAttribute": func(a [6]uintptr) result {
					if a[1] == c.attr {
						return c.code
					}
					*(*int32)(ptr(a[0])) = 1
					return 0
				},
			})
			g := withOneGPU(t, tab)
			_, err := open(0, Config{}, nil)
			var e *Error
			if !errors.As(err, &e) || e.Code != int(c.code) || errors.Is(err, ErrFaulted) != c.faulted {
				t.Fatalf("the open answered %v; want CUDA's error %d, matching ErrFaulted: %v", err, c.code, c.faulted)
			}
			if (g.fault != "") != c.faulted {
				t.Fatalf("the GPU's fault is %q", g.fault)
			}
		})
	}
}

// TestOtherGPUWork refuses, with a clear reason, a launch of a function
// loaded in another GPU's context and a fill of a graph made in one (Room),
// which CUDA would refuse in Submit and lose the device; and a graph's
// kernel node whose parameters are fewer than the function reads, or whose
// function lies in another GPU's context.
func TestOtherGPUWork(t *testing.T) {
	tab := fakeTable(t, graphFakes(map[string]fakeFn{
		"cuFuncGetAttribute": fakeFuncAttrs(1024, 48<<10),
		"cuFuncGetParamInfo": func(a [6]uintptr) result {
			if a[1] > 0 {
				return errInvalidValue
			}
			*cWord(a[2]), *cWord(a[3]) = 0, 8
			return 0
		},
	}))
	a := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	a.maxBlock, a.maxGrid = [3]uint32{1024, 1024, 64}, [3]uint32{1 << 20, 1 << 16, 1 << 16}
	gi := &gpuInfo{bus: "0000:02:00.0"}
	gi.ctx.Store(0xc1)
	b := fakeDevice(tab, gi, 0, new(uint64))
	if a.ctx == b.ctx {
		t.Fatal("the two GPUs share a context")
	}
	k := &kernel{ctx: b.ctx, fn: 0xf2, threads: 256, shared: 1000, params: 8}
	e := &device.Entry{Name: "k", Params: 8, Threads: 256, Shared: 1000, Data: k}
	launch := device.Part{Kind: device.Launch, Entry: e, Groups: [3]uint32{1, 1, 1}, Threads: [3]uint32{32, 1, 1}, Params: make([]byte, 8)}
	if r := a.Room(&device.Submission{Parts: []device.Part{launch}}); r.Kind == device.RoomOK {
		t.Error("Room takes a launch of a function of another GPU's context")
	} else {
		t.Log(r.Reason)
	}
	gb := &graphs{d: b}
	g, err := gb.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	fill := device.Part{Kind: device.Fill, Queue: device.Compute, FillFn: x}
	if r := a.Room(&device.Submission{Parts: []device.Part{fill}}); r.Kind == device.RoomOK {
		t.Error("Room takes a fill of a graph made in another GPU's context")
	} else {
		t.Log(r.Reason)
	}
	if r := b.Room(&device.Submission{Parts: []device.Part{fill}}); r.Kind != device.RoomOK {
		t.Errorf("Room refuses a fill of the GPU's own graph: %s", r.Reason)
	}

	img := fakeModule(t, b, 0xf2)
	node := cuda.Kernel{Func: 0xf2, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
	if _, err := g.Kernel(node); err == nil {
		t.Error("a kernel node of no parameters for a function that reads 8 bytes")
	} else {
		t.Log(err)
	}
	if err := x.SetKernel(0, node); err == nil {
		t.Error("an executable graph's kernel node set with no parameters for a function that reads 8 bytes")
	}
	node.Params = make([]byte, 8)
	if _, err := g.Kernel(node); err != nil {
		t.Errorf("a kernel node of the parameters the function reads: %v", err)
	}
	ga := &graphs{d: a}
	other, err := ga.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Kernel(node); err == nil {
		t.Error("a kernel node of a function of another GPU's context")
	} else {
		t.Log(err)
	}
	img.mu.Lock()
	held := img.graphs
	img.mu.Unlock()
	if held != 1 {
		t.Errorf("%d graphs hold the image; want the one whose node took it", held)
	}
}

// withOneGPU makes tab the CUDA library and one GPU, which it returns,
// the list of GPUs, until the test ends.
func withOneGPU(t *testing.T, tab *table) *gpuInfo {
	t.Helper()
	g := &gpuInfo{bus: "0000:01:00.0"}
	libMu.Lock()
	savedLib := lib
	lib = tab
	libMu.Unlock()
	listMu.Lock()
	saved := gpus
	gpus = []*gpuInfo{g}
	listMu.Unlock()
	t.Cleanup(func() {
		libMu.Lock()
		lib = savedLib
		libMu.Unlock()
		listMu.Lock()
		gpus = saved
		listMu.Unlock()
	})
	return g
}
