package nvdev

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/nvidia"
	rig "github.com/rig-go/rig/runtime"
)

// Peer access across two GPUs: device A on GPU 0 uses memory of device B
// on GPU 1, by hand (TestGPUPeerTwoGPUsRaw) and through rig
// (TestGPUPeerTwoGPUsRig).
// TestPeerTwoGPUsFake runs both bodies on two fakes of one machine.

// needTwoGPUs skips a test unless RIG_GPU=1 and the machine has two
// NVIDIA GPUs' files (/dev/nvidia0, /dev/nvidia1, ...).
func needTwoGPUs(t testing.TB) {
	t.Helper()
	needGPU(t)
	files, _ := filepath.Glob("/dev/nvidia[0-9]*")
	if len(files) < 2 {
		t.Skipf("the machine has %d NVIDIA GPU file(s) %v: needs two GPUs", len(files), files)
	}
}

// openGPURawAt opens GPU i for driving by hand.
func openGPURawAt(t *testing.T, i int, c Config) *raw {
	t.Helper()
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	drv, err := Open(i, c).Make(w)
	if err != nil {
		timeline.Give(slot)
		t.Fatalf("make on GPU %d: %v", i, err)
	}
	d := drv.(*gpu)
	t.Logf("GPU %d: made in %v at %s, word 0x%x, copy engine on the compute channel %v", i, time.Since(t0), d.p.Bus(), d.wordGPU, d.copyOnCompute)
	r := &raw{t: t, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	return r
}

// mapPeer maps m, memory of b, for a, and frees the view at the test's
// end, before the closes of devices opened earlier.
func mapPeer(t *testing.T, a, b *raw, m *nvidia.Memory) *nvidia.Memory {
	t.Helper()
	t0 := time.Now()
	r, err := a.d.MapPeer(b.d, m)
	if err != nil {
		t.Fatalf("map_peer for A of B's %d bytes of %v memory at 0x%x: %v", m.Size, m.Kind, m.Address, err)
	}
	v := r.(*nvidia.Memory)
	t.Logf("map_peer for A of B's %d bytes of %v memory at 0x%x in %v: a view at 0x%x", m.Size, m.Kind, m.Address, time.Since(t0), v.Address)
	t.Cleanup(func() {
		if err := a.d.Free(v); err != nil {
			t.Errorf("free of the view at 0x%x: %v", v.Address, err)
		}
	})
	return v
}

// peerRaw runs, by hand, device A's copies into and out of device B's
// Device memory through A's view of it, on both of A's queues, with B's
// own copies and fills checking and setting the bytes; a copy at odd
// offsets; the refusal of B's Mapped memory; and a fill of B's Pinned
// memory through A's view.
func peerRaw(t *testing.T, a, b *raw) {
	t.Logf("A peer of B: %v; B peer of A: %v", a.d.Peer(b.d), b.d.Peer(a.d))
	if !a.d.Peer(b.d) || !b.d.Peer(a.d) {
		t.Fatal("the devices are not peers: their paths do not reach each other's GPU")
	}
	const n = 3<<20 + 12
	x := b.alloc(device.DeviceMemory, n)
	vx := mapPeer(t, a, b, x)
	src, dst, back := a.alloc(device.PinnedMemory, n), b.alloc(device.PinnedMemory, n), a.alloc(device.PinnedMemory, n)
	pattern(hostOf(src), 21)
	var fill byte
	name := map[int]string{qCopy: "COPY:0", qCompute: "COMPUTE:0"}
	for _, q := range []int{qCopy, qCompute} {
		invert(hostOf(dst), hostOf(src))
		t0 := time.Now()
		a.wait(a.submit(nil, copyPart(q, src, vx, 0, 0, n)))
		t.Logf("%s: A copied %d bytes into B's Device memory through the view in %v", name[q], n, time.Since(t0))
		b.wait(b.submit(nil, copyPart(qCopy, x, dst, 0, 0, n)))
		if i := firstDiff(hostOf(dst), hostOf(src)); i >= 0 {
			t.Fatalf("%s: B's memory differs from what A wrote at byte %d: %s, want %s", name[q], i, around(hostOf(dst), i), around(hostOf(src), i))
		}
		t.Logf("%s: B's own copy of its memory holds A's %d bytes", name[q], n)
		fill = byte(0x40 + q)
		b.wait(b.submit(nil, fillPart(qCopy, x, 0, n, fill)))
		clear(hostOf(back))
		t0 = time.Now()
		a.wait(a.submit(nil, copyPart(q, vx, back, 0, 0, n)))
		if i := notByte(hostOf(back), fill); i >= 0 {
			t.Fatalf("%s: A read %s of B's fill of 0x%x through the view", name[q], around(hostOf(back), i), fill)
		}
		t.Logf("%s: A read B's fill of %d bytes through the view in %v", name[q], n, time.Since(t0))
	}
	// 4099 bytes from byte 1 of A's memory to byte 2 MiB - 3 of B's.
	const at, m = 2<<20 - 3, 4099
	a.wait(a.submit(nil, copyPart(qCopy, src, vx, 1, at, m)))
	b.wait(b.submit(nil, copyPart(qCopy, x, dst, 0, 0, n)))
	d := hostOf(dst)
	if i := firstDiff(d[at:at+m], hostOf(src)[1:1+m]); i >= 0 || d[at-1] != fill || d[at+m] != fill {
		t.Fatalf("A's copy of %d bytes to byte %d of B's memory: differs at %d; around it %s and %s", m, at, i, around(d, at-1), around(d, at+m))
	}
	t.Logf("A's copy of %d bytes at odd offsets into B's memory is right, the bytes around it kept", m)

	y := b.alloc(device.MappedMemory, 4096)
	if _, err := a.d.MapPeer(b.d, y); !errors.Is(err, device.ErrNever) {
		t.Errorf("map_peer of B's Mapped memory: %v, want a refusal", err)
	} else {
		t.Logf("map_peer of B's Mapped memory: %v", err)
	}
	z := b.alloc(device.PinnedMemory, 4096)
	vz := mapPeer(t, a, b, z)
	a.wait(a.submit(nil, fillPart(qCopy, vz, 0, 4096, 0x33)))
	if i := notByte(hostOf(z), 0x33); i >= 0 {
		t.Fatalf("A's fill of B's Pinned memory through the view: %s", around(hostOf(z), i))
	}
	t.Log("A filled B's Pinned memory through the view")
}

// TestGPUPeerTwoGPUsRaw opens devices A on GPU 0 and B on GPU 1 by hand
// and runs peerRaw: A's copy engine reads and writes B's memory through
// map_peer. Run it with RIG_GPU=1 on a machine of two GPUs.
func TestGPUPeerTwoGPUsRaw(t *testing.T) {
	needTwoGPUs(t)
	a := openGPURawAt(t, 0, Config{Hang: 30 * time.Second})
	b := openGPURawAt(t, 1, Config{Hang: 30 * time.Second})
	peerRaw(t, a, b)
}

// peerGate holds a device's next work until release: parts to put first
// in its submission, with their buffers first among its buffers. release
// may be called more than once.
type peerGate struct {
	parts   []rig.Part
	bufs    []*rig.Buffer
	release func()
}

// submitWithin submits parts with bufs on d and returns the point, or
// fails the test where the submission does not return within limit (rig
// waited on the host), after calling release.
func submitWithin(t *testing.T, d *rig.Device, limit time.Duration, release func(), parts []rig.Part, bufs ...*rig.Buffer) rig.Point {
	t.Helper()
	s, err := rig.NewSubmission(d, parts...)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		p   rig.Point
		err error
	}
	ch := make(chan answer, 1)
	t0 := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		p, err := s.Take().Submit(ctx, bufs...)
		ch <- answer{p, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s's submission: %v", d.Name(), a.err)
		}
		t.Logf("%s's submission returned in %v: value %d", d.Name(), time.Since(t0), a.p.Value())
		return a.p
	case <-time.After(limit):
		release()
		a := <-ch
		t.Fatalf("%s's submission returned only after the other device's work was released (%v, %v): rig waited on the host", d.Name(), time.Since(t0), a.err)
	}
	return rig.Point{}
}

