package nvdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testutil"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
	rig "github.com/rig-go/rig/runtime"
)

// GPU tests: they run where RIG_GPU=1, on NVIDIA GPU 0, through NVIDIA's
// kernel driver, and check that libcuda is never loaded.

// needGPU skips the test unless RIG_GPU=1.
var needGPU = testutil.NeedGPU

// noCUDA fails the test if the process mapped libcuda.
func noCUDA(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "libcuda") {
		t.Fatal("libcuda is mapped into the process")
	}
}

// openGPURaw opens GPU 0 for driving by hand.
func openGPURaw(t testing.TB, c Config) *raw {
	t.Helper()
	needGPU(t)
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	drv, err := Open(0, gpuConfig(c)).Make(w)
	if err != nil {
		timeline.Give(slot)
		t.Fatalf("make: %v", err)
	}
	d := drv.(*gpu)
	t.Logf("make in %v: rings of %d and %d entries, word 0x%x in rig's array %v, copy engine on the compute channel %v, boost %v, debugger 0x%x, launch ring %v at 0x%x, timer %+v",
		time.Since(t0), d.ch[0].entries, d.ch[1].entries, d.wordGPU, d.array != nil, d.copyOnCompute, d.boost, d.live.Load().debugger, d.launchMem.Kind, d.launchMem.Address, d.clock0)
	for _, ch := range d.ch {
		t.Logf("%s channel 0x%x token 0x%x: ring at 0x%x (%v), aux at 0x%x, segments at 0x%x", ch.name, ch.h, ch.token, ch.ring.Address, ch.ring.Kind, ch.aux.Address, ch.segGPU)
	}
	r := &raw{t: t, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	return r
}

// TestGPURawParts brings a device up and runs each kind of part by hand,
// logging each step: no parts, a fill on each queue, a launch.
func TestGPURawParts(t *testing.T) {
	r := openGPURaw(t, Config{})
	t0 := time.Now()
	r.wait(r.submit(nil))
	t.Logf("a value of no parts in %v", time.Since(t0))
	m := r.alloc(device.PinnedMemory, 4096)
	for q := range 2 {
		t0 = time.Now()
		r.wait(r.submit(nil, fillPart(q, m, 64*uint64(q), 13, byte(0x40+q))))
		b := hostOf(m)[64*q:]
		t.Logf("queue %d: fill in %v: % x", q, time.Since(t0), b[:16])
		for i := range 13 {
			if b[i] != byte(0x40+q) {
				t.Fatalf("queue %d: fill byte %d reads 0x%x", q, i, b[i])
			}
		}
	}
	e := r.entry("empty")
	t0 = time.Now()
	r.wait(r.submit(nil, launch(e, 1, 32, nil)))
	t.Logf("a launch of empty in %v", time.Since(t0))
	// Round trips: a launch of empty submitted and its value seen by a
	// spin on the word.
	var lat []time.Duration
	for range 1000 {
		t1 := time.Now()
		v := r.submit(nil, launch(e, 1, 32, nil))
		for !device.AtLeast(r.d.Signaled(), v) {
			if time.Since(t1) > time.Second {
				t.Fatalf("value %d not reached in 1 s", v)
			}
		}
		lat = append(lat, time.Since(t1))
	}
	slices.Sort(lat)
	t.Logf("launch of empty + spin on the word, 1,000 times: median %v, 90th %v, 99th %v", lat[500], lat[900], lat[990])
	if !store64(t, r, "default") {
		// The variants of the descriptor the references disagree on, each
		// on a device of its own.
		for _, v := range []struct {
			name string
			c    Config
		}{
			{"local memory low", Config{tweak: func(q hw.Qmd) { lo, hi := q.Local(); q.SetLocal(lo+hi, 0) }}},
			{"PCAS action 3", Config{pcas: hw.PcasInvalidateCopySchedule}},
			{"QMD type 0, PCAS action 3", Config{pcas: hw.PcasInvalidateCopySchedule, tweak: func(q hw.Qmd) { q.L.QmdType.Set(q.W, 0) }}},
			{"bare", Config{tweak: func(q hw.Qmd) {
				lo, hi := q.Local()
				q.SetLocal(lo+hi, 0)
				for _, f := range []hw.Field{q.L.SassVersion, q.L.CwdMembarType, q.L.InvalidateTextureHeader, q.L.InvalidateTextureSampler,
					q.L.InvalidateTextureData, q.L.InvalidateShaderData, q.L.PrefetchLower, q.L.PrefetchUpper, q.L.PrefetchSize, q.L.SmGlobalCachingEnable} {
					f.Set(q.W, 0)
				}
			}}},
		} {
			t.Run(v.name, func(t *testing.T) { store64(t, openGPURaw(t, v.c), v.name) })
		}
	}
	noCUDA(t)
}

// store64 launches store64 on r, logs its descriptor, and reports whether
// the kernel wrote its word.
func store64(t *testing.T, r *raw, name string) bool {
	x := r.alloc(device.PinnedMemory, 4096)
	e := r.entry("store64")
	t0 := time.Now()
	r.wait(r.submit(nil, launch(e, 1, 1, u64s(x.Address, 0xfeed_beef_1234))))
	got := binary.LittleEndian.Uint64(hostOf(x))
	var nz []string
	for i, w := range r.d.qmd[0][:r.d.gen.Qmd.Words] {
		if w != 0 {
			nz = append(nz, fmt.Sprintf("%d:%08x", i, w))
		}
	}
	t.Logf("%s: store64 in %v wrote 0x%x; descriptor %s; notifiers %x %x", name, time.Since(t0), got, strings.Join(nz, " "),
		r.d.ch[0].notifierWords(), r.d.ch[1].notifierWords())
	if got != 0xfeed_beef_1234 {
		t.Errorf("%s: store64 wrote 0x%x", name, got)
		return false
	}
	return true
}

// gpuConfig is c, with Config.PinnedRings set where NVDEV_PINNED_RINGS
// is 1: the GPU tests then run with every ring the host writes in Pinned
// memory.
func gpuConfig(c Config) Config {
	if os.Getenv("NVDEV_PINNED_RINGS") == "1" {
		c.PinnedRings = true
	}
	return c
}

// openRig opens GPU 0 through rig and closes it at the test's end.
func openRig(t testing.TB, c Config) *rig.Device {
	t.Helper()
	needGPU(t)
	return testutil.Open(t, Open(0, gpuConfig(c)))
}

// ctxFor returns a context that ends after d or at the test's end.
var ctxFor = testutil.Context

// TestGPUExample is the example: twice doubles x on GPU 0, with
// no CUDA.
func TestGPUExample(t *testing.T) {
	dev := openRig(t, Config{})
	ctx := ctxFor(t, 20*time.Second)
	f := dev.Facts()
	t.Logf("%s: %s, budget %d MiB, L2 %d KiB, bus %s, hang %d ms, queues %v", dev.Name(), f.Arch, f.Budget>>20, f.CacheBytes>>10, f.Bus, f.HangMs, f.Queues)
	g, ok := rig.Capability(dev, hw.Key)
	if !ok {
		t.Fatal("no capability")
	}
	t.Logf("%s, %d SMs (%d GPCs x %d TPCs x %d), classes channel 0x%x compute 0x%x copy 0x%x", dev.Arch(), g.SMs(), g.GPCs, g.TPCsPerGPC, g.SMsPerTPC, g.ChannelClass, g.ComputeClass, g.CopyClass)
	const n = 1 << 20
	took := gputest.Twice(t, ctx, dev, cubin(t), n)
	t.Logf("doubled %d floats on %s in %v (up, twice, down)", n, dev.Name(), took)
	noCUDA(t)
}

// launchOn launches fn over groups × threads with the Pinned buffers bufs
// as its pointer parameters at the offsets ats, with params set first by
// set, and waits.
func launchOn(t *testing.T, dev *rig.Device, fn *rig.Function, groups, threads, shared int, set func(p []byte), bufs []*rig.Buffer, ats ...int) {
	t.Helper()
	refs := make([]rig.Ref, len(bufs))
	for i := range bufs {
		refs[i] = rig.ReadWrite(i, ats[i])
	}
	s, err := rig.NewSubmission(dev, rig.Launch(fn, fn.Params(), refs...))
	if err != nil {
		t.Fatal(err)
	}
	run := s.Take()
	run.Groups(0, groups, 1, 1)
	run.Threads(0, threads, 1, 1)
	run.Shared(0, shared)
	if set != nil {
		set(run.Params(0))
	}
	ctx := ctxFor(t, 10*time.Second)
	p, err := run.Submit(ctx, bufs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("%s: %v", fn.Name(), err)
	}
}

func f32(b []byte, i int) float32       { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
func putF32(b []byte, i int, v float32) { binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v)) }
func i32(b []byte, i int) int32         { return int32(binary.LittleEndian.Uint32(b[4*i:])) }

