package rig_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// hzMoved counts the looks of the hazard stress test that saw the counter
// change under them: a write that ran beside a read it should follow or
// precede.
var hzMoved atomic.Int64

// hzWord is the counter at the 8 bytes of b.
func hzWord(b []byte) *uint64 { return (*uint64)(unsafe.Pointer(&b[0])) }

// hzLook reads the counter, yields, and reads it again.
func hzLook(w *uint64) {
	v := atomic.LoadUint64(w)
	for range 3 {
		runtime.Gosched()
	}
	if atomic.LoadUint64(w) != v {
		hzMoved.Add(1)
	}
}

func init() {
	// test_hz_inc adds 1 to the counter whose address is at 0, in two
	// steps a yield apart: two at once lose an add.
	hostdev.RegisterParams("test_hz_inc", 8, func(k *hostdev.Ctx) {
		w := hzWord(k.Bytes(k.Uint64(0), 8))
		v := atomic.LoadUint64(w)
		runtime.Gosched()
		atomic.StoreUint64(w, v+1)
	})
	// test_hz_look reads the counter whose address is at 0 twice, a few
	// yields apart, and counts a change in hzMoved.
	hostdev.RegisterParams("test_hz_look", 8, func(k *hostdev.Ctx) {
		hzLook(hzWord(k.Bytes(k.Uint64(0), 8)))
	})
}

// TestStressHazardsAcrossDevices runs many goroutines that submit on three
// host devices launches that add to one counter (a read, a yield and a
// write) and look at it (two reads a few yields apart), some of them in
// one submission with a look on the other queue, and waits for them. The
// hazards order every add after the earlier reads and writes, on any
// device and queue, and every look after the earlier adds: no add is lost,
// and no look sees the counter change.
func TestStressHazardsAcrossDevices(t *testing.T) {
	goroutines, each := 48, 40
	if testing.Short() {
		goroutines, each = 16, 20
	}
	hzMoved.Store(0)
	const ndev = 3
	var devs [ndev]*rig.Device
	for i := range devs {
		devs[i] = host(t, hostdev.Config{Ring: 8 + 8*i})
	}
	x := alloc(t, devs[0], device.MappedMemory, 64)
	w := hzWord(x.Bytes())
	look := hostdev.FillFunc(func(uintptr) { hzLook(w) })
	type kind struct {
		s    *rig.Submission
		adds uint64
	}
	var kinds [ndev][]kind
	for i, d := range devs {
		inc, lk := fn(t, d, "test_hz_inc"), fn(t, d, "test_hz_look")
		kinds[i] = []kind{
			{sub(t, d, rig.Launch(inc, 8, rig.ReadWrite(0, 0))), 1},
			{sub(t, d, rig.Launch(lk, 8, rig.Read(0, 0))), 0},
			// A look on COPY:0, then an add on COMPUTE:0 that must
			// wait for it.
			{sub(t, d, rig.Fill(look, 0, rig.Uses(0, rig.Reads)), rig.Launch(inc, 8, rig.ReadWrite(0, 0))), 1},
			// An add, then a look on COPY:0 that must wait for it,
			// and a second add that must wait for the look.
			{sub(t, d, rig.Launch(inc, 8, rig.Write(0, 0)), rig.Fill(look, 0, rig.Uses(1, rig.Reads)), rig.Launch(inc, 8, rig.ReadWrite(0, 0))), 2},
		}
	}
	var want, bad atomic.Uint64
	var firstBad atomic.Pointer[string]
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range each {
				k := kinds[rng.IntN(ndev)][rng.IntN(4)]
				if _, err := k.s.Take().Do(context.Background(), x, x); err != nil {
					if bad.Add(1) == 1 {
						msg := err.Error()
						firstBad.Store(&msg)
					}
					continue
				}
				want.Add(k.adds)
			}
		})
	}
	stressEnds(t, &wg, "the submitters")
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d submissions failed, the first: %s", n, *firstBad.Load())
	}
	if got := atomic.LoadUint64(w); got != want.Load() {
		t.Errorf("the counter reads %d after %d adds: adds ran beside each other", got, want.Load())
	}
	if n := hzMoved.Load(); n > 0 {
		t.Errorf("%d looks saw the counter change under them", n)
	}
}
