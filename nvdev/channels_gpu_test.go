package nvdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
)

// TestGPUOwnRelease chains 100 values of twice on one float, each
// released by its launch: a read-modify-write of one thread, so that a
// value that overlapped the one before would lose a doubling.
func TestGPUOwnRelease(t *testing.T) {
	r := openGPURaw(t, Config{})
	e := r.entry("twice")
	x := r.alloc(device.PinnedMemory, 4096)
	putF32(hostOf(x), 0, 1)
	t0 := time.Now()
	for range 100 {
		r.submit(nil, launch(e, 1, 1, u64s(x.Address)))
	}
	r.wait(r.v)
	if got := f32(hostOf(x), 0); got != float32(math.Pow(2, 100)) {
		t.Fatalf("x = %v after 100 doublings, want 2^100", got)
	}
	t.Logf("100 chained values of twice, each released by its launch, in %v", time.Since(t0))
}

// TestGPUStamps runs timed values and settles them.
func TestGPUStamps(t *testing.T) {
	r := openGPURaw(t, Config{})
	e := r.entry("empty")
	m := r.alloc(device.PinnedMemory, 4096)
	t0 := device.Now()
	var vs []uint64
	for i := range 300 {
		var parts []device.Part
		switch i % 3 {
		case 0:
			parts = []device.Part{launch(e, 1, 32, nil)}
		case 1:
			parts = []device.Part{fillPart(qCopy, m, 0, 8, byte(i))}
		case 2:
			parts = []device.Part{fillPart(qCopy, m, 0, 8, byte(i)), launch(e, 1, 32, nil)}
		}
		vs = append(vs, r.submitTimed(true, nil, parts...))
	}
	r.wait(r.v)
	t1 := device.Now()
	st, err := r.d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != len(vs) {
		t.Fatalf("%d stamps, want %d", len(st), len(vs))
	}
	var span [3]int64
	for i, s := range st {
		if s.Value != vs[i] || s.End < s.Start || s.Start < t0-20_000 || s.End > t1+20_000 {
			t.Errorf("stamp %d: %+v outside %d to %d", i, s, t0, t1)
		}
		span[i%3] += s.End - s.Start
	}
	t.Logf("stamps of 300 timed values within %d ns of the host's clock; mean spans: launch %d ns, fill %d ns, fill+launch %d ns; first %+v",
		20_000, span[0]/100, span[1]/100, span[2]/100, st[0])
}

// TestGPUGrow runs a value of 5,000 launches (the launch ring grows) and
// one of 150,000 fills (the copy channel's segment ring grows).
func TestGPUGrow(t *testing.T) {
	r := openGPURaw(t, Config{})
	e := r.entry("count")
	out := r.alloc(device.PinnedMemory, 4096)
	parts := make([]device.Part, 5000)
	for i := range parts {
		parts[i] = launch(e, 1, 1, u64s(out.Address))
	}
	t0 := time.Now()
	r.wait(r.submit(nil, parts...))
	before := binary.LittleEndian.Uint64(hostOf(out))
	r.wait(r.submit(nil, launch(e, 1, 1, u64s(out.Address))))
	after := binary.LittleEndian.Uint64(hostOf(out))
	t.Logf("5,000 launches in one value in %v; launch ring of %d bytes; counter %d then %d", time.Since(t0), r.d.launchMem.Size, before, after)
	if r.d.launchMem == r.d.launch0 || after != before+1 {
		t.Errorf("the launch ring did not grow, or the count is off")
	}
	m := r.alloc(device.PinnedMemory, 1<<20)
	fills := make([]device.Part, 150000)
	for i := range fills {
		fills[i] = fillPart(qCopy, m, uint64(i%(1<<20)), 1, byte(i))
	}
	t0 = time.Now()
	r.wait(r.submit(nil, fills...))
	t.Logf("150,000 fills in one value in %v; the copy channel's segment ring of %d bytes", time.Since(t0), 4*len(r.d.ch[qCopy].seg))
	if b := hostOf(m); b[149999] != byte(149999%256) || b[1] != 1 {
		t.Errorf("fills: %d %d", b[1], b[149999])
	}
	noCUDA(t)
}

