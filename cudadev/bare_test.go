package cudadev

import (
	"encoding/binary"
	"math"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPUBareCalls checks the hot path's calls without a current context
// (doc.go, Threads and contexts): the open finds that the streams carry
// the context; a call that needs a current context, made bare, enters it
// and runs; and submissions of copies and a launch on both streams, from a
// thread with no context current and from one with another context
// current, run right and leave the thread's context as it was.
func TestGPUBareCalls(t *testing.T) {
	r := openRaw(t, Config{})
	tb := r.d.t
	t.Logf("CUDA %s: stream calls without a current context: %v", versionString(r.d.rec.Version), r.d.bare.Load())
	if r.d.rec.Version >= 13000 && !r.d.bare.Load() {
		t.Error("CUDA 13 runs stream calls without a current context, but the open found otherwise")
	}
	lockThread()
	defer unlockThread()
	var prev uintptr
	tb.call(tb.cuCtxGetCurrent, uintptr(unsafe.Pointer(&prev)))
	defer tb.call(tb.cuCtxSetCurrent, prev)
	current := func() uintptr {
		var c uintptr
		tb.call(tb.cuCtxGetCurrent, uintptr(unsafe.Pointer(&c)))
		return c
	}

	// cuEventCreate needs the context current: made bare, it is refused,
	// enters the context and runs again.
	tb.call(tb.cuCtxSetCurrent, 0)
	f := getFrame()
	b := bareCall{t: tb, ctx: r.d.ctx}
	f.bare = &b
	f.out[0] = 0
	res := f.c2(tb.cuEventCreate, f.outp(0), eventDisableTime)
	entered := b.entered
	refused := f.leave()
	if res != 0 || f.out[0] == 0 || !entered || !refused {
		t.Errorf("a bare cuEventCreate: %v, event %#x, entered %v, refused %v", tb.text(res), f.out[0], entered, refused)
	}
	if c := current(); c != 0 {
		t.Errorf("the bare call left context %#x current, not none", c)
	}
	if f.out[0] != 0 {
		tb.call(tb.cuCtxPushCurrent, r.d.ctx)
		f.c1(tb.cuEventDestroy, uintptr(f.out[0]))
		tb.call(tb.cuCtxPopCurrent, uintptr(unsafe.Pointer(&f.cur)))
	}
	putFrame(f)
	r.close()

	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	twice := resolve(t, img, "twice")
	const n = 1 << 16
	x := alloc(t, dev, device.DeviceMemory, 4*n)
	h := alloc(t, dev, device.PinnedMemory, 4*n)
	s := submission(t, dev,
		rig.Copy(0, 0, 1, 0, 4*n).On(1),
		rig.Launch(twice, 8, rig.ReadWrite(1, 0)).After(0),
		rig.Copy(1, 0, 0, 0, 4*n).On(1).After(1),
	)
	run := func(what string, want uintptr) {
		hb := h.Bytes()
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(hb[4*i:], math.Float32bits(float32(i)))
		}
		for k := 0; k < 3; k++ {
			rn := s.Take()
			rn.Groups(1, n/256, 1, 1)
			rn.Threads(1, 256, 1, 1)
			p, err := rn.Submit(bg, h, x)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if err := p.Wait(bg); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		for i := 0; i < n; i++ {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:])); got != 8*float32(i) {
				t.Fatalf("%s: x[%d] = %v, want %v", what, i, got, 8*float32(i))
			}
		}
		if c := current(); c != want {
			t.Errorf("%s: the thread's context is %#x after the submissions, not %#x", what, c, want)
		}
	}
	tb.call(tb.cuCtxSetCurrent, 0)
	run("no context current", 0)

	create, destroy := tb.lookup("cuCtxCreate_v4"), tb.lookup("cuCtxDestroy_v2")
	if create == 0 || destroy == 0 {
		t.Log("no cuCtxCreate_v4: the run with another context current is skipped")
		return
	}
	rec, _ := rig.Capability(dev, cuda.Key)
	var other uintptr
	if res := tb.call(create, uintptr(unsafe.Pointer(&other)), 0, 0, uintptr(rec.Ordinal)); res != 0 {
		t.Fatalf("cuCtxCreate_v4: %v", tb.text(res))
	}
	defer tb.call(destroy, other)
	if c := current(); c != other {
		t.Fatalf("cuCtxCreate_v4 left %#x current, not the new context %#x", c, other)
	}
	run("another context current", other)
}