// TestGPUKernels runs the test kernels on Pinned memory.
func TestGPUKernels(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(name string) *rig.Function {
		f, err := img.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	buf := func(n int) *rig.Buffer {
		b, err := dev.Alloc(device.PinnedMemory, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("saxpy", func(t *testing.T) {
		const n = 1000
		x, y := buf(4*n), buf(4*n)
		for i := range n {
			putF32(x.Bytes(), i, float32(i))
			putF32(y.Bytes(), i, 1)
		}
		launchOn(t, dev, fn("saxpy"), 4, 256, 0, func(p []byte) {
			binary.LittleEndian.PutUint32(p[0:], n)
			binary.LittleEndian.PutUint32(p[4:], math.Float32bits(3))
		}, []*rig.Buffer{x, y}, 8, 16)
		for i := range n {
			if got := f32(y.Bytes(), i); got != 3*float32(i)+1 {
				t.Fatalf("y[%d] = %v", i, got)
			}
		}
	})
	t.Run("params4000", func(t *testing.T) {
		out := buf(4 * 1000)
		launchOn(t, dev, fn("params4000"), 1, 1000, 0, func(p []byte) {
			for i := range 1000 {
				binary.LittleEndian.PutUint32(p[4*i:], uint32(i*3+1))
			}
		}, []*rig.Buffer{out}, 4000)
		for i := range 1000 {
			if got := i32(out.Bytes(), i); got != int32(i*3+1) {
				t.Fatalf("out[%d] = %d", i, got)
			}
		}
	})
	t.Run("shared_static", func(t *testing.T) {
		x := buf(4 * 1024)
		for i := range 1024 {
			putF32(x.Bytes(), i, float32(i))
		}
		launchOn(t, dev, fn("shared_static"), 1, 1024, 0, nil, []*rig.Buffer{x}, 0)
		for i := range 1024 {
			if got := f32(x.Bytes(), i); got != float32(1023-i) {
				t.Fatalf("x[%d] = %v", i, got)
			}
		}
	})
	t.Run("shared_dynamic", func(t *testing.T) {
		const n = 40000 // 160,000 bytes of shared memory
		x := buf(4 * n)
		for i := range n {
			putF32(x.Bytes(), i, float32(i))
		}
		launchOn(t, dev, fn("shared_dynamic"), 1, 256, 4*n, func(p []byte) {
			binary.LittleEndian.PutUint32(p[8:], n)
		}, []*rig.Buffer{x}, 0)
		for i := range n {
			if got := f32(x.Bytes(), i); got != float32(n-1-i) {
				t.Fatalf("x[%d] = %v", i, got)
			}
		}
	})
	t.Run("local_mem", func(t *testing.T) {
		idx, out := buf(4*256), buf(4*256)
		for i := range 256 {
			binary.LittleEndian.PutUint32(idx.Bytes()[4*i:], uint32(255-i))
		}
		launchOn(t, dev, fn("local_mem"), 1, 256, 0, nil, []*rig.Buffer{idx, out}, 0, 8)
		for i := range 256 {
			if got := i32(out.Bytes(), i); got != int32((255-i)*i) {
				t.Fatalf("out[%d] = %d", i, got)
			}
		}
	})
	t.Run("count", func(t *testing.T) {
		out := buf(8)
		c := fn("count")
		launchOn(t, dev, c, 4, 256, 0, nil, []*rig.Buffer{out}, 0)
		// Thread 0 of group 0 reads the counter somewhere among the
		// launch's 1,024 additions.
		first := binary.LittleEndian.Uint64(out.Bytes())
		launchOn(t, dev, c, 4, 256, 0, nil, []*rig.Buffer{out}, 0)
		second := binary.LittleEndian.Uint64(out.Bytes())
		if first >= 1024 || second < 1024 || second >= 2048 {
			t.Fatalf("count: %d then %d", first, second)
		}
	})
	t.Run("lookup", func(t *testing.T) {
		i, out := buf(4*64), buf(4*64)
		for k := range 64 {
			putF32(out.Bytes(), k, 7)
		}
		launchOn(t, dev, fn("lookup"), 1, 64, 0, nil, []*rig.Buffer{i, out}, 0, 8)
		for k := range 64 {
			if got := f32(out.Bytes(), k); got != 0 {
				t.Fatalf("out[%d] = %v, want the table's 0", k, got)
			}
		}
	})
	noCUDA(t)
}

// TestGPUCopiesBothQueues copies and fills on both queues through Device
// memory, pitched rows too, checked by the host.
func TestGPUCopiesBothQueues(t *testing.T) {
	dev := openRig(t, Config{})
	const n = 1 << 20
	alloc := func(k device.Memory) *rig.Buffer {
		b, err := dev.Alloc(k, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	src, mid, dst := alloc(device.PinnedMemory), alloc(device.DeviceMemory), alloc(device.PinnedMemory)
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i * 7)
	}
	ctx := ctxFor(t, 20*time.Second)
	for q := range 2 {
		clear(dst.Bytes())
		s, err := rig.NewSubmission(dev, rig.Copy(0, 0, 1, 0, n).On(q), rig.FillBytes(1, 101, 50, 0xab).On(q), rig.Copy(1, 0, 2, 0, n).On(q))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Take().Submit(ctx, src, mid, dst)
		if err != nil {
			t.Fatalf("queue %d: %v", q, err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatalf("queue %d: %v", q, err)
		}
		for i, b := range dst.Bytes() {
			want := byte(i * 7)
			if i >= 101 && i < 151 {
				want = 0xab
			}
			if b != want {
				t.Fatalf("queue %d: byte %d reads 0x%x, want 0x%x", q, i, b, want)
			}
		}
		clear(dst.Bytes())
		s, _ = rig.NewSubmission(dev,
			rig.CopyRows(rig.Rows{Src: 0, Dst: 1, RowBytes: 100, Rows: 8, SrcPitch: 256, DstPitch: 128}).On(q),
			rig.CopyRows(rig.Rows{Src: 1, Dst: 2, RowBytes: 100, Rows: 8, SrcPitch: 128, DstPitch: 100}).On(q))
		if p, err = s.Take().Submit(ctx, src, mid, dst); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		for r := range 8 {
			for i := range 100 {
				if got, want := dst.Bytes()[100*r+i], src.Bytes()[256*r+i]; got != want {
					t.Fatalf("queue %d: row %d byte %d reads 0x%x, want 0x%x", q, r, i, got, want)
				}
			}
		}
		t.Logf("queue %d: copies and fills checked", q)
	}
}

// TestGPUMillionValues waits on a word the host writes, then runs 1,000,000
// values back to back, a launch every tenth, with the word monotonic.
func TestGPUMillionValues(t *testing.T) {
	r := openGPURaw(t, Config{})
	holdOnHostWord(t, r, 20*time.Millisecond)
	t.Logf("a wait on a word the host wrote held the copy channel 20 ms")

	e := r.entry("empty")
	const total = 1_000_000
	t0 := time.Now()
	last := r.d.Signaled()
	laterWaits := 0
	for i := 0; i < total; i++ {
		var parts []device.Part
		if i%10 == 0 {
			parts = []device.Part{launch(e, 1, 32, nil)}
		}
		s := device.Submission{Value: r.v + 1, Parts: parts}
		for {
			a := r.d.Room(&s)
			if a.Kind == device.RoomOK {
				break
			}
			if a.Kind != device.RoomLater {
				t.Fatalf("room: %+v", a)
			}
			laterWaits++
			cur := r.d.Signaled()
			if err := r.d.Sleep(cur, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if r.d.Signaled() == cur {
				t.Fatalf("the word stuck at %d with %d values submitted", cur, r.v)
			}
		}
		r.v++
		r.d.Submit(&s)
		r.d.Kick(r.v)
		if cur := r.d.Signaled(); !device.AtLeast(cur, last) {
			t.Fatalf("the word went back from %d to %d", last, cur)
		} else {
			last = cur
		}
		if time.Since(t0) > 60*time.Second {
			t.Fatalf("%d values in 60 s", i)
		}
	}
	r.wait(r.v)
	el := time.Since(t0)
	t.Logf("%d values (a launch every tenth) in %v: %v a value; %d waits for room", total, el, el/total, laterWaits)
	noCUDA(t)
}

// TestGPUFault launches a kernel that writes where nothing is mapped: the
// device is lost with the notifier's line, and the MMU's lines follow the
// loss (ReadFault), there once the device closed.
func TestGPUFault(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve("fault_illegal_address")
	if err != nil {
		t.Fatal(err)
	}
	p0, err := dev.Alloc(device.PinnedMemory, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rig.NewSubmission(dev, rig.Launch(fn, 8, rig.Write(0, 0)))
	run := s.Take()
	run.Groups(0, 1, 1, 1)
	run.Threads(0, 1, 1, 1)
	ctx := ctxFor(t, 20*time.Second)
	t0 := time.Now()
	p, err := run.Submit(ctx, p0)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait(ctx)
	t.Logf("after %v: %+v", time.Since(t0), err)
	if !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the wait answered %v", err)
	}
	if !strings.Contains(err.Error(), "error") {
		t.Errorf("the loss names no notifier error: %v", err)
	}
	var le *rig.LostError
	if !errors.As(err, &le) {
		t.Fatalf("the wait answered %T, want a *rig.LostError", err)
	}
	_ = dev.Close()
	<-dev.Done()
	lines := le.Detail()
	t.Logf("fault lines:\n%s", strings.Join(lines, "\n"))
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "MMU fault at ") }) {
		t.Errorf("no MMU fault among the lines read after the loss:\n%s", strings.Join(lines, "\n"))
	}
	_ = nvidia.ClassDebugger
}

// TestGPUFaultReadsEverySM launches a kernel that traps on every SM, eight
// groups an SM: the lines read after the loss name SMs past the first
// hundred, which the RM reads only in a second read, one that must not
// pass the SMs the GPU has (132 on the H200, where the chip's count is
// 144), and no refusal.
func TestGPUFaultReadsEverySM(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve("trap")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rig.NewSubmission(dev, rig.Launch(fn, 0))
	run := s.Take()
	run.Groups(0, 8*144, 1, 1)
	run.Threads(0, 32, 1, 1)
	ctx := ctxFor(t, 20*time.Second)
	p, err := run.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var le *rig.LostError
	if err := p.Wait(ctx); !errors.As(err, &le) {
		t.Fatalf("the wait answered %v, want a *rig.LostError", err)
	}
	_ = dev.Close()
	<-dev.Done()
	lines := le.Detail()
	most, n := -1, 0
	for _, l := range lines {
		var sm int
		if _, err := fmt.Sscanf(l, "SM %d:", &sm); err == nil {
			most, n = max(most, sm), n+1
		}
		if strings.Contains(l, "refused") {
			t.Errorf("a refusal among the lines: %s", l)
		}
	}
	t.Logf("%d SMs' errors, the highest SM %d; %d lines, the first: %q", n, most, len(lines), lines[:min(3, len(lines))])
	if most < 100 {
		t.Errorf("no SM past the first hundred among the %d SMs' errors read after the loss", n)
	}
}
