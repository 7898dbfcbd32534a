package cudadev

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// Benchmarks on the GPU, to run beside the C anchor testdata/anchor_cuda.c
// (see BENCHMARKS.md): the driver's hot path alone (Room, Submit, Commit), and
// through rig (Take, Submit, Wait).

func init() {
	// CUDADEV_SCHED=auto keeps CUDA's default scheduling, to measure
	// what the blocking sync that the driver sets costs.
	keepAutoSched = os.Getenv("CUDADEV_SCHED") == "auto"
}

// BenchmarkGPUCall is one trivial libcuda call through a frame
// (cuCtxGetCurrent); anchor: "C trivial call".
func BenchmarkGPUCall(b *testing.B) {
	needGPU(b)
	t := loadedTable(b)
	f := getFrame()
	defer putFrame(f)
	b.ReportAllocs()
	for b.Loop() {
		f.c1(t.cuCtxGetCurrent, f.outp(0))
	}
}

// BenchmarkGPUPushPop is what enterCtx and leaveCtx cost a call of the
// hot path: cuCtxPushCurrent and cuCtxPopCurrent with the thread locked;
// anchor: anchor_sched.c's "push+pop".
func BenchmarkGPUPushPop(b *testing.B) {
	r := openRaw(b, Config{})
	f := getFrame()
	defer putFrame(f)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		prev := enterCtx(r.d.t, f, r.d.ctx)
		leaveCtx(r.d.t, f, r.d.ctx, prev)
	}
}

// BenchmarkGPULaunch is the host's cost of a one-launch submission (Room +
// Submit of an empty kernel, 1 group of 32 threads); anchor: "C launch
// enqueue".
func BenchmarkGPULaunch(b *testing.B) { benchLaunch(b, Config{}) }

// BenchmarkGPULaunchCurrentContext is the same with the context made
// current for every call (Config.CurrentContext).
func BenchmarkGPULaunchCurrentContext(b *testing.B) { benchLaunch(b, Config{CurrentContext: true}) }

// BenchmarkGPULaunchThreadCtx is BenchmarkGPULaunch with the benchmark's
// goroutine locked to its thread and GPU 0's primary context current on
// it throughout, as a C program has it: the device's calls still run bare.
func BenchmarkGPULaunchThreadCtx(b *testing.B) {
	threadCtx(b)
	benchLaunch(b, Config{})
}

// BenchmarkGPURigLaunchThreadCtx is BenchmarkGPURigLaunch so.
func BenchmarkGPURigLaunchThreadCtx(b *testing.B) {
	threadCtx(b)
	benchRigLaunch(b, Config{})
}

// threadCtx locks the goroutine to its thread and makes GPU 0's primary
// context current on it until b ends. The context stays retained for the
// process, as the devices' opens retain it anyway.
func threadCtx(b *testing.B) {
	needGPU(b)
	t, err := load()
	if err != nil {
		b.Fatal(err)
	}
	var dev int32
	var ctx uintptr
	if r := t.call(t.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), 0); r != 0 {
		b.Fatal(t.text(r))
	}
	if r := t.call(t.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&ctx)), uintptr(dev)); r != 0 {
		b.Fatal(t.text(r))
	}
	f := getFrame()
	prev := enterCtx(t, f, ctx)
	b.Cleanup(func() {
		leaveCtx(t, f, ctx, prev)
		putFrame(f)
	})
}

func benchLaunch(b *testing.B, c Config) {
	r := openRaw(b, c)
	s := device.Submission{Parts: []device.Part{launch(r.entry("empty"), 1, 32, nil)}}
	step := func() {
		r.next(&s)
	}
	for i := 0; i < 1000; i++ {
		step()
	}
	r.wait(r.v)
	sw := switches.Load()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.StopTimer()
	r.wait(r.v)
	if n := switches.Load() - sw; n > 0 {
		b.ReportMetric(float64(n)/float64(b.N), "switches/op")
	}
}

