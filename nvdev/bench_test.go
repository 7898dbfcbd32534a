package nvdev

import (
	"flag"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// Benchmarks on the GPU (RIG_GPU=1), to run beside the C anchor
// cudadev/testdata/anchor_cuda.c and cudadev's benchmarks; BENCHMARKS.md
// lists the commands and the anchors.
// Each reports ns/op with its allocations.

// benchRaw and benchRig open the device of a benchmark: GPU 0, or the
// fake where a test runs the benchmarks there.
var (
	benchRaw = openGPURaw
	benchRig = openRig
)

// rigEmpty is a device opened through rig and a submission of one launch
// of the test cubin's empty kernel.
func rigEmpty(b *testing.B, c Config) *rig.Submission {
	dev := benchRig(b, c)
	img, err := dev.LoadImage(cubin(b))
	if err != nil {
		b.Fatal(err)
	}
	fn, err := img.Resolve("empty")
	if err != nil {
		b.Fatal(err)
	}
	s, err := rig.NewSubmission(dev, rig.Launch(fn, 0))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkGPURigLaunch is the host's cost of a submission of one launch
// through rig (Take, Threads, Submit): the clock stops while the GPU
// drains each batch of 512 (the launch ring holds 819 launches), so that no
// submission waits for room; anchor:
// cudadev's BenchmarkGPURigLaunch and "C launch enqueue".
func BenchmarkGPURigLaunch(b *testing.B) { benchRigLaunch(b, Config{}) }

// BenchmarkGPURigLaunchPinnedRings is BenchmarkGPURigLaunch with every ring
// in Pinned memory and no read of the flush word (Config.PinnedRings).
func BenchmarkGPURigLaunchPinnedRings(b *testing.B) { benchRigLaunch(b, Config{PinnedRings: true}) }

func benchRigLaunch(b *testing.B, c Config) {
	s := rigEmpty(b, c)
	ctx := ctxFor(b, 60*time.Second)
	var p rig.Point
	var err error
	step := func() {
		run := s.Take()
		run.Threads(0, 32, 1, 1)
		if p, err = run.Submit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	testutil.Pipelined(b, 512, step, func() {
		if err := p.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkGPURigRoundTrip is a launch of empty submitted through rig and
// waited for (Submit, then Wait on the point); anchor: "C launch+sync
// median".
func BenchmarkGPURigRoundTrip(b *testing.B) { benchRigRoundTrip(b, Config{}) }

// BenchmarkGPURigRoundTripOneRunqueue is BenchmarkGPURigRoundTrip with both
// channels on the channel group's first runqueue (Config.OneRunqueue).
func BenchmarkGPURigRoundTripOneRunqueue(b *testing.B) {
	benchRigRoundTrip(b, Config{OneRunqueue: true})
}

// BenchmarkGPURigRoundTripPinnedRings is BenchmarkGPURigRoundTrip with
// Config.PinnedRings.
func BenchmarkGPURigRoundTripPinnedRings(b *testing.B) {
	benchRigRoundTrip(b, Config{PinnedRings: true})
}

func benchRigRoundTrip(b *testing.B, c Config) {
	s := rigEmpty(b, c)
	testutil.RoundTrips(b, ctxFor(b, 60*time.Second), s)
}

// rawValue submits s as the device's next value, growing the rings where
// Room asks.
func rawValue(r *raw, s *device.Submission) {
	r.v++
	s.Value = r.v
	var t0 time.Time
	for i := 1; ; i++ {
		if i%4096 == 0 {
			stuck(r, &t0)
		}
		switch a := r.d.Room(s); a.Kind {
		case device.RoomOK:
			r.d.Submit(s)
			r.d.Kick(s.Value)
			return
		case device.RoomGrow:
			if err := r.d.Grow(); err != nil {
				r.t.Fatal(err)
			}
		case device.RoomNever:
			r.t.Fatalf("room: %+v", a)
		}
	}
}

// BenchmarkGPURoundTrip is a launch of empty through the driver alone
// (Room, Submit) and a spin on the word; anchor: "C launch+writeValue64+spin
// median".
func BenchmarkGPURoundTrip(b *testing.B) { benchRoundTrip(b, Config{}) }

// BenchmarkGPURoundTripPinnedSegments is BenchmarkGPURoundTrip with the
// segment rings in Pinned memory (Config.PinnedSegments).
func BenchmarkGPURoundTripPinnedSegments(b *testing.B) {
	benchRoundTrip(b, Config{PinnedSegments: true})
}

func benchRoundTrip(b *testing.B, c Config) {
	rawRoundTrips(b, benchRaw(b, c))
}

// rawRoundTrips times values of one launch of empty submitted through the
// driver alone (Room, Submit), each followed by a spin on the word.
func rawRoundTrips(b *testing.B, r *raw) {
	s := device.Submission{Parts: []device.Part{launch(r.entry("empty"), 1, 32, nil)}}
	testutil.TimeSteps(b, func() time.Duration {
		start := time.Now()
		rawValue(r, &s)
		spin(r)
		return time.Since(start)
	})
}

// benchChained submits values of k launches of empty, back to back, and
// spins on the word at the end: an op is one kernel, the GPU's time per
// kernel once the host runs ahead.
func benchChained(b *testing.B, c Config, k int) {
	r := benchRaw(b, c)
	e := r.entry("empty")
	parts := make([]device.Part, k)
	for i := range parts {
		parts[i] = launch(e, 1, 32, nil)
	}
	s := device.Submission{Parts: parts}
	for range 1000 / k {
		rawValue(r, &s)
	}
	r.wait(r.v)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += k {
		rawValue(r, &s)
	}
	spin(r)
	b.StopTimer()
}

// BenchmarkGPUChained is values of one launch of empty, each released by
// its launch; anchor: "C graph of 1000 chained empty kernels" (ns/kernel)
// and "C launch+write64 pipelined" (ns/value).
func BenchmarkGPUChained(b *testing.B) { benchChained(b, Config{}, 1) }

// BenchmarkGPUChainedOneRunqueue is BenchmarkGPUChained with both channels
// on the first runqueue.
func BenchmarkGPUChainedOneRunqueue(b *testing.B) { benchChained(b, Config{OneRunqueue: true}, 1) }

// BenchmarkGPUChainedRelease is BenchmarkGPUChained with a semaphore
// release of the channel after each launch (Config.NoOwnRelease).
func BenchmarkGPUChainedRelease(b *testing.B) { benchChained(b, Config{NoOwnRelease: true}, 1) }

// BenchmarkGPUChainedPinnedRings is BenchmarkGPUChained with
// Config.PinnedRings.
func BenchmarkGPUChainedPinnedRings(b *testing.B) { benchChained(b, Config{PinnedRings: true}, 1) }

// BenchmarkGPUChainedPinnedSegments is BenchmarkGPUChained with the
// segment rings in Pinned memory (Config.PinnedSegments).
func BenchmarkGPUChainedPinnedSegments(b *testing.B) {
	benchChained(b, Config{PinnedSegments: true}, 1)
}

// BenchmarkGPUChained1000 is values of 1,000 launches of empty, linked: an
// op is one kernel.
func BenchmarkGPUChained1000(b *testing.B) { benchChained(b, Config{}, 1000) }

// BenchmarkGPUChained1000Unlinked is BenchmarkGPUChained1000 with a wait
// for idle and a send for each launch (Config.NoLinkLaunches).
func BenchmarkGPUChained1000Unlinked(b *testing.B) {
	benchChained(b, Config{NoLinkLaunches: true}, 1000)
}

// benchCopy copies n bytes from a region of kind from to Device memory on
// COPY:0, each copy a value, and spins on the word at the end; b.SetBytes
// makes MB/s the bytes copied, and GB/s-rw counts a device-to-device
// copy's reads and writes, as the anchor prints it.
func benchCopy(b *testing.B, from device.Memory, n int, c Config) {
	r := benchRaw(b, c)
	src, dst := r.alloc(from, n), r.alloc(device.DeviceMemory, n)
	r.submit(nil, fillPart(qCopy, src, 0, uint64(n), 1))
	s := device.Submission{Parts: []device.Part{copyPart(qCopy, src, dst, 0, 0, uint64(n))}}
	rawValue(r, &s)
	r.wait(r.v)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for range b.N {
		rawValue(r, &s)
	}
	spin(r)
	el := time.Since(t0)
	b.StopTimer()
	if from == device.DeviceMemory {
		b.ReportMetric(2*float64(n)*float64(b.N)/el.Seconds()/1e9, "GB/s-rw")
	}
}

// Copies on COPY:0, each a value; anchors "C d2d copy 1GiB" (its
// read+write figure), "C h2d pinned 1GiB", and cuMemcpyAsync at 64 MiB.
// Device-to-device copies run as the driver's kernel on the compute
// channel (Config.CopyKernels), the Engine variants on the copy engine.
func BenchmarkGPUCopyD2D64MiB(b *testing.B) { benchCopy(b, device.DeviceMemory, 64<<20, Config{}) }
func BenchmarkGPUCopyD2D1GiB(b *testing.B)  { benchCopy(b, device.DeviceMemory, 1<<30, Config{}) }
func BenchmarkGPUCopyH2D64MiB(b *testing.B) { benchCopy(b, device.PinnedMemory, 64<<20, Config{}) }
func BenchmarkGPUCopyH2D1GiB(b *testing.B)  { benchCopy(b, device.PinnedMemory, 1<<30, Config{}) }
func BenchmarkGPUCopyD2DEngine64MiB(b *testing.B) {
	benchCopy(b, device.DeviceMemory, 64<<20, Config{CopyKernels: -1})
}
func BenchmarkGPUCopyD2DEngine1GiB(b *testing.B) {
	benchCopy(b, device.DeviceMemory, 1<<30, Config{CopyKernels: -1})
}

// TestBenchmarksOnFake runs the benchmarks of launches and of 64 MiB copies
// on the fake, whose emulation of the GPU allocates: TestHotPathAllocs
// counts the driver's allocations.
func TestBenchmarksOnFake(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmarks")
	}
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("300x"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bt.Value.Set(old) }()
	f := newFake()
	benchRaw = func(tb testing.TB, c Config) *raw { return openRaw(tb, c) }
	benchRig = func(tb testing.TB, c Config) *rig.Device {
		dev, err := rig.Open(bg, f.opener(c))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = dev.Close(); <-dev.Done() })
		return dev
	}
	defer func() { benchRaw, benchRig = openGPURaw, openRig }()
	for _, c := range []struct {
		name string
		fn   func(*testing.B)
	}{
		{"RigLaunch", BenchmarkGPURigLaunch},
		{"RigRoundTrip", BenchmarkGPURigRoundTrip},
		{"RoundTrip", BenchmarkGPURoundTrip},
		{"Chained", BenchmarkGPUChained},
		{"ChainedRelease", BenchmarkGPUChainedRelease},
		{"Chained1000", BenchmarkGPUChained1000},
		{"Chained1000Unlinked", BenchmarkGPUChained1000Unlinked},
		{"CopyD2D64MiB", BenchmarkGPUCopyD2D64MiB},
		{"CopyD2DEngine64MiB", BenchmarkGPUCopyD2DEngine64MiB},
		{"RoundTripPinnedSegments", BenchmarkGPURoundTripPinnedSegments},
		{"RigLaunchPinnedRings", BenchmarkGPURigLaunchPinnedRings},
		{"RigRoundTripPinnedRings", BenchmarkGPURigRoundTripPinnedRings},
		{"ChainedPinnedRings", BenchmarkGPUChainedPinnedRings},
		{"HeldNone", func(b *testing.B) { benchHeld(b, Config{}, 0) }},
		{"HeldLaunch8", func(b *testing.B) { benchHeld(b, Config{}, 8) }},
		{"HeldPinnedRings", func(b *testing.B) { benchHeld(b, Config{PinnedRings: true}, 8) }},
		{"ChainedPinLaunch", func(b *testing.B) { benchChained(b, Config{pin: pinLaunch | pinRing}, 1) }},
		{"Hold", func(b *testing.B) { benchHold(b, Config{}) }},
		{"Submitters1", func(b *testing.B) { benchSubmitters(b, Config{}, 1) }},
		{"Submitters16", func(b *testing.B) { benchSubmitters(b, Config{}, 16) }},
		{"Submitters64SubmitKicks", func(b *testing.B) { benchSubmitters(b, Config{submitKicks: true}, 64) }},
	} {
		res := testing.Benchmark(c.fn)
		if res.N == 0 {
			t.Errorf("%s did not run", c.name)
			continue
		}
		t.Logf("%s: %v %v", c.name, res, res.MemString())
	}
}

// TestHotPathAllocs counts the allocations of Room and Submit with the
// fake paused: a launch, a timed launch, a copy kernel, values of both
// channels.
func TestHotPathAllocs(t *testing.T) {
	r := openRaw(t, Config{CopyKernels: 1})
	e := r.entry("empty")
	a, b := r.alloc(device.DeviceMemory, 1<<20), r.alloc(device.DeviceMemory, 1<<20)
	m := r.alloc(device.PinnedMemory, 4096)
	r.wait(r.submitTimed(true, nil, launch(e, 1, 32, nil)))
	if _, err := r.d.Settle(nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []device.Submission{
		{Parts: []device.Part{launch(e, 1, 32, nil)}},
		{Parts: []device.Part{launch(e, 1, 32, nil)}, Timed: true},
		{Parts: []device.Part{copyPart(qCopy, a, b, 0, 0, 1<<20)}},
		{Parts: []device.Part{fillPart(qCopy, m, 0, 8, 1), launch(e, 1, 32, nil), copyPart(qCompute, m, m, 0, 64, 8)}},
	} {
		rawValue(r, &s)
		r.wait(r.v)
		r.f.pause()
		n := testing.AllocsPerRun(100, func() { rawValue(r, &s) })
		r.f.resume()
		r.wait(r.v)
		if n != 0 {
			t.Errorf("%v allocations a value of %v", n, s.Parts)
		}
	}
}

// spin spins on the word until it reaches the last value submitted, and
// fails where a channel's notifier holds an error.
func spin(r *raw) {
	var t0 time.Time
	for i := 1; !device.AtLeast(r.d.Signaled(), r.v); i++ {
		if i%4096 == 0 {
			stuck(r, &t0)
		}
	}
}

// stuck fails where a channel's notifier holds an error, or where the
// word has not reached the last value 20 s after *t0, which it sets on its
// first call.
func stuck(r *raw, t0 *time.Time) {
	if r.d.notified() {
		r.t.Fatal(r.d.notifierFault())
	}
	if t0.IsZero() {
		*t0 = time.Now()
	} else if time.Since(*t0) > 20*time.Second {
		r.t.Fatalf("the word reads %d, not %d, after 20 s", r.d.Signaled(), r.v)
	}
}

// BenchmarkRoomSubmit is the driver's own cost of a value of one launch,
// Room and Submit, on the fake with its emulation paused: the clock stops
// while the fake runs each batch of 512.
func BenchmarkRoomSubmit(b *testing.B) {
	r := openRaw(b, Config{})
	s := device.Submission{Parts: []device.Part{launch(r.entry("empty"), 1, 32, nil)}}
	r.f.pause()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%512 == 511 {
			b.StopTimer()
			r.f.resume()
			r.wait(r.v)
			r.f.pause()
			b.StartTimer()
		}
		rawValue(r, &s)
	}
	b.StopTimer()
	r.f.resume()
	r.wait(r.v)
}
