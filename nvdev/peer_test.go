package nvdev

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
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
	src, x, dst := alloc(a, device.PinnedMemory), alloc(a, device.DeviceMemory), alloc(b, device.PinnedMemory)
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
	f.onLaunch = func(q hw.Qmd, bank []byte) {
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
	t.Run("copies and fills", TestGPUCopiesAndFills)
	t.Run("refusals", TestGPURefusedParts)
}

// TestMapPeerView maps memory of a device for another device of the same
// fake (a view at the same address, which Free leaves alone) and refuses
// it for a device of another fake.
func TestMapPeerView(t *testing.T) {
	a := openRaw(t, Config{})
	m := a.alloc(device.DeviceMemory, 4096)
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
	// No region, or no device: refused, not a panic.
	if _, err := b.d.MapPeer(a.d, (*nvidia.Memory)(nil)); !errors.Is(err, device.ErrNever) {
		t.Errorf("a map of a nil region: %v", err)
	}
	if _, err := b.d.MapPeer((*gpu)(nil), m); !errors.Is(err, device.ErrNever) {
		t.Errorf("a map of a nil device's region: %v", err)
	}
}

// machine is fakes seen as the GPUs of one machine: each path has its own
// index and the fakes' key, reaches the others' memory where reach says so,
// and maps their memory as a view of the same bytes at addresses of its own.
type machine struct {
	gpus  []*otherGPU
	reach bool
}

// otherGPU is a fake as GPU index of a machine.
type otherGPU struct {
	*fake
	m     *machine
	index int
	maps  int // the path's MapPeer calls
}

func newMachine(n int, reach bool) *machine {
	m := &machine{reach: reach}
	for i := range n {
		m.gpus = append(m.gpus, &otherGPU{fake: newFake(), m: m, index: i})
	}
	return m
}

func (o *otherGPU) Index() int                 { return o.index }
func (o *otherGPU) Reaches(i int) bool         { return i == o.index || o.m.reach }
func (o *otherGPU) SharesSpace(other any) bool { return other == o }

// MapPeer maps memory of another fake of the machine: a memory of this
// fake's over the other's bytes.
func (o *otherGPU) MapPeer(m *nvidia.Memory) (*nvidia.Memory, error) {
	var host uintptr
	for _, g := range o.m.gpus {
		if g == o {
			continue
		}
		g.mu.Lock()
		if fm := g.mems[m.Handle]; fm != nil && fm.m == m {
			host = fm.host
		}
		g.mu.Unlock()
	}
	if host == 0 {
		return nil, fmt.Errorf("fake: map_peer of memory of no GPU of the machine: %w", device.ErrNever)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.maps++
	o.handle++
	v := &nvidia.Memory{Kind: m.Kind, Borrowed: true, Size: m.Size, Handle: o.handle, Address: o.devNext, Host: m.Host}
	o.devNext += uint64((m.Size+4095)&^4095) + 1<<20
	o.mems[o.handle] = &fakeMem{m: v, host: host}
	return v, nil
}

// opener is an opener of devices on GPU o.
func (o *otherGPU) opener(c Config) device.Opener {
	return device.Opener{Name: fmt.Sprintf("NV-fake-gpu%d-%p", o.index, o), Make: func(w *uint64) (device.Driver, error) {
		d, err := makeDevice(w, o, fakeRM{o.fake}, c)
		if err != nil {
			return nil, err
		}
		return d, nil
	}}
}

// raw opens a device on GPU o for driving by hand.
func (o *otherGPU) raw(t *testing.T) *raw {
	t.Helper()
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	// The fake runs no kernel: copies within Device memory go to the copy
	// engine.
	d, err := makeDevice(w, o, fakeRM{o.fake}, Config{CopyKernels: -1})
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	r := &raw{t: t, f: o.fake, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	return r
}

// TestPeerTwoGPUsFake runs the GPU tests of peer access across two GPUs on
// two fakes of one machine: by hand, and through rig with B's work held by
// a pause of its fake.
func TestPeerTwoGPUsFake(t *testing.T) {
	t.Run("raw", func(t *testing.T) {
		m := newMachine(2, true)
		a, b := m.gpus[0].raw(t), m.gpus[1].raw(t)
		peerRaw(t, a, b)
		if m.gpus[0].maps != 2 || m.gpus[1].maps != 0 {
			t.Errorf("the paths mapped %d and %d memories", m.gpus[0].maps, m.gpus[1].maps)
		}
	})
	t.Run("rig", func(t *testing.T) {
		m := newMachine(2, true)
		open := func(g *otherGPU) *rig.Device {
			d, err := rig.Open(bg, g.opener(Config{CopyKernels: -1}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeDone(t, d) })
			return d
		}
		b := open(m.gpus[1]) // B closes last: A's views of B's buffers go first
		a := open(m.gpus[0])
		peerRig(t, a, b, func(t *testing.T, d *rig.Device) peerGate {
			f := m.gpus[0].fake
			if d == b {
				f = m.gpus[1].fake
			}
			f.pause()
			var once sync.Once
			return peerGate{release: func() { once.Do(f.resume) }}
		})
	})
}

// TestPeerOtherGPURefusals: Mapped memory of another GPU is refused, and
// Device memory where the GPU does not reach the other's; Pinned memory is
// mapped whatever the link.
func TestPeerOtherGPURefusals(t *testing.T) {
	m := newMachine(2, false)
	a, b := m.gpus[0].raw(t), m.gpus[1].raw(t)
	if a.d.Peer(b.d) || b.d.Peer(a.d) {
		t.Error("GPUs that do not reach each other are peers")
	}
	x := b.alloc(device.DeviceMemory, 4096)
	if _, err := a.d.MapPeer(b.d, x); !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "does not reach") {
		t.Errorf("Device memory of a GPU out of reach: %v", err)
	}
	m.reach = true
	y := b.alloc(device.MappedMemory, 4096)
	if _, err := a.d.MapPeer(b.d, y); !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "not built") {
		t.Errorf("Mapped memory of another GPU: %v", err)
	}
	if m.gpus[0].maps != 0 {
		t.Errorf("the path mapped %d memories the device refused", m.gpus[0].maps)
	}
	m.reach = false
	z := b.alloc(device.PinnedMemory, 4096)
	v, err := a.d.MapPeer(b.d, z)
	if err != nil {
		t.Fatalf("Pinned memory of a GPU out of reach: %v", err)
	}
	live := m.gpus[0].live()
	if err := a.d.Free(v); err != nil || m.gpus[0].live() != live-1 {
		t.Errorf("the view's free: %v; %d memories, then %d", err, live, m.gpus[0].live())
	}
	b.d.stopped.Store(true)
	defer b.d.stopped.Store(false)
	if _, err := a.d.MapPeer(b.d, z); !errors.Is(err, device.ErrNever) {
		t.Errorf("memory of a stopped device: %v", err)
	}
}