// TestGPUCopyKernel copies 64 MiB within Device memory by the driver's
// kernel and by the copy engine, checks both, and times them.
func TestGPUCopyKernel(t *testing.T) {
	r := openGPURaw(t, Config{CopyKernels: 1})
	const n = 64 << 20
	h := r.alloc(device.PinnedMemory, n)
	a, b := r.alloc(device.DeviceMemory, n), r.alloc(device.DeviceMemory, n)
	src := hostOf(h)
	for i := range src {
		src[i] = byte(i*7 + i>>16)
	}
	r.wait(r.submit(nil, copyPart(qCopy, h, a, 0, 0, n)))
	ks := r.d.copyK
	defer func() { r.d.copyK = ks }()
	for _, k := range []struct {
		name string
		ks   *copyKernels
	}{{"kernel", ks}, {"copy engine", nil}} {
		r.d.copyK = k.ks
		p := copyPart(qCopy, a, b, 0, 0, n)
		r.wait(r.submit(nil, fillPart(qCopy, b, 0, n, 0)))
		t0 := time.Now()
		for range 20 {
			r.submit(nil, p)
		}
		r.wait(r.v)
		el := time.Since(t0) / 20
		clear(src)
		r.wait(r.submit(nil, copyPart(qCopy, b, h, 0, 0, n)))
		for i := range src {
			if src[i] != byte(i*7+i>>16) {
				t.Fatalf("%s: byte %d is %d", k.name, i, src[i])
			}
		}
		t.Logf("64 MiB within Device memory by the %s: %v a copy, %.0f GB/s read+write", k.name, el, 2*float64(n)/el.Seconds()/1e9)
	}
}

// TestGPUTwoDevices opens two devices on GPU 0, faults one, and runs
// work on the other.
func TestGPUTwoDevices(t *testing.T) {
	a := openGPURaw(t, Config{})
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	drv, err := Open(0, Config{}).Make(w)
	if err != nil {
		timeline.Give(slot)
		t.Skipf("a second device on GPU 0: %v", err)
	}
	b := &raw{t: t, d: drv.(*gpu), slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(b.close)
	fe := a.entry("fault_illegal_address")
	p := a.alloc(device.PinnedMemory, 4096)
	a.submit(nil, launch(fe, 1, 1, u64s(p.Address)))
	t0 := time.Now()
	var ferr error
	for time.Since(t0) < 10*time.Second {
		if ferr = a.d.Sleep(a.d.Signaled(), 10*time.Millisecond); ferr != nil {
			break
		}
	}
	var f *device.Fault
	if !errors.As(ferr, &f) {
		t.Fatalf("the faulting device answered %v", ferr)
	}
	t.Logf("device A lost after %v: %s", time.Since(t0), f.Why)
	e := b.entry("count")
	out := b.alloc(device.PinnedMemory, 4096)
	m := b.alloc(device.PinnedMemory, 4096)
	for range 10 {
		b.submit(nil, launch(e, 1, 32, u64s(out.Address)), fillPart(qCopy, m, 0, 16, 5))
	}
	b.wait(b.v)
	if err := b.d.Sleep(b.d.Signaled(), 0); err != nil {
		t.Fatalf("device B after A's fault: %v", err)
	}
	if hostOf(m)[15] != 5 {
		t.Error("device B's fill did not run")
	}
	t.Logf("device B ran 10 values after device A's fault")
}

func init() {
	// NVDEV_RELEASE=i makes devices use releaseForms[i] (docs/nvdev.md).
	if s := os.Getenv("NVDEV_RELEASE"); s != "" {
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(releaseForms) {
			ownRelease = releaseForms[i]
		}
	}
}

// TestGPUReleaseForms tries each form of the descriptor's release on a
// device of its own: 20 chained values of twice on one float, each
// released by its launch. It logs "release form i works" for each form
// that ran them right, and the fault of each other; it fails only where
// the form devices use fails. (On the H200 the one-word form of a 64-bit
// payload raised ROBUST_CHANNEL_GR_EXCEPTION; the others ran.)
func TestGPUReleaseForms(t *testing.T) {
	needGPU(t)
	keep := ownRelease
	defer func() { ownRelease = keep }()
	for i, f := range releaseForms {
		if !f.on {
			continue
		}
		ownRelease = f
		var why string
		t.Run(strings.ReplaceAll(f.name, " ", "_"), func(t *testing.T) {
			r := openGPURaw(t, Config{})
			e := r.entry("twice")
			x := r.alloc(device.PinnedMemory, 4096)
			putF32(hostOf(x), 0, 1)
			for range 20 {
				r.submit(nil, launch(e, 1, 1, u64s(x.Address)))
			}
			t0 := time.Now()
			for !device.AtLeast(r.d.Signaled(), r.v) {
				if err := r.d.Sleep(r.d.Signaled(), time.Millisecond); err != nil {
					why = err.Error()
					return
				}
				if time.Since(t0) > 2*time.Second {
					why = fmt.Sprintf("the word reads %d, not %d", r.d.Signaled(), r.v)
					return
				}
			}
			if got := f32(hostOf(x), 0); got != 1<<20 {
				why = fmt.Sprintf("x = %v, want 2^20", got)
			}
		})
		switch {
		case why == "":
			t.Logf("release form %d works: %s", i, f.name)
		case f == keep:
			t.Errorf("release form %d (%s), the devices' own: %s", i, f.name, why)
		default:
			t.Logf("release form %d (%s) fails: %s", i, f.name, why)
		}
	}
}
