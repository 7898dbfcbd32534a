package cudadev

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testkernels"
	rig "github.com/rig-go/rig/runtime"
)

// The GPU tests of several timelines of one GPU (RIG_GPU=1).

// twoTimelines opens timelines 0 and 1 of GPU 0 through rig.
func twoTimelines(t *testing.T) (a, b *rig.Device) {
	t.Helper()
	a, b = openRigWith(t, Timeline(0, 0)), openRigWith(t, Timeline(0, 1))
	if a.Name() != "CUDA" || b.Name() != "CUDA/1" {
		t.Fatalf("the timelines are named %q and %q", a.Name(), b.Name())
	}
	if a.Facts().Bus != b.Facts().Bus || a.Facts().FaultDomain != "cuda" || b.Facts().FaultDomain != "cuda" {
		t.Fatalf("facts: %+v and %+v", a.Facts(), b.Facts())
	}
	return a, b
}

// TestGPUTimelinesOverlap runs a kernel of 8 groups that spins 20 ms on
// each of two timelines of GPU 0, at once: the kernels' own clocks and
// the profile's spans overlap, and the pair takes about one kernel's time,
// not two.
func TestGPUTimelinesOverlap(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t)
	const spin = 20 * time.Millisecond
	type tl struct {
		dev  *rig.Device
		out  *rig.Buffer
		run  *rig.Run
		p    rig.Point
		span device.Stamp
	}
	tls := []*tl{{dev: a}, {dev: b}}
	for _, x := range tls {
		img, err := x.dev.LoadImage(testkernels.Spin())
		if err != nil {
			t.Fatal(err)
		}
		fn := resolve(t, img, "spin_ns")
		x.out = alloc(t, x.dev, device.PinnedMemory, 16)
		x.run = submission(t, x.dev, rig.Launch(fn, 16, rig.Write(0, 0))).Take()
		x.run.Groups(0, 8, 1, 1)
		x.run.Threads(0, 32, 1, 1)
		binary.LittleEndian.PutUint64(x.run.Params(0)[8:], uint64(spin))
		x.dev.SetTimed(true)
	}
	start := time.Now()
	for _, x := range tls {
		p, err := x.run.Submit(bg, x.out)
		if err != nil {
			t.Fatal(err)
		}
		x.p = p
	}
	wctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if err := rig.WaitAll(wctx, tls[0].p, tls[1].p); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	for _, x := range tls {
		stamps, err := x.dev.Settle(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stamps {
			if s.Value == x.p.Value() {
				x.span = s
			}
		}
		if x.span.End == 0 {
			t.Fatalf("%s: no stamp of value %d in %v", x.dev.Name(), x.p.Value(), stamps)
		}
	}
	ka := [2]uint64{binary.LittleEndian.Uint64(tls[0].out.Bytes()), binary.LittleEndian.Uint64(tls[0].out.Bytes()[8:])}
	kb := [2]uint64{binary.LittleEndian.Uint64(tls[1].out.Bytes()), binary.LittleEndian.Uint64(tls[1].out.Bytes()[8:])}
	sa, sb := tls[0].span, tls[1].span
	t.Logf("wall %v for two kernels of %v; kernels' clocks: A %d..%d, B %d..%d (overlap %v); spans: A %v, B %v (overlap %v)",
		wall, spin, ka[0], ka[1], kb[0], kb[1], time.Duration(min(ka[1], kb[1])-max(ka[0], kb[0])),
		time.Duration(sa.End-sa.Start), time.Duration(sb.End-sb.Start), time.Duration(min(sa.End, sb.End)-max(sa.Start, sb.Start)))
	if !(ka[0] < kb[1] && kb[0] < ka[1]) {
		t.Errorf("the kernels ran one after the other: A %d..%d, B %d..%d", ka[0], ka[1], kb[0], kb[1])
	}
	if !(sa.Start < sb.End && sb.Start < sa.End) {
		t.Errorf("the profile's spans do not overlap: A %+v, B %+v", sa, sb)
	}
	if wall >= 2*spin {
		t.Errorf("the pair took %v, two kernels' time or more (%v each)", wall, spin)
	}
}

