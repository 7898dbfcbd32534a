package nvdev

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
)

// Benchmarks that weigh the driver's choices on the GPU (RIG_GPU=1): where
// the rings the host writes lie, and what a linked launch's descriptor
// asks of the compute engine. They have no anchor of their own: each runs
// beside its default in one run, and docs/nvdev.md quotes them.

// places are the placements of the rings the host writes that
// BenchmarkGPUPlace weighs.
var places = []struct {
	name string
	c    Config
}{
	{"mapped", Config{}},
	{"segments", Config{PinnedSegments: true}},
	{"ring", Config{pin: pinRing}},
	{"launch", Config{pin: pinLaunch}},
	{"ring+segments", Config{pin: pinRing, PinnedSegments: true}},
	{"launch+segments", Config{pin: pinLaunch, PinnedSegments: true}},
	{"all", Config{PinnedRings: true}},
}

// BenchmarkGPUPlace is, for each placement, values of one launch of empty
// back to back (benchChained: the host's cost or the GPU's, whichever is
// more), the same values while the GPU alone runs them (benchHeld), and the
// round trip of one (benchRoundTrip).
func BenchmarkGPUPlace(b *testing.B) {
	for _, p := range places {
		b.Run(p.name+"/chained", func(b *testing.B) { benchChained(b, p.c, 1) })
		b.Run(p.name+"/held", func(b *testing.B) { benchHeld(b, p.c, 1) })
		b.Run(p.name+"/roundtrip", func(b *testing.B) { benchRoundTrip(b, p.c) })
	}
}

// BenchmarkGPUHeld is the GPU's own time for a value: values submitted
// while the compute channel waits for a word the host then writes, timed
// from that write until the word reaches the last. Sub-benchmarks: values
// of no parts, of one launch of empty (released by the launch, or by the
// channel), and of eight linked launches (an op is a value).
func BenchmarkGPUHeld(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchHeld(b, Config{}, 0) })
	b.Run("launch", func(b *testing.B) { benchHeld(b, Config{}, 1) })
	b.Run("launch-release", func(b *testing.B) { benchHeld(b, Config{NoOwnRelease: true}, 1) })
	b.Run("launch8", func(b *testing.B) { benchHeld(b, Config{}, 8) })
}

// heldBatch is the most values held at once: within the launch ring and
// the segment rings benchHeld asks for.
const heldBatch = 2048

// benchHeld submits the values of b.N launches of k launches of empty each
// (no parts where k is 0) in batches of heldBatch behind a value that waits
// for a word of rig's array, then writes the word: the clock runs from the
// write until the device's word reaches the batch's last value.
func benchHeld(b *testing.B, c Config, k int) {
	c.LaunchBytes = max(c.LaunchBytes, 32<<20)
	c.SegmentBytes = max(c.SegmentBytes, 4<<20)
	r := benchRaw(b, c)
	flag := takeWord(b)
	e := r.entry("empty")
	parts := make([]device.Part, k)
	for i := range parts {
		parts[i] = launch(e, 1, 32, nil)
	}
	s := device.Submission{Parts: parts}
	hold := device.Submission{Waits: []device.Wait{{Word: flag}}}
	for range 100 {
		rawValue(r, &s)
	}
	spin(r)
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for done := 0; done < b.N; {
		n := min(b.N-done, heldBatch)
		next := atomic.LoadUint64(flag) + 1
		hold.Waits[0].Value = next
		rawValue(r, &hold)
		for range n {
			rawValue(r, &s)
		}
		b.StartTimer()
		atomic.StoreUint64(flag, next)
		if r.f != nil {
			r.wait(r.v) // the fake runs the released channel as it is pumped
		}
		spin(r)
		b.StopTimer()
		done += n
	}
}

// BenchmarkGPULink is BenchmarkGPUChained1000 (linked launches, an op is a
// kernel) and BenchmarkGPUHeld of 8 launches a value with the descriptor's
// choices changed one by one: the dependent not prefetched, constant bank
// 0 not prefetched, the system's membar at the end of every launch (not
// only the last of a chain), the GPU's at the end of every launch (the
// last too), and none.
func BenchmarkGPULink(b *testing.B) {
	for _, t := range linkConfigs {
		b.Run(t.name, func(b *testing.B) { benchChained(b, t.c, 1000) })
		b.Run(t.name+"/held8", func(b *testing.B) { benchHeld(b, t.c, 8) })
	}
}

// linkConfigs are the descriptor's choices BenchmarkGPULink and
// BenchmarkGPUBank weigh.
var linkConfigs = []struct {
	name string
	c    Config
}{
	{"default", Config{}},
	{"no-prefetch", Config{noDepPrefetch: true}},
	{"no-bank-prefetch", Config{tweak: func(q hw.Qmd) { q.L.ConstantBuffers[0].Prefetch.Set(q.W, 0) }}},
	{"system-membar", Config{tweak: membar(hw.CwdMembarL1Sysmembar, 0)}},
	{"gpu-membar", Config{tweak: membar(hw.CwdMembarL1Membar, 1)}},
	{"no-membar", Config{tweak: membar(hw.CwdMembarL1None, 0)}},
}

// membar gives every launch the membar of type v at its end, chased task
// by task where chase is 1 and the version can.
func membar(v, chase uint64) func(q hw.Qmd) {
	return func(q hw.Qmd) {
		q.L.CwdMembarType.Set(q.W, v)
		q.L.CwdMembarTaskChasing.Set(q.W, chase)
	}
}

