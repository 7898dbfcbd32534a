package cudadev

import (
	"encoding/binary"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/internal/testutil"
	"github.com/rig-go/rig/internal/timeline"
	rig "github.com/rig-go/rig/runtime"
)

// Helpers of the GPU tests, which run where RIG_GPU=1 on a machine with an
// NVIDIA GPU of compute capability 8.0 or later.

// kernels is the test image for arch: its cubin where one is built, its
// PTX otherwise.
func kernels(_ testing.TB, arch string) []byte { return testkernels.Image(arch) }

// openRig opens GPU 0 through rig and closes it at the test's end, waiting
// until it gave everything back.
func openRig(t testing.TB, c Config) *rig.Device {
	t.Helper()
	return openRigWith(t, Open(0, c))
}

// openRigWith is openRig through the opener op.
func openRigWith(t testing.TB, op device.Opener) *rig.Device {
	t.Helper()
	testutil.NeedGPU(t)
	return testutil.Open(t, op)
}

// rigEmpty opens GPU 0 through rig with c, with the driver wrap makes of
// the device where wrap is not nil, and resolves empty; it returns the
// device beside the rig device as well.
func rigEmpty(b *testing.B, c Config, wrap func(*gpu) device.Driver) (*rig.Device, *gpu, *rig.Function) {
	var d *gpu
	op := Open(0, c)
	mk := op.Make
	op.Make = func(w *uint64) (device.Driver, error) {
		drv, err := mk(w)
		if err != nil {
			return nil, err
		}
		d = drv.(*gpu)
		if wrap != nil {
			return wrap(d), nil
		}
		return drv, nil
	}
	dev := openRigWith(b, op)
	img, err := dev.LoadImage(kernels(b, dev.Arch()))
	if err != nil {
		b.Fatal(err)
	}
	return dev, d, resolve(b, img, "empty")
}

// Short names for testutil's must-helpers, which the tests call often.
var (
	needGPU    = testutil.NeedGPU
	resolve    = testutil.Resolve
	alloc      = testutil.Alloc
	submission = testutil.Submission
)

// word64 is the 64-bit word at b's byte off, for atomic access.
func word64(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// raw drives a device without rig's core: Room, Submit and Commit by hand,
// for what rig does not expose (globals, driver-level timings).
type raw struct {
	t      testing.TB
	d      *gpu
	slot   int
	v      uint64
	regs   []device.Region
	imgs   []device.Image
	closed bool
}

func openRaw(t testing.TB, c Config) *raw {
	t.Helper()
	needGPU(t)
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	drv, err := Open(0, c).Make(w)
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	r := &raw{t: t, d: drv.(*gpu), slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	return r
}

func (r *raw) close() {
	if r.closed {
		return
	}
	r.closed = true
	d := r.d
	_ = d.Stop("")
	end := time.Now().Add(20 * time.Second)
	for !device.AtLeast(d.Signaled(), r.v) {
		if time.Now().After(end) {
			r.t.Errorf("the word reads %d, not %d, 20 s after the stop", d.Signaled(), r.v)
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	for _, i := range r.imgs {
		_ = d.Unload(i)
	}
	for _, g := range r.regs {
		_ = d.Free(g)
	}
	if d.own != nil {
		_ = d.Free(d.own)
	}
	timeline.Give(r.slot)
}

func (r *raw) alloc(m device.Memory, n int) *region {
	r.t.Helper()
	g, err := r.d.Alloc(m, n)
	if err != nil {
		r.t.Fatal(err)
	}
	r.regs = append(r.regs, g)
	return g.(*region)
}

func (r *raw) entry(name string) *device.Entry {
	r.t.Helper()
	if len(r.imgs) == 0 {
		code, err := r.d.Image(kernels(r.t, r.d.facts.Arch))
		if err != nil {
			r.t.Fatal(err)
		}
		r.imgs = append(r.imgs, code.Loaded)
	}
	e, err := r.d.Entry(r.imgs[0], name)
	if err != nil {
		r.t.Fatal(err)
	}
	return e
}

// launch is a launch part of e over groups and threads with params.
func launch(e *device.Entry, groups, threads uint32, params []byte) device.Part {
	if len(params) < e.Params {
		params = append(params, make([]byte, e.Params-len(params))...)
	}
	return device.Part{Kind: device.Launch, Entry: e, Groups: [3]uint32{groups, 1, 1}, Threads: [3]uint32{threads, 1, 1}, Params: params}
}

// u64s is the little-endian bytes of vs.
func u64s(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

func (r *raw) submit(waits []device.Wait, parts ...device.Part) uint64 {
	r.t.Helper()
	s := device.Submission{Value: r.v + 1, Waits: waits, Parts: parts}
	if a := r.d.Room(&s); a.Kind != device.RoomOK {
		r.t.Fatalf("room: %+v", a)
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind == device.Failed {
		r.t.Fatalf("submit: %s", a.Reason)
	}
	return r.v
}

// next submits s as the next value through Room and Submit, their
// returns unread, as the benchmarks time it.
func (r *raw) next(s *device.Submission) {
	r.v++
	s.Value = r.v
	r.d.Room(s)
	r.d.Submit(s)
}

// wait commits v and waits for the word to reach it, sleeping as rig's
// supervisor does.
func (r *raw) wait(v uint64) {
	r.t.Helper()
	if a := r.d.Commit(v); a.Kind == device.Failed {
		r.t.Fatalf("commit: %s", a.Reason)
	}
	end := time.Now().Add(20 * time.Second)
	for {
		cur := r.d.Signaled()
		if device.AtLeast(cur, v) {
			return
		}
		if time.Now().After(end) {
			r.t.Fatalf("the word reads %d, not %d, after 20 s", cur, v)
		}
		if err := r.d.Sleep(cur, 10*time.Millisecond); err != nil {
			r.t.Fatal(err)
		}
	}
}

func closeFD(fd int) error { return syscall.Close(fd) }

// bytes is a Pinned region's bytes.
func (g *region) bytes() []byte { return unsafe.Slice((*byte)(ptr(g.host)), int(g.size)) }
