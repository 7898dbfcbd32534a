package cudadev

import (
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// The one-launch benchmarks beside C in one process: anchor_cuda.c's enqueue
// loop (testdata/anchor_loop.c, built on the GPU machine as a shared
// object that RIG_ANCHOR_LOOP names) and the Go path take turns, a chunk
// of launches each, on the same stream, function and context, the first
// turn changing sides from round to round. Each round yields the Go
// path's nanoseconds a launch over C's; the benchmark reports the median
// of the rounds' ratios, so that the machine's drift, which moves a
// separate process's figure by 10% from run to run, falls out of the
// ratio. A round of b.N is one turn each; run it with -test.benchtime Nx.

// besideChunk is the launches of a turn, as many as anchor_cuda.c's enqueue.
const besideChunk = 100000

// cLoop is anchor_loop.so's loop, bound to a stream and function.
type cLoop struct {
	t                  *table
	f                  *frame
	ctx                uintptr
	loop, launch, sync uintptr
	fn, stream         uintptr
}

// newCLoop loads RIG_ANCHOR_LOOP's anchor_enqueue for fn on stream of ctx,
// skipping b where it is unset.
func newCLoop(b *testing.B, t *table, ctx, fn, stream uintptr) *cLoop {
	path := os.Getenv("RIG_ANCHOR_LOOP")
	if path == "" {
		b.Skip("RIG_ANCHOR_LOOP unset: it names anchor_loop.so, built from testdata/anchor_loop.c")
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		b.Fatal(err)
	}
	loop, err := purego.Dlsym(h, "anchor_enqueue")
	if err != nil {
		b.Fatal(err)
	}
	sync := t.lookup("cuStreamSynchronize")
	if sync == 0 {
		b.Fatal("libcuda lacks cuStreamSynchronize")
	}
	c := &cLoop{t: t, f: getFrame(), ctx: ctx, loop: loop, launch: t.cuLaunchKernel, sync: sync, fn: fn, stream: stream}
	b.Cleanup(func() { putFrame(c.f) })
	c.run(1000)
	return c
}

// run launches n times from C with the context current on the thread, as
// anchor_cuda.c has it, waits for the stream, and returns the launches' time.
func (c *cLoop) run(n int) time.Duration {
	prev := enterCtx(c.t, c.f, c.ctx)
	c.f.c.A = [len(c.f.c.A)]uintptr{c.launch, c.sync, c.fn, c.stream, uintptr(n)}
	c.f.c.Fn = c.loop
	ns := c.f.c.Call()
	leaveCtx(c.t, c.f, c.ctx, prev)
	return time.Duration(ns)
}

// beside runs b.N rounds of C's chunk and goChunk's, reporting the Go
// path's mean time a launch as ns/op, C's as C-ns/op, and the median,
// least and most of the rounds' ratios.
func beside(b *testing.B, c *cLoop, goChunk func(n int) time.Duration) {
	b.ReportAllocs()
	b.ResetTimer()
	var ratios []float64
	var goSum, cSum time.Duration
	for i := 0; i < b.N; i++ {
		var g, cd time.Duration
		if i%2 == 0 {
			cd = c.run(besideChunk)
			g = goChunk(besideChunk)
		} else {
			g = goChunk(besideChunk)
			cd = c.run(besideChunk)
		}
		goSum += g
		cSum += cd
		ratios = append(ratios, float64(g)/float64(cd))
	}
	b.StopTimer()
	slices.Sort(ratios)
	n := float64(b.N) * besideChunk
	b.ReportMetric(float64(goSum)/n, "ns/op")
	b.ReportMetric(float64(cSum)/n, "C-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], "x-C")
	b.ReportMetric(ratios[0], "x-C-least")
	b.ReportMetric(ratios[len(ratios)-1], "x-C-most")
}

// BenchmarkGPULaunchBesideC is BenchmarkGPULaunch (Room + Submit) beside
// anchor_cuda.c's enqueue loop in the same process.
func BenchmarkGPULaunchBesideC(b *testing.B) {
	r := openRaw(b, Config{})
	e := r.entry("empty")
	c := newCLoop(b, r.d.t, r.d.ctx, e.Data.(*kernel).fn, r.d.streams[0])
	beside(b, c, driverChunk(r, e))
}

// BenchmarkGPURigLaunchBesideC is BenchmarkGPURigLaunch (Take, Threads,
// Submit) beside anchor_cuda.c's enqueue loop in the same process.
func BenchmarkGPURigLaunchBesideC(b *testing.B) {
	dev, d, fn := rigEmpty(b, Config{}, nil)
	c := newCLoop(b, d.t, d.ctx, fn.Entry().Data.(*kernel).fn, d.streams[0])
	s := submission(b, dev, rig.Launch(fn, 0))
	var err error
	beside(b, c, func(n int) time.Duration {
		var p rig.Point
		t0 := time.Now()
		for range n {
			run := s.Take()
			run.Threads(0, 32, 1, 1)
			if p, err = run.Submit(bg); err != nil {
				b.Fatal(err)
			}
		}
		el := time.Since(t0)
		if err := p.Wait(bg); err != nil {
			b.Fatal(err)
		}
		return el
	})
}

// BenchmarkGPUProbeBesideC weighs parts of the driver's share beside C:
// cuLaunchKernel alone through a frame, with no context current (call) or
// with the thread locked and the context current throughout
// (call-current), and Room + Submit beside a goroutine that asks CUDA
// about the streams each millisecond, as the supervisor's Sleep does
// (driver-query).
func BenchmarkGPUProbeBesideC(b *testing.B) {
	call := func(current bool) func(b *testing.B) {
		return func(b *testing.B) {
			r := openRaw(b, Config{})
			k := r.entry("empty").Data.(*kernel)
			c := newCLoop(b, r.d.t, r.d.ctx, k.fn, r.d.streams[0])
			f := getFrame()
			defer putFrame(f)
			beside(b, c, func(n int) time.Duration {
				var prev uintptr
				if current {
					prev = enterCtx(r.d.t, f, r.d.ctx)
				}
				t0 := time.Now()
				for range n {
					bareLaunch(f, r.d, k)
				}
				d := time.Since(t0)
				if current {
					leaveCtx(r.d.t, f, r.d.ctx, prev)
				}
				c.run(0)
				return d
			})
		}
	}
	b.Run("call", call(false))
	b.Run("call-current", call(true))
	b.Run("driver-query", func(b *testing.B) {
		r := openRaw(b, Config{})
		e := r.entry("empty")
		c := newCLoop(b, r.d.t, r.d.ctx, e.Data.(*kernel).fn, r.d.streams[0])
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tk := time.NewTicker(time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					_ = r.d.query()
				}
			}
		}()
		beside(b, c, driverChunk(r, e))
		close(stop)
		<-done
	})
}

