package nvdev

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// The GPU tests of several timelines of one GPU (RIG_GPU=1). The test
// cubin of kernels.cu has no kernel that reads a clock, so concurrency
// shows in how long a short kernel of one timeline takes while a kernel of
// the other spins: a few microseconds where the compute engine runs the
// two side by side, a timeslice or more where the scheduler takes turns.
// TestGPUTimelinesPair times kernels that spin on the GPU's clock
// (testdata/spin.sm_90.cubin).

// groupModes are the two ways of placing timelines: subcontexts of one
// channel group (the default), and channel groups of their own.
var groupModes = []struct {
	name string
	own  bool
}{{"subcontexts", false}, {"own groups", true}}

// twoTimelines opens timelines 0 and 1 of GPU 0 through rig.
func twoTimelines(t *testing.T, own bool) (a, b *rig.Device) {
	t.Helper()
	a = openNamed(t, Name(0, 0), Config{SharedGroup: !own})
	b = openNamed(t, Name(0, 1), Config{Timeline: 1, SharedGroup: !own})
	if fa, fb := a.Facts().FaultDomain, b.Facts().FaultDomain; own != (fa == "") || fa != fb {
		t.Fatalf("fault domains %q and %q", fa, fb)
	}
	return a, b
}

// flagWord is the 64-bit word at the start of b, for atomic access.
func flagWord(b *rig.Buffer) *uint64 { return (*uint64)(unsafe.Pointer(&b.Bytes()[0])) }