// TestGPUTimelinesPair: two timelines each running a 1 ms kernel on 8
// multiprocessors (the PTX spin_ns, 8 groups) run it side by side, the
// pair timed as the median of gputest.PairRounds rounds of both submitted
// back to back, from the first submit to both points reached. It logs one
// kernel's median alone on timeline 0 beside the pair's, and the pair's
// against the goal of 1.2 ms (gputest.TimelinePair).
func TestGPUTimelinesPair(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t)
	fns := spinFns(t, a, b)
	gputest.TimelinePair(t, a, b, fns[0], fns[1])
}

// TestGPUTimelinesShortBesideLong runs a short kernel on timeline 1 while
// a kernel on timeline 0 spins until the host lets it end: the short one
// completes first, each of 20 times, and the test logs how long it took.
func TestGPUTimelinesShortBesideLong(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t)
	imgA, err := a.LoadImage(kernels(t, a.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	imgB, err := b.LoadImage(kernels(t, b.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	flag := alloc(t, a, device.PinnedMemory, 8)
	dst := alloc(t, b, device.PinnedMemory, 8)
	t.Cleanup(func() { setFlag(flag.Bytes()) })
	long := submission(t, a, rig.Launch(resolve(t, imgA, "spin_until"), 8, rig.Read(0, 0)))
	short := submission(t, b, rig.Launch(resolve(t, imgB, "store64"), 16, rig.Write(0, 0)))
	var lat []time.Duration
	for i := 1; i <= 20; i++ {
		atomic.StoreUint64(word64(flag.Bytes(), 0), 0)
		r := long.Take()
		r.Groups(0, 8, 1, 1)
		r.Threads(0, 32, 1, 1)
		pa, err := r.Submit(bg, flag)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // the long kernel is running
		r = short.Take()
		binary.LittleEndian.PutUint64(r.Params(0)[8:], uint64(i))
		start := time.Now()
		pb, err := r.Submit(bg, dst)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(bg, 5*time.Second)
		err = pb.Wait(wctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: the short kernel on %s did not complete while the long one ran on %s: %v", i, b.Name(), a.Name(), err)
		}
		lat = append(lat, time.Since(start))
		if pa.Reached() {
			t.Fatalf("round %d: the long kernel ended before the host let it", i)
		}
		if got := binary.LittleEndian.Uint64(dst.Bytes()); got != uint64(i) {
			t.Fatalf("round %d: the short kernel wrote %d", i, got)
		}
		setFlag(flag.Bytes())
		wctx, cancel = context.WithTimeout(bg, 5*time.Second)
		err = pa.Wait(wctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("a short kernel on %s beside a spinning kernel on %s: submit to reached %v median, %v max of %d",
		b.Name(), a.Name(), lat[len(lat)/2], lat[len(lat)-1], len(lat))
}

// TestGPUTimelinesShared shares memory of timeline 0 with timeline 1 at
// the same address, with no mapping, and orders work across the two by
// its hazards, waited on the GPU: timeline 1's submission returns while
// timeline 0's work it waits for is held back, and runs after it.
func TestGPUTimelinesShared(t *testing.T) {
	needGPU(t)
	ra, rb := openRaw(t, Config{}), openRaw(t, Config{Timeline: 1})
	if !rb.d.Peer(ra.d) || !ra.d.Peer(rb.d) {
		t.Fatal("two timelines of one GPU are not peers")
	}
	reg := ra.alloc(device.DeviceMemory, 4096)
	v, err := rb.d.MapPeer(ra.d, reg)
	if err != nil {
		t.Fatal(err)
	}
	if got := rb.d.Locate(v).Address; got != reg.loc.Address {
		t.Fatalf("timeline 1 sees timeline 0's memory at %#x, not %#x", got, reg.loc.Address)
	}
	if err := rb.d.Free(v); err != nil {
		t.Fatal(err)
	}
	rb.close()
	ra.close()

	a, b := twoTimelines(t)
	if !b.Facts().Waits.Has(device.WaitStores) || a.Word() == nil {
		t.Fatal("the timelines cannot wait on each other's words on the GPU")
	}
	imgA, err := a.LoadImage(kernels(t, a.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	imgB, err := b.LoadImage(kernels(t, b.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 16
	x := alloc(t, a, device.DeviceMemory, 4*n)
	host := alloc(t, a, device.PinnedMemory, 4*n)
	flag := alloc(t, a, device.PinnedMemory, 8)
	t.Cleanup(func() { setFlag(flag.Bytes()) })
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(host.Bytes()[4*i:], math.Float32bits(float32(i)))
	}
	// A: spin until the host lets it, then copy the floats into x.
	r := submission(t, a, rig.Launch(resolve(t, imgA, "spin_until"), 8, rig.Read(0, 0)), rig.Copy(1, 0, 2, 0, 4*n).On(0).After(0)).Take()
	pa, err := r.Submit(bg, flag, host, x)
	if err != nil {
		t.Fatal(err)
	}
	// B doubles x: its submission returns at once, its work waits on the GPU.
	r = submission(t, b, rig.Launch(resolve(t, imgB, "twice"), 8, rig.ReadWrite(0, 0))).Take()
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
		t.Fatal("timeline 1's work ran before timeline 0's work that it waits for")
	}
	setFlag(flag.Bytes())
	// A copies x back: it waits for B's write.
	pc, err := submission(t, a, rig.Copy(0, 0, 1, 0, 4*n)).Take().Submit(bg, x, host)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if err := rig.WaitAll(wctx, pb, pc); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 97 {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(host.Bytes()[4*i:])); got != 2*float32(i) {
			t.Fatalf("x[%d] = %v, want %v", i, got, 2*float32(i))
		}
	}
}

// TestGPUTimelinesFault faults timeline 1 of GPU 0 in a child process:
// timeline 0 is lost with it, and neither opens again.
func TestGPUTimelinesFault(t *testing.T) {
	needGPU(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUTimelinesFaultChild$", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "CUDADEV_TIMELINE_FAULT=1", "RIG_GPU=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "timeline-fault-child: ok") {
		t.Fatalf("the child answered %v:\n%s", err, out)
	}
}

func TestGPUTimelinesFaultChild(t *testing.T) {
	if os.Getenv("CUDADEV_TIMELINE_FAULT") == "" {
		t.Skip("run by TestGPUTimelinesFault")
	}
	needGPU(t)
	a, err := rig.Open(bg, Timeline(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rig.Open(bg, Timeline(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	img, err := b.LoadImage(kernels(t, b.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	buf := alloc(t, b, device.DeviceMemory, 4096)
	p, err := submission(t, b, rig.Launch(resolve(t, img, "fault_illegal_address"), 8, rig.Write(0, 0))).Take().Submit(bg, buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(bg); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the fault answered %v", err)
	}
	wctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	err = a.Last().Wait(wctx)
	for err == nil && wctx.Err() == nil {
		_, err = a.Alloc(device.DeviceMemory, 4096)
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, rig.ErrLost) {
		t.Fatalf("timeline 0 was not lost with timeline 1: %v", err)
	}
	println("timeline-fault-child: timeline 0:", err.Error())
	_ = a.Close()
	_ = b.Close()
	<-a.Done()
	<-b.Done()
	for k := range 3 {
		if _, err := rig.Open(bg, Timeline(0, k)); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_") {
			t.Fatalf("timeline %d opened again after the fault: %v", k, err)
		}
	}
	println("timeline-fault-child: ok")
}

// TestGPUTimelinesAfter: a run of timeline 1 ordered after a point of
// timeline 0 with Run.After, and no buffer in common, starts on the GPU
// once timeline 0's kernel ended (gputest.RunAfter).
func TestGPUTimelinesAfter(t *testing.T) {
	needGPU(t)
	a, b := twoTimelines(t)
	fns := spinFns(t, a, b)
	gputest.RunAfter(t, a, b, fns[0], fns[1])
}

// spinFns loads spin_ns (testkernels.Spin) on a and on b and resolves it.
func spinFns(t *testing.T, a, b *rig.Device) [2]*rig.Function {
	t.Helper()
	var fns [2]*rig.Function
	for i, dev := range []*rig.Device{a, b} {
		img, err := dev.LoadImage(testkernels.Spin())
		if err != nil {
			t.Fatal(err)
		}
		fns[i] = resolve(t, img, "spin_ns")
	}
	return fns
}