// BenchmarkGPULaunchBatch is the host's cost of a one-launch submission in
// batches of 256 that never fill the stream, the timer stopped while a
// batch runs; anchor: anchor_sched.c's "launch enqueue in batches of 256".
func BenchmarkGPULaunchBatch(b *testing.B) { benchLaunchBatch(b, Config{}) }

// BenchmarkGPULaunchBatchCurrentContext is the same with the context made
// current for every call (Config.CurrentContext).
func BenchmarkGPULaunchBatchCurrentContext(b *testing.B) {
	benchLaunchBatch(b, Config{CurrentContext: true})
}

func benchLaunchBatch(b *testing.B, c Config) {
	r := openRaw(b, c)
	s := device.Submission{Parts: []device.Part{launch(r.entry("empty"), 1, 32, nil)}}
	step := func() {
		r.next(&s)
	}
	for i := 0; i < 1000; i++ {
		step()
	}
	r.wait(r.v)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%256 == 0 && i > 0 {
			b.StopTimer()
			r.wait(r.v)
			b.StartTimer()
		}
		step()
	}
	b.StopTimer()
	r.wait(r.v)
}

// BenchmarkGPURigLaunch is the same through rig: Take, Threads, Submit.
func BenchmarkGPURigLaunch(b *testing.B) { benchRigLaunch(b, Config{}) }

// BenchmarkGPURigLaunchCurrentContext is the same with the context made
// current for every call (Config.CurrentContext).
func BenchmarkGPURigLaunchCurrentContext(b *testing.B) {
	benchRigLaunch(b, Config{CurrentContext: true})
}

// BenchmarkGPURigLaunchBatch is BenchmarkGPURigLaunch in batches of 256
// that never fill the stream, the timer stopped while a batch runs;
// anchor: anchor_sched.c's "launch enqueue in batches of 256".
func BenchmarkGPURigLaunchBatch(b *testing.B) { benchRigLaunchBatch(b, 256) }

func benchRigLaunch(b *testing.B, c Config) { benchRigLaunchIn(b, c, 0) }

func benchRigLaunchBatch(b *testing.B, batch int) { benchRigLaunchIn(b, Config{}, batch) }

// benchRigLaunchIn submits launches of empty through rig, waiting with the
// timer stopped after each batch of launches where batch > 0.
func benchRigLaunchIn(b *testing.B, c Config, batch int) {
	dev, _, fn := rigEmpty(b, c, nil)
	s := submission(b, dev, rig.Launch(fn, 0))
	var p rig.Point
	var err error
	step := func() {
		run := s.Take()
		run.Threads(0, 32, 1, 1)
		if p, err = run.Submit(bg); err != nil {
			b.Fatal(err)
		}
	}
	testutil.Pipelined(b, batch, step, func() { _ = p.Wait(bg) })
}

// timeSteps is testutil's TimeSteps.
var timeSteps = testutil.TimeSteps

// BenchmarkGPURoundTrip is a launch submitted, committed and waited for by
// spinning on the word; anchor: "C launch+writeValue64+spin median".
func BenchmarkGPURoundTrip(b *testing.B) { benchRoundTrip(b, Config{}) }

// BenchmarkGPURoundTripCurrentContext is the same with the context made
// current for every call (Config.CurrentContext).
func BenchmarkGPURoundTripCurrentContext(b *testing.B) {
	benchRoundTrip(b, Config{CurrentContext: true})
}

func benchRoundTrip(b *testing.B, c Config) {
	r := openRaw(b, c)
	s := device.Submission{Parts: []device.Part{launch(r.entry("empty"), 1, 32, nil)}}
	step := func() time.Duration {
		start := time.Now()
		r.next(&s)
		r.d.Commit(r.v)
		for !device.AtLeast(r.d.Signaled(), r.v) {
		}
		return time.Since(start)
	}
	timeSteps(b, step)
}

// BenchmarkGPURigRoundTrip is the same through rig: Submit, then Wait on
// the point, which the supervisor's Sleep returns.
func BenchmarkGPURigRoundTrip(b *testing.B) { benchRigRoundTrip(b, Config{}) }