// bareLaunch launches k (one group of 32 threads) on d's compute stream
// through f, with nothing around the call.
func bareLaunch(f *frame, d *gpu, k *kernel) {
	f.c.A = [len(f.c.A)]uintptr{k.fn, 1, 1, 1, 32, 1, 1, 0, d.streams[0], 0, 0}
	f.c.Fn = d.t.cuLaunchKernel
	f.c.Call()
}

// driverChunk is a turn of n one-launch values of e through r's Room and
// Submit, then a wait for the last.
func driverChunk(r *raw, e *device.Entry) func(n int) time.Duration {
	s := device.Submission{Parts: []device.Part{launch(e, 1, 32, nil)}}
	return func(n int) time.Duration {
		t0 := time.Now()
		for range n {
			r.next(&s)
		}
		d := time.Since(t0)
		r.wait(r.v)
		return d
	}
}

// nullSubmit is a device whose Submit and Commit only write the word, for
// BenchmarkGPURigNullCallBesideC.
type nullSubmit struct{ *gpu }

func (n nullSubmit) Submit(s *device.Submission) device.SubmitAnswer {
	atomic.StoreUint64(n.word, s.Value)
	return device.SubmitAnswer{Kind: device.Committed}
}

func (n nullSubmit) Commit(uint64) device.SubmitAnswer {
	return device.SubmitAnswer{Kind: device.Committed}
}

// BenchmarkGPURigNullCallBesideC is rig's Take and Submit on a device
// whose Submit does nothing, each followed by a bare cuLaunchKernel: what
// rig's own path, run between libcuda's calls, costs them.
func BenchmarkGPURigNullCallBesideC(b *testing.B) {
	dev, d, fn := rigEmpty(b, Config{}, func(d *gpu) device.Driver { return nullSubmit{d} })
	k := fn.Entry().Data.(*kernel)
	c := newCLoop(b, d.t, d.ctx, k.fn, d.streams[0])
	s := submission(b, dev, rig.Launch(fn, 0))
	f := getFrame()
	defer putFrame(f)
	beside(b, c, func(n int) time.Duration {
		t0 := time.Now()
		for range n {
			run := s.Take()
			run.Threads(0, 32, 1, 1)
			if _, err := run.Submit(bg); err != nil {
				b.Fatal(err)
			}
			bareLaunch(f, d, k)
		}
		el := time.Since(t0)
		c.run(0)
		return el
	})
}
