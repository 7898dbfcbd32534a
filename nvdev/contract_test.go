package nvdev

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestFacts checks what a device on a path that maps host memory declares:
// the path's budget, cache, bus and hang bound, the two queues with the
// copy engine on COPY:0, a word the channels store, GPU-side waits on
// stores and hosts, no blocking, Device memory the host does not address,
// and regions aligned to whole pages.
func TestFacts(t *testing.T) {
	r := openRaw(t, Config{})
	f := r.d.Facts()
	if f.Arch != "sm_90" || f.Budget != r.f.Budget() || f.CacheBytes != r.f.CacheBytes() || f.Bus != r.f.Bus() || f.HangMs != r.f.HangMs() {
		t.Errorf("arch %q, budget %d, cache %d, bus %q, hang %d ms", f.Arch, f.Budget, f.CacheBytes, f.Bus, f.HangMs)
	}
	if !slices.Equal(f.Queues, []string{"COMPUTE:0", "COPY:0"}) || f.CopyEngine != qCopy {
		t.Errorf("queues %q, copy engine %d", f.Queues, f.CopyEngine)
	}
	if f.Completion != device.Store || f.MayBlock || f.OnHost {
		t.Errorf("completion %v, may block %v, on host %v", f.Completion, f.MayBlock, f.OnHost)
	}
	if !f.MapsHost || f.HostAddresses || f.Alignment != 4096 || f.Capability != hw.Key {
		t.Errorf("maps host %v, host addresses %v, alignment %d, capability %v", f.MapsHost, f.HostAddresses, f.Alignment, f.Capability)
	}
	if f.Word == nil || f.Word != r.d.word || f.OwnWord != nil || f.Waits != device.WaitStores|device.WaitHosts {
		t.Errorf("word %p (the device's %p), own word %v, waits %v", f.Word, r.d.word, f.OwnWord, f.Waits)
	}
	if g, ok := r.d.Capability().(*hw.Gpu); !ok || g.SMs() != 8*9*2 || g.Windows.Local == 0 {
		t.Errorf("capability %+v", r.d.Capability())
	}
}

// noHostPath is the fake as a path that maps no host memory.
type noHostPath struct{ *fake }

func (noHostPath) MapsHost() bool { return false }

// TestNoHostMaps opens a device on a path that maps no host memory: its
// word is eight bytes of its own Pinned memory that start at the given
// word's value, it declares no GPU-side waits, MapHost answers ErrNever,
// and its work runs and moves its own word.
func TestNoHostMaps(t *testing.T) {
	f := newFake()
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint64(w, 77)
	d, err := makeDevice(w, noHostPath{f}, fakeRM{f}, Config{})
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	r := &raw{t: t, f: f, d: d, slot: slot, v: 77}
	t.Cleanup(r.close)
	fs := d.Facts()
	if fs.MapsHost || fs.Word != nil || fs.OwnWord == nil || fs.Waits != 0 || d.Signaled() != 77 || d.word == w {
		t.Errorf("maps host %v, word %p, own word %v, waits %v, signaled %d", fs.MapsHost, fs.Word, fs.OwnWord, fs.Waits, d.Signaled())
	}
	if _, err := d.MapHost(0x10000, 4096); !errors.Is(err, device.ErrNever) {
		t.Errorf("MapHost on a path that maps no host memory: %v", err)
	}
	m := r.alloc(device.PinnedMemory, 4096)
	r.wait(r.submit(nil, fillPart(qCopy, m, 0, 8, 5)))
	if hostOf(m)[7] != 5 || d.Signaled() != 78 || atomic.LoadUint64(w) != 77 {
		t.Errorf("the fill wrote %d, the own word reads %d, rig's %d", hostOf(m)[7], d.Signaled(), atomic.LoadUint64(w))
	}
}

