//go:build linux && (amd64 || arm64)

package cudadev

import (
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// TestOrderUnderRandomRefusals submits random values of copies on both
// queues, with random Afters, while CUDA refuses random calls with an
// error of the call alone: no write of the word may pass work enqueued
// before it, each part enqueued must follow the part its After names, and
// each value enqueued follows all the work of earlier values (value v's
// work runs after v-1's on both streams).
func TestOrderUnderRandomRefusals(t *testing.T) {
	for trial := int64(0); trial < 300; trial++ {
		rng := rand.New(rand.NewSource(trial))
		p := []float64{0, 0.02, 0.1}[trial%3]
		m := newStreamOrder(func(name string, _ [6]uintptr) bool {
			return rng.Float64() < p
		})
		fns := m.fns()
		fns["cuEventCreate"] = fakeEvents()
		d := fakeDevice(fakeTable(t, fns), &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
		d.end = device.Compute
		failed := false
		for v := uint64(1); v <= 80; v++ {
			n := rng.Intn(4)
			parts := make([]device.Part, n)
			for i := range parts {
				parts[i] = copyOn(rng.Intn(2))
				if i > 0 && rng.Intn(2) == 0 {
					parts[i].After = 1 + rng.Intn(i)
				}
			}
			s := &device.Submission{Value: v, Parts: parts}
			if a := d.Room(s); a.Kind != device.RoomOK {
				t.Fatalf("trial %d: room %+v", trial, a)
			}
			m.mu.Lock()
			first := m.work
			m.mu.Unlock()
			a := d.Submit(s)
			m.mu.Lock()
			got := m.work - first
			if a.Kind != device.Failed && got != n {
				t.Fatalf("trial %d value %d: %d pieces for %d parts", trial, v, got, n)
			}
			if failed && got != 0 {
				t.Fatalf("trial %d value %d: work enqueued after a failure", trial, v)
			}
			for i := 0; i < got; i++ {
				w := first + i
				for e := 0; e < first; e++ {
					if !m.follows[w][e] {
						t.Fatalf("trial %d value %d: part %d (work %d) does not follow work %d of an earlier value", trial, v, i, w, e)
					}
				}
				if aft := parts[i].After; aft != 0 && !m.follows[w][first+aft-1] {
					t.Fatalf("trial %d value %d: part %d does not follow part %d, its After", trial, v, i, aft-1)
				}
			}
			m.mu.Unlock()
			if a.Kind == device.Failed {
				failed = true
			}
		}
		if !failed {
			d.Commit(80)
		}
		m.mu.Lock()
		if len(m.bad) > 0 {
			t.Fatalf("trial %d: %v", trial, m.bad)
		}
		m.mu.Unlock()
	}
}

// Host bytes across two adjacent Pinned allocations, each a range the
// driver counts, lie inside neither: MapHost refuses them (ErrNever), as
// CUDA refuses to lock over locked memory, rather than mapping them
// uncounted, which would let the first Free unlock pages the mapping still
// covers and hand them to the collector. So it does for bytes across two
// ranges that CUDA locked for other owners, where CUDA gives no range
// attributes: under unified addressing their device addresses cannot
// tell one allocation from two.
func TestMapHostAcrossRanges(t *testing.T) {
	var mu sync.Mutex
	locked := map[uintptr]uintptr{} // start -> size
	inside := func(p uintptr) bool {
		for s, n := range locked {
			if p >= s && p < s+n {
				return true
			}
		}
		return false
	}
	tab := fakeTable(t, map[string]fakeFn{
		"cuMemHostRegister_v2": func(a [6]uintptr) result {
			mu.Lock()
			defer mu.Unlock()
			for p := a[0]; p < a[0]+a[1]; p += pageSize {
				if inside(p) {
					return errHostAlreadyRegister
				}
			}
			locked[a[0]] = a[1]
			return 0
		},
		"cuMemHostUnregister": func(a [6]uintptr) result {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := locked[a[0]]; !ok {
				return errHostNotRegistered
			}
			delete(locked, a[0])
			return 0
		},
		// Unified addressing: a locked page's device address is its
		// host address.
		"cuMemHostGetDevicePointer_v2": func(a [6]uintptr) result {
			mu.Lock()
			defer mu.Unlock()
			if !inside(a[1]) {
				return errInvalidValue
			}
			*cWord(a[0]) = uint64(a[1])
			return 0
		},
		"cuPointerGetAttribute": func([6]uintptr) result { return errInvalidValue },
	})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.facts.MapsHost = true
	var regs []*region
	defer func() {
		for _, r := range regs {
			_ = d.Free(r)
		}
	}()
	var a, b *region
	for i := 0; i < 64 && a == nil; i++ {
		r, err := d.Alloc(device.PinnedMemory, int(pageSize))
		if err != nil {
			t.Fatal(err)
		}
		n := r.(*region)
		for _, o := range regs {
			switch n.host {
			case o.host + pageSize:
				a, b = o, n
			case o.host - pageSize:
				a, b = n, o
			}
		}
		regs = append(regs, n)
	}
	if a == nil {
		t.Skip("no two adjacent Pinned allocations")
	}
	if r, err := d.MapHost(a.host+pageSize-8, 16); !errors.Is(err, device.ErrNever) {
		if err == nil {
			_ = d.Free(r)
		}
		t.Fatalf("MapHost of 16 bytes across two Pinned allocations (%#x and %#x): %v, want ErrNever", a.host, b.host, err)
	}
	// Two ranges of other owners, which the driver does not count.
	other := make([]byte, 4*pageSize)
	base := (uintptr(unsafe.Pointer(&other[0])) + pageSize - 1) &^ (pageSize - 1)
	mu.Lock()
	locked[base], locked[base+pageSize] = pageSize, pageSize
	mu.Unlock()
	if r, err := d.MapHost(base+pageSize-8, 16); !errors.Is(err, device.ErrNever) {
		if err == nil {
			_ = d.Free(r)
		}
		t.Fatalf("MapHost of 16 bytes across two ranges locked for other owners: %v, want ErrNever", err)
	}
	runtime.KeepAlive(other)
}

// fakeHostPage is a page-aligned host address that MapHost is given; the
// fake CUDA never touches it.
const fakeHostPage = uintptr(0x7e5500000000)

// TestMapHostNoMemoryToMap: a range that CUDA locks but lacks the memory
// to map (cuMemHostGetDevicePointer answers CUDA_ERROR_OUT_OF_MEMORY) is
// refused with ErrNoRoom, as one CUDA lacks the memory to lock is.
func TestMapHostNoMemoryToMap(t *testing.T) {
	tab := fakeTable(t, map[string]fakeFn{
		"cuMemHostGetDevicePointer_v2": func([6]uintptr) result { return errOutOfMemory },
		"cuPointerGetAttribute":        func([6]uintptr) result { return errInvalidValue },
	})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.facts.MapsHost = true
	r, err := d.MapHost(fakeHostPage, int(pageSize))
	if err == nil {
		_ = d.Free(r)
		t.Fatal("MapHost mapped a range CUDA could not map")
	}
	if !errors.Is(err, device.ErrNoRoom) {
		t.Errorf("CUDA had no memory to map the range: MapHost answered %q; want ErrNoRoom", err)
	}
}

// TestMapPeerNoMemoryToMap: where CUDA lacks the memory to map another
// device's host memory for the device (CUDA_ERROR_OUT_OF_MEMORY), MapPeer
// answers ErrNoRoom, as MapHost does, not ErrNever: the device may map it
// once it has the room.
func TestMapPeerNoMemoryToMap(t *testing.T) {
	tab := fakeTable(t, map[string]fakeFn{
		"cuMemHostGetDevicePointer_v2": func([6]uintptr) result { return errOutOfMemory },
	})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	o := fakeDevice(tab, &gpuInfo{bus: "0000:02:00.0"}, 0, new(uint64))
	pinned := &region{kind: pinnedMem, size: uint64(pageSize), host: fakeHostPage,
		loc: device.Location{Address: uint64(fakeHostPage), Handle: uint64(fakeHostPage), Host: fakeHostPage}}
	r, err := d.MapPeer(o, pinned)
	if err == nil {
		_ = d.Free(r)
		t.Fatal("MapPeer mapped host memory CUDA could not map")
	}
	if !errors.Is(err, device.ErrNoRoom) {
		t.Errorf("CUDA had no memory to map the other device's host memory: MapPeer answered %q; want ErrNoRoom", err)
	}
}

// TestMapHostWhereNotMapsHost: a device whose facts say it maps no host
// memory refuses MapHost with ErrNever.
func TestMapHostWhereNotMapsHost(t *testing.T) {
	tab := fakeTable(t, map[string]fakeFn{
		"cuPointerGetAttribute": func([6]uintptr) result { return errInvalidValue },
	})
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.facts.MapsHost = false
	r, err := d.MapHost(fakeHostPage+16*pageSize, int(pageSize))
	if err == nil {
		_ = d.Free(r)
		t.Fatal("a device that maps no host memory (Facts.MapsHost false) mapped host memory; want ErrNever")
	}
	if !errors.Is(err, device.ErrNever) {
		t.Fatalf("MapHost answered %q; want ErrNever", err)
	}
}