// TestGPUTimelinesShortBesideLong runs, 20 times, a kernel of one group
// (store64) on timeline 1 while a kernel of 8 groups spins on timeline 0
// until the host lets it end: the short kernel completes while the long
// one runs, in each placement, and the test logs how long it took, from
// submit to its point reached and on the GPU's own clock (its profile
// span), with the timelines in subcontexts of one group. (In groups of
// their own, the default, the GPU's scheduler time-slices the groups, and
// on the H200 the RM lost the spinning timeline with error 109, a context
// switch timeout: docs/nvdev.md.)
func TestGPUTimelinesShortBesideLong(t *testing.T) {
	needGPU(t)
	for _, m := range groupModes[:1] {
		t.Run(m.name, func(t *testing.T) {
			a, b := twoTimelines(t, m.own)
			spin := resolve(t, a, "spin_until")[0]
			store := resolve(t, b, "store64")[0]
			flag := allocBuf(t, a, device.PinnedMemory, 4096)
			dst := allocBuf(t, b, device.PinnedMemory, 4096)
			defer atomic.StoreUint64(flagWord(flag), 1)
			long, err := rig.NewSubmission(a, rig.Launch(spin, 8, rig.Read(0, 0)))
			if err != nil {
				t.Fatal(err)
			}
			short, err := rig.NewSubmission(b, rig.Launch(store, 16, rig.Write(0, 0)))
			if err != nil {
				t.Fatal(err)
			}
			b.SetTimed(true)
			var host, gpu []time.Duration
			for i := 1; i <= 20; i++ {
				atomic.StoreUint64(flagWord(flag), 0)
				r := long.Take()
				r.Groups(0, 8, 1, 1)
				r.Threads(0, 32, 1, 1)
				pa, err := r.Submit(bg, flag)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Millisecond) // the long kernel runs
				r = short.Take()
				binary.LittleEndian.PutUint64(r.Params(0)[8:], uint64(i))
				t0 := time.Now()
				pb, err := r.Submit(bg, dst)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(bg, 5*time.Second)
				err = pb.Wait(ctx)
				cancel()
				if err != nil {
					t.Fatalf("round %d: the short kernel did not complete while the long one spun: %v", i, err)
				}
				host = append(host, time.Since(t0))
				if pa.Reached() {
					t.Fatalf("round %d: the long kernel ended before the host let it", i)
				}
				if got := binary.LittleEndian.Uint64(dst.Bytes()); got != uint64(i) {
					t.Fatalf("round %d: the short kernel wrote %d", i, got)
				}
				atomic.StoreUint64(flagWord(flag), 1)
				ctx, cancel = context.WithTimeout(bg, 5*time.Second)
				err = pa.Wait(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				stamps, err := b.Settle(nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range stamps {
					if s.Value == pb.Value() {
						gpu = append(gpu, time.Duration(s.End-s.Start))
					}
				}
			}
			med := func(ds []time.Duration) time.Duration {
				if len(ds) == 0 {
					return 0
				}
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				return ds[len(ds)/2]
			}
			t.Logf("%s: a one-group kernel on %s beside a spinning kernel on %s: submit to reached %v median (max %v), its span on the GPU %v median, of %d",
				m.name, b.Name(), a.Name(), med(host), host[len(host)-1], med(gpu), len(host))
		})
	}
	noCUDA(t)
}

// TestGPUTimelinesOverlap runs a kernel of 8 groups on each of two
// timelines (subcontexts of one group), each spinning until the host sets
// its own flag: the second completes while the first still spins, so the
// two ran on the GPU at the same time, and the pair takes about one
// kernel's time, not two.
func TestGPUTimelinesOverlap(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t, false)
	const hold = 20 * time.Millisecond
	var ps [2]rig.Point
	var flags [2]*rig.Buffer
	t0 := time.Now()
	for i, dev := range []*rig.Device{a, b} {
		flags[i] = allocBuf(t, dev, device.PinnedMemory, 4096)
		defer atomic.StoreUint64(flagWord(flags[i]), 1)
		s, err := rig.NewSubmission(dev, rig.Launch(resolve(t, dev, "spin_until")[0], 8, rig.Read(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		r := s.Take()
		r.Groups(0, 8, 1, 1)
		r.Threads(0, 32, 1, 1)
		if ps[i], err = r.Submit(bg, flags[i]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // the first kernel runs
	}
	time.Sleep(hold)
	atomic.StoreUint64(flagWord(flags[1]), 1)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := ps[1].Wait(ctx); err != nil {
		t.Fatalf("%s's kernel did not end while %s's spun: %v", b.Name(), a.Name(), err)
	}
	if ps[0].Reached() {
		t.Fatalf("%s's kernel ended before the host let it", a.Name())
	}
	atomic.StoreUint64(flagWord(flags[0]), 1)
	if err := ps[0].Wait(ctx); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	t.Logf("%s's spinning kernel ended while %s's spun; the pair took %v with %v of holding", b.Name(), a.Name(), wall, hold)
	if wall >= 2*hold {
		t.Errorf("the pair took %v", wall)
	}
	noCUDA(t)
}

// spinCubin is testdata/spin.sm_90.cubin: spin_ns (testkernels.Spin), a
// kernel that spins on the GPU's nanosecond clock, which ptxas assembles
// from internal/testkernels/spin.ptx (internal/testkernels/build.sh).
func spinCubin(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "spin.sm_90.cubin"))
	if err != nil {
		t.Fatalf("%v: build it on a machine with CUDA, from the repository's root: ptxas -arch=sm_90 -o nvdev/testdata/spin.sm_90.cubin internal/testkernels/spin.ptx", err)
	}
	return b
}

// TestGPUTimelinesPair: two timelines (subcontexts of one channel group)
// each running a 1 ms kernel on 8 multiprocessors (spin_ns, 8 groups) run
// it side by side, the pair timed as the median of gputest.PairRounds
// rounds of both submitted back to back, from the first submit to both
// points reached. It logs one kernel's median alone on timeline 0 beside
// the pair's, and the pair's against the goal of 1.2 ms
// (gputest.TimelinePair).
func TestGPUTimelinesPair(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t, false)
	bin := spinCubin(t)
	fa := testutil.Functions(t, a, bin, "spin_ns")[0]
	fb := testutil.Functions(t, b, bin, "spin_ns")[0]
	gputest.TimelinePair(t, a, b, fa, fb)
	noCUDA(t)
}

// TestGPUTimelinesShared shares Device memory of timeline 0 with timeline
// 1 at its own address, and orders their work by its hazards on the GPU:
// timeline 1's submission returns while timeline 0's work it waits for is
// held back, and runs after it.
func TestGPUTimelinesShared(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t, false)
	const n = 1 << 16
	x := allocBuf(t, a, device.DeviceMemory, 4*n)
	host := allocBuf(t, a, device.PinnedMemory, 4*n)
	flag := allocBuf(t, a, device.PinnedMemory, 4096)
	defer atomic.StoreUint64(flagWord(flag), 1)
	for i := 0; i < n; i++ {
		putF32(host.Bytes(), i, float32(i))
	}
	spin := resolve(t, a, "spin_until")[0]
	twice := resolve(t, b, "twice")[0]
	s, err := rig.NewSubmission(a, rig.Launch(spin, 8, rig.Read(0, 0)), rig.Copy(1, 0, 2, 0, 4*n).On(0).After(0))
	if err != nil {
		t.Fatal(err)
	}
	pa, err := s.Take().Submit(bg, flag, host, x)
	if err != nil {
		t.Fatal(err)
	}
	s, err = rig.NewSubmission(b, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Take()
	r.Groups(0, n/256, 1, 1)
	r.Threads(0, 256, 1, 1)
	pb, err := r.Submit(bg, x)
	if err != nil {
		t.Fatal(err)
	}
	if pa.Reached() {
		t.Fatal("timeline 0's work ended before the host let it")
	}
	time.Sleep(20 * time.Millisecond)
	if pb.Reached() {
		t.Fatal("timeline 1's work ran before timeline 0's work it waits for")
	}
	atomic.StoreUint64(flagWord(flag), 1)
	submitWait(t, a, 10*time.Second, []rig.Part{rig.Copy(0, 0, 1, 0, 4*n)}, x, host)
	if !pb.Reached() {
		t.Fatal("timeline 0's copy after timeline 1's write completed first")
	}
	for i := 0; i < n; i += 97 {
		if got := f32(host.Bytes(), i); got != 2*float32(i) {
			t.Fatalf("x[%d] = %v, want %v", i, got, 2*float32(i))
		}
	}
	noCUDA(t)
}

// TestGPUTimelinesFault faults timeline 1: timeline 0, of the same group,
// is lost with it; with groups of their own, it runs on. Timeline 1 opens
// again while timeline 0 is open, and runs; the GPU opens again after.
func TestGPUTimelinesFault(t *testing.T) {
	needGPU(t)
	for _, m := range groupModes {
		t.Run(m.name, func(t *testing.T) {
			a := openNamed(t, Name(0, 0), Config{SharedGroup: !m.own, Hang: 10 * time.Second})
			b := openNamed(t, Name(0, 1), Config{Timeline: 1, SharedGroup: !m.own, Hang: 10 * time.Second})
			bufA := allocBuf(t, a, device.PinnedMemory, 4096)
			fn := resolve(t, b, "fault_illegal_address")[0]
			s, err := rig.NewSubmission(b, rig.Launch(fn, fn.Params(), rig.Write(0, 0)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, 30*time.Second)
			defer cancel()
			p, err := s.Take().Submit(ctx, allocBuf(t, b, device.PinnedMemory, 4096))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(ctx); !errors.Is(err, rig.ErrLost) {
				t.Fatalf("the fault answered %v", err)
			}
			time.Sleep(200 * time.Millisecond)
			s, err = rig.NewSubmission(a, rig.FillBytes(0, 0, 8, 1))
			if err != nil {
				t.Fatal(err)
			}
			pa, err := s.Take().Submit(ctx, bufA)
			if err == nil {
				err = pa.Wait(ctx)
			}
			t.Logf("%s: timeline 0 after timeline 1's fault: %v", m.name, err)
			if lost := errors.Is(err, rig.ErrLost); lost == m.own {
				t.Fatalf("%s: timeline 0 lost %v after timeline 1's fault: %v", m.name, lost, err)
			}
			// Timeline 1 opens again while timeline 0 is still open,
			// and runs: of the shared group, in a new group with a
			// fault domain of its own.
			b2 := openNamed(t, Name(0, 1), Config{Timeline: 1, SharedGroup: !m.own, Hang: 10 * time.Second})
			if d0, d1 := a.Facts().FaultDomain, b2.Facts().FaultDomain; !m.own && d1 == d0 {
				t.Errorf("timeline 1 opened after its group's fault names fault domain %q, as timeline 0 does", d1)
			}
			example(t, b2)
		})
	}
	again := openNamed(t, Name(0, 0), Config{})
	example(t, again)
	noCUDA(t)
}

// TestGPUTimelinesTakeTurns keeps four timelines of the shared group busy
// at once, 16 goroutines each submitting a kernel of about 15 µs (twice
// over 16 MiB) and waiting for it, for 500 ms: each timeline runs at
// least half the timelines' mean. The timelines' channels share the
// group's PBDMA, which stays on a channel while it has words unless a
// value's words end by passing it on: without that, on the H200, this
// test's timelines ran 16,038, 8,215, 3,095 and 15,104 kernels (with it
// 8,182 to 8,366), and with rigbench's four timelines of 16 submitters
// one or two timelines ran nearly every kernel and the others a few dozen
// in 2 s. With that, while every value of a device with waiters parked
// raised the non-stall interrupt, three runs of twelve still failed (one
// timeline ran 41 to 2,337 kernels): its word had reached every value
// submitted, its waiters were parked, and its supervisor, like most of
// the process's threads, stood still for about 100 ms at a time; with one
// value with the interrupt in flight (wake.go) twelve of twelve passed.
// It logs how many values raised the interrupt.
func TestGPUTimelinesTakeTurns(t *testing.T) {
	needGPU(t)
	const k, g, n = 4, 16, 4 << 20 // timelines, goroutines each, floats
	devs := make([]*rig.Device, k)
	gpus := make([]*gpu, k)
	for i := range devs {
		o := capture(gpuOpen(Config{Timeline: i, SharedGroup: true}), &gpus[i])
		o.Name = Name(0, i)
		dev, err := rig.Open(bg, o)
		if err != nil {
			t.Fatalf("open %s: %v", o.Name, err)
		}
		t.Cleanup(func() { closeDone(t, dev) })
		devs[i] = dev
	}
	var done [k]atomic.Int64
	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel()
	errs := make(chan error, k*g)
	for i, dev := range devs {
		x := allocBuf(t, dev, device.DeviceMemory, 4*n)
		twice := resolve(t, dev, "twice")[0]
		s, err := rig.NewSubmission(dev, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		for range g {
			go func() {
				for ctx.Err() == nil {
					r := s.Take()
					r.Groups(0, n/256, 1, 1)
					r.Threads(0, 256, 1, 1)
					p, err := r.Submit(bg, x)
					if err == nil {
						err = p.Wait(bg)
					}
					if err != nil {
						errs <- err
						return
					}
					done[i].Add(1)
				}
				errs <- nil
			}()
		}
	}
	for range k * g {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var ran [k]int64
	var sum int64
	for i := range ran {
		ran[i] = done[i].Load()
		sum += ran[i]
	}
	var intrs [k]uint64
	for i, d := range gpus {
		intrs[i] = d.wk.intrs.Load()
	}
	t.Logf("in 500 ms the timelines ran %v kernels; values with the interrupt %v", ran, intrs)
	for i, c := range ran {
		if c < sum/k/2 {
			t.Fatalf("timeline %d ran %d kernels of %d: the timelines did not take turns", i, c, sum)
		}
	}
	noCUDA(t)
}

// TestGPUTimelinesInOrder: on each of two timelines of the shared group,
// whose compute channels run on the group's two runqueues, 100 launches
// of twice over the same 256 floats, submitted back to back and waited
// for once: 2^-100 doubled 100 times is 1 exactly only where each launch
// ran after the one before it completed, 20 rounds.
func TestGPUTimelinesInOrder(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t, false)
	devs := []*rig.Device{a, b}
	var subs [2]*rig.Submission
	for i, dev := range devs {
		subs[i] = testutil.Submission(t, dev, rig.Launch(resolve(t, dev, "twice")[0], 8, rig.ReadWrite(0, 0)))
	}
	for round := range 20 {
		var xs [2]*rig.Buffer
		var last [2]rig.Point
		for i, dev := range devs {
			xs[i] = allocBuf(t, dev, device.PinnedMemory, 4*256)
			for k := range 256 {
				putF32(xs[i].Bytes(), k, float32(math.Ldexp(1, -100)))
			}
		}
		for i := range devs {
			for range 100 {
				r := subs[i].Take()
				r.Groups(0, 1, 1, 1)
				r.Threads(0, 256, 1, 1)
				p, err := r.Submit(bg, xs[i])
				if err != nil {
					t.Fatal(err)
				}
				last[i] = p
			}
		}
		for i, dev := range devs {
			if err := last[i].Wait(bg); err != nil {
				t.Fatal(err)
			}
			for k := range 256 {
				if got := f32(xs[i].Bytes(), k); got != 1 {
					t.Fatalf("round %d, %s: x[%d] = %v after 100 doublings of 2^-100, want 1", round, dev.Name(), k, got)
				}
			}
			if err := xs[i].Free(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestGPUTimelinesAfter: a run of timeline 1 ordered after a point of
// timeline 0 with Run.After, and no buffer in common, starts on the GPU
// once timeline 0's kernel ended (gputest.RunAfter), with the timelines in
// subcontexts of one group and in groups of their own.
func TestGPUTimelinesAfter(t *testing.T) {
	needGPU(t)
	for _, m := range groupModes {
		t.Run(m.name, func(t *testing.T) {
			a, b := twoTimelines(t, m.own)
			bin := spinCubin(t)
			fa := testutil.Functions(t, a, bin, "spin_ns")[0]
			fb := testutil.Functions(t, b, bin, "spin_ns")[0]
			gputest.RunAfter(t, a, b, fa, fb)
			noCUDA(t)
		})
	}
}