// TestAllocEmpty refuses an allocation or a host mapping of fewer than one
// byte with an error that names the size, having made nothing.
func TestAllocEmpty(t *testing.T) {
	r := openRaw(t, Config{})
	live := r.f.live()
	for _, k := range []device.Memory{device.DeviceMemory, device.PinnedMemory, device.MappedMemory} {
		for _, n := range []int{0, -4} {
			if _, err := r.d.Alloc(k, n); err == nil || !strings.Contains(err.Error(), "at least one byte") {
				t.Errorf("alloc of %d bytes of %v memory: %v", n, k, err)
			}
		}
	}
	if _, err := r.d.MapHost(0x10000, 0); err == nil || !strings.Contains(err.Error(), "at least one byte") {
		t.Errorf("MapHost of 0 bytes: %v", err)
	}
	if n := r.f.live(); n != live {
		t.Errorf("%d memories, then %d", live, n)
	}
}

// TestSleepPathReport has the path report a failure of the GPU: Sleep
// raises it as it starts to wait, also when a notifier holds an error, and
// every later Sleep raises the same fault.
func TestSleepPathReport(t *testing.T) {
	for _, notifier := range []bool{false, true} {
		r := openRaw(t, Config{})
		r.f.pause()
		v := r.submit(nil)
		if notifier {
			r.f.fail(r.f.chans[0], 31)
		}
		r.f.mu.Lock()
		r.f.checkErr = &device.Fault{Why: "fake: the GPU fell off the bus"}
		r.f.mu.Unlock()
		err := r.d.Sleep(r.d.Signaled(), 10*time.Millisecond)
		f, ok := device.AsFault(err)
		if !ok || !strings.Contains(f.Why, "fell off the bus") {
			t.Fatalf("notifier %v: Sleep: %v", notifier, err)
		}
		r.f.mu.Lock()
		r.f.checkErr = nil
		r.f.mu.Unlock()
		if err2 := r.d.Sleep(r.d.Signaled(), 0); err2 != error(f) {
			t.Errorf("notifier %v: the second Sleep: %v", notifier, err2)
		}
		r.f.resume()
		if err := r.d.Stop(f.Why); err != nil {
			t.Fatal(err)
		}
		if got := r.d.Signaled(); got != v {
			t.Errorf("notifier %v: after stop the word reads %d, want %d", notifier, got, v)
		}
	}
}

// TestSleepWordMoved: Sleep returns at once where the word already
// differs from seen, rather than sleeping its bound of an hour.
func TestSleepWordMoved(t *testing.T) {
	r := openRaw(t, Config{})
	r.wait(r.submit(nil))
	slept := make(chan error, 1)
	go func() { slept <- r.d.Sleep(r.d.Signaled()-1, time.Hour) }()
	select {
	case err := <-slept:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		// A bound on a sleep of an hour, not a measure of speed.
		t.Fatal("Sleep on a word that differs from seen sleeps its bound")
	}
}

// TestNotifierLinesDistinct: the fault of the notifiers has one line for
// each distinct error, whichever channels hold it.
func TestNotifierLinesDistinct(t *testing.T) {
	for _, c := range []struct {
		name   string
		errs   [2]uint32
		prefix []string
	}{
		{"one error on both", [2]uint32{31, 31}, []string{"error 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT) on the COMPUTE channel"}},
		{"two errors", [2]uint32{31, 13}, []string{"error 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT) on the COMPUTE channel",
			"error 13 (ROBUST_CHANNEL_GR_EXCEPTION) on the COPY channel"}},
	} {
		r := openRaw(t, Config{})
		r.f.pause()
		v := r.submit(nil)
		r.f.fail(r.f.chans[0], c.errs[0])
		r.f.fail(r.f.chans[1], c.errs[1])
		f, ok := device.AsFault(r.d.Sleep(r.d.Signaled(), 10*time.Millisecond))
		if !ok || len(f.Detail) != len(c.prefix) {
			t.Fatalf("%s: the fault %+v, want %d lines", c.name, f, len(c.prefix))
		}
		for i, p := range c.prefix {
			if !strings.HasPrefix(f.Detail[i], p) {
				t.Errorf("%s: line %d %q, want %q first", c.name, i, f.Detail[i], p)
			}
		}
		if err := r.d.Stop(f.Why); err != nil {
			t.Fatal(err)
		}
		if got := r.d.Signaled(); got != v {
			t.Errorf("%s: after stop the word reads %d, want %d", c.name, got, v)
		}
	}
}