// BenchmarkGPUPcas weighs the SEND_SIGNALING_PCAS2_B action of a launch
// that is not linked on values of one launch: the GPU's time for a held
// value and the driver's round trip. (Action 0xb,
// INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING, never ran the launch
// on the H200.)
func BenchmarkGPUPcas(b *testing.B) {
	for _, t := range []struct {
		name string
		pcas uint32
	}{
		{"default", 0},
		{"invalidate-copy-schedule", hw.PcasInvalidateCopySchedule},
		{"prefetch-schedule", hw.PcasPrefetchSchedule},
	} {
		c := Config{pcas: t.pcas}
		b.Run(t.name+"/held", func(b *testing.B) { benchHeld(b, c, 1) })
		b.Run(t.name+"/round-trip", func(b *testing.B) { benchRoundTrip(b, c) })
	}
}

// BenchmarkGPUNoFlush weighs the flush word's read (Config.noFlush):
// values of one launch back to back, the host's Take + Submit, and the
// round trips.
func BenchmarkGPUNoFlush(b *testing.B) {
	for _, t := range []struct {
		name string
		c    Config
	}{{"default", Config{}}, {"no-flush", Config{noFlush: true}}} {
		b.Run(t.name+"/chained", func(b *testing.B) { benchChained(b, t.c, 1) })
		b.Run(t.name+"/rig-launch", func(b *testing.B) { benchRigLaunch(b, t.c) })
		b.Run(t.name+"/round-trip", func(b *testing.B) { benchRoundTrip(b, t.c) })
		b.Run(t.name+"/rig-round-trip", func(b *testing.B) { benchRigRoundTrip(b, t.c) })
	}
}

// BenchmarkGPUBank weighs linkConfigs on values of one launch: the GPU's
// time for a held value, values back to back, and the round trips.
func BenchmarkGPUBank(b *testing.B) {
	for _, t := range linkConfigs {
		b.Run(t.name+"/held", func(b *testing.B) { benchHeld(b, t.c, 1) })
		b.Run(t.name+"/chained", func(b *testing.B) { benchChained(b, t.c, 1) })
		b.Run(t.name+"/round-trip", func(b *testing.B) { benchRoundTrip(b, t.c) })
		b.Run(t.name+"/rig-round-trip", func(b *testing.B) { benchRigRoundTrip(b, t.c) })
	}
}

// heldConfigs are the configurations TestGPUHeldTwice runs.
var heldConfigs = []struct {
	name string
	c    Config
}{
	{"default", Config{}},
	{"unlinked", Config{NoLinkLaunches: true}},
	{"no-prefetch", Config{noDepPrefetch: true}},
	{"pinned-rings", Config{PinnedRings: true}},
	{"pinned-rings-unlinked", Config{PinnedRings: true, NoLinkLaunches: true}},
	{"system-membar", Config{tweak: membar(hw.CwdMembarL1Sysmembar, 0)}},
}

// TestGPUHeldTwice holds the compute channel on a word the host writes,
// queues 80 values of twice on one float, then 4 values of 10 launches of
// twice (linked where the configuration links them), and a value of a
// copy of the float and a launch of twice on the copy, and releases them:
// each launch must see the one before it, so the float comes out 2^120
// and its copy 2^121.
func TestGPUHeldTwice(t *testing.T) {
	for _, hc := range heldConfigs {
		t.Run(hc.name, func(t *testing.T) {
			c := hc.c
			c.LaunchBytes = 8 << 20
			r := benchRaw(t, c)
			if r.f != nil {
				cc, err := hw.Parse(cubin(t))
				if err != nil {
					t.Fatal(err)
				}
				k, _ := cc.Kernel("twice")
				r.f.twice(k.ParamOffset)
			}
			flag := takeWord(t)
			tw := r.entry("twice")
			x := r.alloc(device.PinnedMemory, 4096)
			putF32(hostOf(x), 0, 1)
			next := atomic.LoadUint64(flag) + 1
			r.submit([]device.Wait{{Word: flag, Value: next}})
			one := launch(tw, 1, 1, u64s(x.Address))
			for range 80 {
				r.submit(nil, one)
			}
			ten := make([]device.Part, 10)
			for i := range ten {
				ten[i] = one
			}
			for range 4 {
				r.submit(nil, ten...)
			}
			r.submit(nil, copyPart(qCompute, x, x, 0, 64, 4), launch(tw, 1, 1, u64s(x.Address+64)))
			if got := f32(hostOf(x), 0); got != 1 {
				t.Fatalf("x = %v while the channel is held", got)
			}
			t0 := time.Now()
			atomic.StoreUint64(flag, next)
			r.wait(r.v)
			if got, got2 := f32(hostOf(x), 0), f32(hostOf(x), 16); got != float32(math.Pow(2, 120)) || got2 != float32(math.Pow(2, 121)) {
				t.Fatalf("x = %v and its copy %v after 120 doublings, want 2^120 and 2^121", got, got2)
			}
			t.Logf("86 values, 121 doublings, in %v", time.Since(t0))
		})
	}
}

// TestHeldTwiceOnFake runs TestGPUHeldTwice on the fake.
func TestHeldTwiceOnFake(t *testing.T) {
	benchRaw = func(tb testing.TB, c Config) *raw { return openRaw(tb, c) }
	defer func() { benchRaw = openGPURaw }()
	TestGPUHeldTwice(t)
}