// peerRig runs, through rig, work of A that uses B's buffers and work of B
// that uses A's writes, each held behind the other device's work, which
// gate holds until the test releases it: A's copy of B's Device buffer
// after B's held copy into it, then B's copy of its Device buffer after
// A's held copy into it through A's view. Each submission returns at once
// (rig waits on the GPU for the other device's word), runs only after the
// release, and moves the right bytes.
func peerRig(t *testing.T, a, b *rig.Device, gate func(t *testing.T, d *rig.Device) peerGate) {
	t.Logf("A %s at %s, B %s at %s; A's word %p, B's word %p; GPU-side waits A %v, B %v", a.Name(), a.Facts().Bus, b.Name(), b.Facts().Bus,
		a.Word(), b.Word(), a.Facts().Waits.Has(device.WaitStores), b.Facts().Waits.Has(device.WaitStores))
	if !a.Facts().Waits.Has(device.WaitStores) || !b.Facts().Waits.Has(device.WaitStores) || a.Word() == nil || b.Word() == nil {
		t.Fatal("the devices cannot wait on each other's words on the GPU")
	}
	const n = 4<<20 + 12
	ctx, cancel := context.WithTimeout(bg, 60*time.Second)
	defer cancel()
	// run has first's work held by its gate, copying from into its buffer
	// to, then second copy to into its own buffer out; it checks that out
	// holds from's bytes.
	run := func(what string, first, second *rig.Device, from, to, out *rig.Buffer) {
		t.Helper()
		invert(out.Bytes(), from.Bytes())
		g := gate(t, first)
		defer g.release()
		k := len(g.bufs)
		s, err := rig.NewSubmission(first, append(slices.Clone(g.parts), rig.Copy(k, 0, k+1, 0, n).On(device.Compute))...)
		if err != nil {
			t.Fatal(err)
		}
		p1, err := s.Take().Submit(ctx, append(slices.Clone(g.bufs), from, to)...)
		if err != nil {
			t.Fatalf("%s: %s's held copy: %v", what, first.Name(), err)
		}
		time.Sleep(50 * time.Millisecond)
		if p1.Reached() {
			t.Fatalf("%s: %s's copy ran before its gate opened", what, first.Name())
		}
		p2 := submitWithin(t, second, 2*time.Second, g.release, []rig.Part{rig.Copy(0, 0, 1, 0, n)}, to, out)
		time.Sleep(200 * time.Millisecond)
		r1, r2 := p1.Reached(), p2.Reached()
		unchanged := firstDiff(out.Bytes()[:4096], from.Bytes()[:4096]) == 0
		t.Logf("%s: 250 ms into the hold: %s's point reached %v, %s's %v; %s's buffer unchanged %v", what, first.Name(), r1, second.Name(), r2, second.Name(), unchanged)
		if r1 || r2 || !unchanged {
			t.Fatalf("%s: work ran before the gate opened", what)
		}
		g.release()
		t0 := time.Now()
		if err := p2.Wait(ctx); err != nil {
			t.Fatalf("%s: %s's point: %+v", what, second.Name(), err)
		}
		first1 := p1.Reached()
		t.Logf("%s: %s's point reached %v after the release; %s's point reached then: %v", what, second.Name(), time.Since(t0), first.Name(), first1)
		if !first1 {
			t.Errorf("%s: %s's copy completed before %s's", what, second.Name(), first.Name())
		}
		if err := p1.Wait(ctx); err != nil {
			t.Fatalf("%s: %s's point: %+v", what, first.Name(), err)
		}
		if i := firstDiff(out.Bytes(), from.Bytes()); i >= 0 {
			t.Fatalf("%s: %s's buffer differs at byte %d: %s, want %s", what, second.Name(), i, around(out.Bytes(), i), around(from.Bytes(), i))
		}
		t.Logf("%s: %s's buffer holds the %d bytes", what, second.Name(), n)
	}

	srcB, x, dstA := allocBuf(t, b, device.PinnedMemory, n), allocBuf(t, b, device.DeviceMemory, n), allocBuf(t, a, device.PinnedMemory, n)
	pattern(srcB.Bytes(), 31)
	run("A reads B's memory after B's work", b, a, srcB, x, dstA)

	srcA, y, dstB := allocBuf(t, a, device.PinnedMemory, n), allocBuf(t, b, device.DeviceMemory, n), allocBuf(t, b, device.PinnedMemory, n)
	pattern(srcA.Bytes(), 32)
	run("A writes B's memory, then B reads it", a, b, srcA, y, dstB)
}