// TestEntryOnce: a second Entry of a function returns the first's and
// makes nothing; a function the image lacks is ErrAbsent; Prepare starts
// nothing; an unloaded image has no entries.
func TestEntryOnce(t *testing.T) {
	r := openRaw(t, Config{})
	code, err := r.d.Image(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	img, err := code.Lay(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := r.d.Entry(img, "twice")
	if err != nil {
		t.Fatal(err)
	}
	live := r.f.live()
	if err := r.d.Prepare(img, "twice"); err != nil {
		t.Errorf("prepare: %v", err)
	}
	if e2, err := r.d.Entry(img, "twice"); err != nil || e2 != e {
		t.Errorf("a second entry: %p, %v; the first %p", e2, err, e)
	}
	if e.Code == 0 || e.Params != 8 || e.Threads < 1 || e.Name != "twice" {
		t.Errorf("the entry %+v", e)
	}
	if _, err := r.d.Entry(img, "no such function"); !errors.Is(err, device.ErrAbsent) {
		t.Errorf("entry of a function the image lacks: %v", err)
	}
	if n := r.f.live(); n != live {
		t.Errorf("%d memories after the first entry, %d after the second", live, n)
	}
	if err := r.d.Unload(img); err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.Entry(img, "twice"); err == nil {
		t.Error("an entry of an unloaded image")
	}
	if n := r.f.live(); n != live-1 {
		t.Errorf("%d memories after unload, want %d", n, live-1)
	}
}

// TestLocalShortAndStopped: the capability's Local answers a *NoMemory of
// the bytes it lacks, having made nothing, where the path has no memory
// for them, and an error after Stop.
func TestLocalShortAndStopped(t *testing.T) {
	r := openRaw(t, Config{CopyKernels: -1})
	g := r.d.Capability().(*hw.Gpu)
	live := r.f.live()
	r.f.mu.Lock()
	r.f.noMemory = true
	r.f.mu.Unlock()
	err := g.Local(4096)
	r.f.mu.Lock()
	r.f.noMemory = false
	r.f.mu.Unlock()
	var nm *device.NoMemory
	if _, want := r.d.rec.LocalBytes(4096); !errors.As(err, &nm) || uint64(nm.N) != want {
		t.Errorf("local memory without memory: %v, want a NoMemory of %d bytes", err, want)
	}
	if l := r.d.local.Load(); l != nil || r.f.live() != live {
		t.Errorf("local memory %+v, %d memories then %d", l, live, r.f.live())
	}
	if err := r.d.Stop(""); err != nil {
		t.Fatal(err)
	}
	if err := g.Local(4096); err == nil || r.d.local.Load() != nil {
		t.Errorf("local memory after stop: %v", err)
	}
}

// timerPath is the fake as a path whose timer reads come with the widths
// of widths, one after another, and then 100 ns.
type timerPath struct {
	*fake
	widths []int64
	reads  int
}

func (p *timerPath) ReadTimer() (nvidia.Timer, error) {
	t, err := p.fake.ReadTimer()
	if p.reads < len(p.widths) {
		t.Width = p.widths[p.reads]
	}
	t.GPU = uint64(p.reads)
	p.reads++
	return t, err
}

// TestMeasure: the measure at open keeps the first of sixteen reads within
// 10 µs, or else the narrowest; a re-measure wider than 10 µs is dropped,
// and the first narrow one replaces a wide measure at open.
func TestMeasure(t *testing.T) {
	p := &timerPath{fake: newFake(), widths: []int64{40_000, 12_000, 9_000, 5_000}}
	m, err := measure(p)
	if err != nil || p.reads != 3 || m.Width != 9_000 || m.GPU != 2 {
		t.Errorf("the first within 10 µs: %+v after %d reads, %v", m, p.reads, err)
	}
	wide := make([]int64, 20)
	for i := range wide {
		wide[i] = int64(50_000 - 1000*i)
	}
	wide[7] = 11_000
	p = &timerPath{fake: newFake(), widths: wide}
	if m, err = measure(p); err != nil || p.reads != 16 || m.Width != 11_000 || m.GPU != 7 {
		t.Errorf("none within 10 µs: %+v after %d reads, %v", m, p.reads, err)
	}

	p = &timerPath{fake: newFake(), widths: []int64{20_000, 8_000, 30_000, 7_000}}
	d := &gpu{p: p}
	d.prof.first = nvidia.Timer{GPU: 1, Width: 20_000}
	// ago places the last re-measure past the 62.5 ms between two.
	ago := func() {
		if d.prof.at = device.Now() - 2*remeasureEvery; d.prof.at == 0 {
			d.prof.at = -1
		}
	}
	if err := d.remeasure(); err != nil || d.prof.first.Width != 20_000 || d.prof.late.Host != 0 {
		t.Errorf("a wide re-measure: first %+v, latest %+v, %v", d.prof.first, d.prof.late, err)
	}
	ago()
	if err := d.remeasure(); err != nil || d.prof.first.Width != 8_000 || d.prof.late.Host != 0 {
		t.Errorf("the first narrow re-measure: first %+v, latest %+v, %v", d.prof.first, d.prof.late, err)
	}
	if err := d.remeasure(); err != nil || p.reads != 2 {
		t.Errorf("a re-measure within 62.5 ms read the timer: %d reads, %v", p.reads, err)
	}
	ago()
	_ = d.remeasure()
	if d.prof.late.Host != 0 {
		t.Errorf("a wide re-measure kept as the latest: %+v", d.prof.late)
	}
	ago()
	if err := d.remeasure(); err != nil || d.prof.late.Width != 7_000 || d.prof.first.Width != 8_000 {
		t.Errorf("a narrow re-measure: first %+v, latest %+v, %v", d.prof.first, d.prof.late, err)
	}
}

// TestRegrowShortWhereRMLacks: a regrowth whose channel group the RM
// lacks the resources for answers Short, the device keeps its channels,
// and a later growth opens the new ones.
func TestRegrowShortWhereRMLacks(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64})
	m := r.alloc(device.PinnedMemory, 4096)
	chans, live := r.f.objectsOf(r.f.gpu.Channel), r.f.live()
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{bigWords(r, m, 100, 1)}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 100 entries on rings of 64: %+v", a)
	}
	r.f.mu.Lock()
	r.f.lacking = map[uint32]bool{nvidia.ClassChannelGroup: true}
	r.f.mu.Unlock()
	var short *device.Short
	if err := r.d.Grow(); !errors.As(err, &short) || short.N <= 0 {
		t.Fatalf("a regrowth the RM lacks resources for: %v", err)
	}
	r.f.mu.Lock()
	r.f.lacking = nil
	r.f.mu.Unlock()
	if n, l := r.f.objectsOf(r.f.gpu.Channel), r.f.live(); n != chans || l != live || r.d.grown.set != nil {
		t.Errorf("%d channels and %d memories after the Short, want %d and %d", n, l, chans, live)
	}
	r.wait(r.submit(nil, bigWords(r, m, 100, 2)))
	if r.d.ch[qCompute].entries != 256 {
		t.Errorf("channels of %d entries after the growth", r.d.ch[qCompute].entries)
	}
}

// TestMakeWithoutTimer: a make whose path cannot read the GPU's timer
// fails, saying so, and gives back everything it made.
func TestMakeWithoutTimer(t *testing.T) {
	f := newFake()
	f.timerErr = errors.New("fake: no timer")
	if _, err := f.open(new(uint64), Config{}); err == nil || !strings.Contains(err.Error(), "timer") {
		t.Fatalf("make without a timer: %v", err)
	}
	if n := f.live(); n != 0 || len(f.objects) != 0 {
		t.Errorf("%d memories and objects %v left", n, f.objects)
	}
}