// BenchmarkGPURigRoundTripCurrentContext is the same with the context made
// current for every call (Config.CurrentContext).
func BenchmarkGPURigRoundTripCurrentContext(b *testing.B) {
	benchRigRoundTrip(b, Config{CurrentContext: true})
}

func benchRigRoundTrip(b *testing.B, c Config) {
	dev, _, fn := rigEmpty(b, c, nil)
	testutil.RoundTrips(b, bg, submission(b, dev, rig.Launch(fn, 0)))
}

// BenchmarkGPUPipelined is a launch and a commit per value, waited for at
// the end; anchor: "C launch+write64 pipelined".
func BenchmarkGPUPipelined(b *testing.B) { benchPipelined(b, Config{}) }

// BenchmarkGPUPipelinedCurrentContext is the same with the context made
// current for every call (Config.CurrentContext).
func BenchmarkGPUPipelinedCurrentContext(b *testing.B) {
	benchPipelined(b, Config{CurrentContext: true})
}

func benchPipelined(b *testing.B, c Config) {
	r := openRaw(b, c)
	s := device.Submission{Parts: []device.Part{launch(r.entry("empty"), 1, 32, nil)}}
	step := func() {
		r.next(&s)
		r.d.Commit(r.v)
	}
	for i := 0; i < 1000; i++ {
		step()
	}
	r.wait(r.v)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	for !device.AtLeast(r.d.Signaled(), r.v) {
	}
	b.StopTimer()
}

// benchCopy copies 1 GiB from a region of kind from to Device memory.
func benchCopy(b *testing.B, from device.Memory) {
	r := openRaw(b, Config{})
	const n = 1 << 30
	src, dst := r.alloc(from, n), r.alloc(device.DeviceMemory, n)
	r.submit(nil, device.Part{Kind: device.CopyRows, Dst: src, Filling: true, RowBytes: n, Rows: 1, DstPitch: n, Byte: 1})
	cp := device.Part{Kind: device.CopyRows, Src: src, Dst: dst, RowBytes: n, Rows: 1, SrcPitch: n, DstPitch: n}
	r.wait(r.submit(nil, cp))
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.submit(nil, cp)
	}
	// Spin on the word, as the anchor's synchronize spins.
	r.d.Commit(r.v)
	for !device.AtLeast(r.d.Signaled(), r.v) {
	}
	b.StopTimer()
}

// BenchmarkGPUCopyD2D: anchor "C d2d copy 1GiB".
func BenchmarkGPUCopyD2D(b *testing.B) { benchCopy(b, device.DeviceMemory) }

// BenchmarkGPUCopyH2D: anchor "C h2d pinned 1GiB".
func BenchmarkGPUCopyH2D(b *testing.B) { benchCopy(b, device.PinnedMemory) }

// BenchmarkGPUGraph launches a graph of 1,000 chained empty kernels as a
// fill part; anchor: "C graph of 1000 chained empty kernels".
func BenchmarkGPUGraph(b *testing.B) {
	dev := openRig(b, Config{})
	rec, _ := rig.Capability(dev, cuda.Key)
	img, err := dev.LoadImage(kernels(b, dev.Arch()))
	if err != nil {
		b.Fatal(err)
	}
	empty := resolve(b, img, "empty")
	g, err := rec.Graphs.NewGraph()
	if err != nil {
		b.Fatal(err)
	}
	var prev []cuda.Node
	for i := 0; i < 1000; i++ {
		n, err := g.Kernel(cuda.Kernel{Func: empty.Entry().Code, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}}, prev...)
		if err != nil {
			b.Fatal(err)
		}
		prev = []cuda.Node{n}
	}
	x, err := g.Instantiate()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = x.Destroy(); _ = g.Destroy() }()
	s := submission(b, dev, rig.Fill(x, 0).On(0))
	p, err := s.Take().Submit(bg)
	if err == nil {
		err = p.Wait(bg)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p, err = s.Take().Submit(bg); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Wait(bg); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/kernel")
}