// spinGate holds d's work behind the kernel spin_until on a flag of d's
// Pinned memory, which release sets.
func spinGate(t *testing.T, d *rig.Device) peerGate {
	spin := resolve(t, d, "spin_until")[0]
	flag := allocBuf(t, d, device.PinnedMemory, 8)
	word := (*uint64)(unsafe.Pointer(&flag.Bytes()[0]))
	atomic.StoreUint64(word, 0)
	var once sync.Once
	return peerGate{
		parts:   []rig.Part{rig.Launch(spin, 8, rig.Read(0, 0))},
		bufs:    []*rig.Buffer{flag},
		release: func() { once.Do(func() { atomic.StoreUint64(word, 1) }) },
	}
}

// TestGPUPeerTwoGPUsRig opens devices A (nvdev.GPU(0)) and B (nvdev.GPU(1))
// through rig and runs peerRig: rig maps B's buffers for A (map_peer), and
// each device's copy waits on the GPU for the other device's held work,
// a kernel spinning on a flag the host sets 250 ms later. Run it with
// RIG_GPU=1 on a machine of two GPUs.
func TestGPUPeerTwoGPUsRig(t *testing.T) {
	needTwoGPUs(t)
	open := func(i int) *rig.Device {
		t0 := time.Now()
		d, err := rig.Open(bg, Open(i, Config{Hang: 30 * time.Second}))
		if err != nil {
			t.Fatalf("open GPU %d: %v", i, err)
		}
		t.Logf("opened %s in %v", d.Name(), time.Since(t0))
		t.Cleanup(func() { closeDone(t, d) })
		return d
	}
	b := open(1) // B closes last: A's views of B's buffers go first
	a := open(0)
	peerRig(t, a, b, spinGate)
}
