package nvdev

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/abi"
	rig "github.com/rig-go/rig/runtime"
)

// TestPeerSameFake runs, through rig on the fake, a copy of device B that
// reads a buffer device A writes: B maps A's memory as a view of the same
// addresses (the devices share the GPU's address space), and its
// submission waits on the GPU for A's word. B's channels run first in the
// fake, so B's copy would read the buffer before A wrote it without the
// wait.
func TestPeerSameFake(t *testing.T) {
	f := newFake()
	open := func(name string) *rig.Device {
		o := f.opener(Config{})
		o.Name += "-" + name
		d, err := rig.Open(bg, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = d.Close()
			select {
			case <-d.Done():
			case <-time.After(5 * time.Second):
				t.Errorf("device %s did not give everything back", name)
			}
		})
		return d
	}
	b := open("B") // first, so that its channels run first
	a := open("A")
	if !b.Facts().Waits.Has(device.WaitStores) || a.Word() == nil {
		t.Fatalf("no GPU-side waits: B's %v, A's word %p", b.Facts().Waits, a.Word())
	}
	const n = 64 << 10
	alloc := func(d *rig.Device, k device.Memory) *rig.Buffer {
		x, err := d.Alloc(k, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	src, x, dst := alloc(a, device.Pinned), alloc(a, device.Device), alloc(b, device.Pinned)
	pattern(src.Bytes(), 1)
	invert(dst.Bytes(), src.Bytes())
	f.pause()
	up, _ := rig.NewSubmission(a, rig.Copy(0, 0, 1, 0, n))
	pa, err := up.Take().Submit(bg, src, x)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	down, _ := rig.NewSubmission(b, rig.Copy(0, 0, 1, 0, n))
	pb, err := down.Take().Submit(ctx, x, dst)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("B's submission waited on the host for A's point")
	}
	if err != nil {
		t.Fatal(err)
	}
	if pa.Reached() || pb.Reached() {
		t.Fatal("work ran while the fake was paused")
	}
	f.resume()
	if err := pb.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !pa.Reached() {
		t.Error("B's point was reached before A's")
	}
	if i := firstDiff(dst.Bytes(), src.Bytes()); i >= 0 {
		t.Fatalf("B's copy of A's buffer differs at byte %d", i)
	}
	// The view is B's until B closes; A's memory goes back with A.
	for _, d := range []*rig.Device{b, a} {
		_ = d.Close()
		select {
		case <-d.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("device %s did not give everything back", d.Name())
		}
	}
	if n := f.live(); n != 0 {
		t.Errorf("%d memories left after both devices closed", n)
	}
}

// TestAcceptanceOnFake runs the GPU tests of copies and fills (with 4 MiB
// as the largest size) and of refusals through rig on the fake, whose
// emulator runs the driver's copy kernels and no other kernel.
func TestAcceptanceOnFake(t *testing.T) {
	t.Setenv("RIG_GPU", "1")
	f := newFake()
	var mu sync.Mutex
	var ks []*copyKernels
	f.onLaunch = func(q abi.Qmd, bank []byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range ks {
			switch q.Program() {
			case k.copy.Code:
				po := k.copy.Data.(*kfunc).l.Kernel.ParamOffset
				dst, src, m := binary.LittleEndian.Uint64(bank[po:]), binary.LittleEndian.Uint64(bank[po+8:]), binary.LittleEndian.Uint64(bank[po+16:])
				copy(f.mem(dst, m), f.mem(src, m))
				return
			case k.fill.Code:
				fo := k.fill.Data.(*kfunc).l.Kernel.ParamOffset
				dst, b, m := binary.LittleEndian.Uint64(bank[fo:]), bank[fo+8], binary.LittleEndian.Uint64(bank[fo+16:])
				d := f.mem(dst, m)
				for i := range d {
					d[i] = b
				}
				return
			}
		}
	}
	open, big := gpuOpen, bigBytes
	defer func() { gpuOpen, bigBytes = open, big }()
	gpuOpen = func(c Config) device.Opener {
		o := f.opener(c)
		mk := o.Make
		o.Make = func(w *uint64) (device.Driver, error) {
			drv, err := mk(w)
			if err == nil && drv.(*gpu).copyK != nil {
				mu.Lock()
				ks = append(ks, drv.(*gpu).copyK)
				mu.Unlock()
			}
			return drv, err
		}
		return o
	}
	bigBytes = 4 << 20
	t.Run("copies and fills", TestGPU13CopiesAndFills)
	t.Run("refusals", TestGPU17Never)
}

// TestMapPeerView maps memory of a device for another device of the same
// fake (a view at the same address, which Free leaves alone) and refuses
// it for a device of another fake.
func TestMapPeerView(t *testing.T) {
	a := openRaw(t, Config{})
	m := a.alloc(device.Device, 4096)
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.f.open(w, Config{})
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	b := &raw{t: t, f: a.f, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(b.close)
	if !b.d.Peer(a.d) {
		t.Error("two devices of one GPU are not peers")
	}
	v, err := b.d.MapPeer(a.d, m)
	if err != nil {
		t.Fatal(err)
	}
	if loc := b.d.Locate(v); loc.Address != m.Address {
		t.Errorf("the view lies at 0x%x, the memory at 0x%x", loc.Address, m.Address)
	}
	live := a.f.live()
	if err := b.d.Free(v); err != nil || a.f.live() != live {
		t.Errorf("the view's free: %v, %d memories then %d", err, live, a.f.live())
	}
	c := openRaw(t, Config{})
	if _, err := c.d.MapPeer(a.d, m); !errors.Is(err, device.ErrNever) {
		t.Errorf("a map of another fake's memory: %v", err)
	}
}
