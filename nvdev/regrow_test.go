package nvdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Regrowth on the fake: TestGPURegrow's body through rig, the bound on
// the replaced sets, the sets the RM refuses to free, and a ring the RM
// refuses at a regrowth's size.

// TestRegrowOnFake runs TestGPURegrow's body on the fake, whose emulator
// runs twice and local_mem, with Words that acquire a flag as both holds;
// once the device closed, the fake holds no memory and no channel.
func TestRegrowOnFake(t *testing.T) {
	f := newFake()
	c, err := hw.Parse(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	kernels := map[uint64]string{}
	f.onLaunch = func(q hw.Qmd, bank []byte) {
		mu.Lock()
		name := kernels[q.Program()]
		mu.Unlock()
		k, ok := c.Kernel(name)
		if !ok {
			t.Errorf("a launch of 0x%x, no kernel the test resolved", q.Program())
			return
		}
		po := k.ParamOffset
		threads := uint64(q.Grid()[0]) * uint64(q.Block()[0])
		switch name {
		case "twice":
			xs := f.mem(binary.LittleEndian.Uint64(bank[po:]), 4*threads)
			for i := range threads {
				v := math.Float32frombits(binary.LittleEndian.Uint32(xs[4*i:]))
				binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(2*v))
			}
		case "local_mem":
			idx := f.mem(binary.LittleEndian.Uint64(bank[po:]), 4*threads)
			out := f.mem(binary.LittleEndian.Uint64(bank[po+8:]), 4*threads)
			for i := range threads {
				binary.LittleEndian.PutUint32(out[4*i:], (binary.LittleEndian.Uint32(idx[4*i:])&255)*uint32(i))
			}
		default:
			t.Errorf("a launch of %s, which the fake does not run", name)
		}
	}
	t.Cleanup(func() {
		if n := f.live(); n != 0 {
			t.Errorf("%d memories left after close", n)
		}
		if n := f.objectsOf(f.gpu.Channel); n != 0 {
			t.Errorf("%d channels left after close", n)
		}
	})
	runRegrow(t, regrowEnv{
		open: func(c Config) device.Opener {
			sf := &serialFake{fake: f}
			return device.Opener{Name: "NV-fake-regrow", Make: func(w *uint64) (device.Driver, error) {
				return makeDevice(w, sf, fakeRM{f}, c)
			}}
		},
		kernel: func(name string, e *device.Entry) {
			mu.Lock()
			kernels[e.Code] = name
			mu.Unlock()
		},
		channels: func() int { return f.objectsOf(f.gpu.Channel) },
		floats:   1 << 16,
	})
}

// serialFake is the fake whose channels one goroutine at a time runs: the
// fake lets go of its lock while a launch runs, and a second goroutine's
// run of the same channel (rig's supervisor checks the path while the
// submitter rings) would run the launch again.
type serialFake struct {
	*fake
	mu sync.Mutex
}

func (s *serialFake) Ring(token uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fake.Ring(token)
}

func (s *serialFake) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fake.Check()
}

// TestRegrowCap checks the bound on the sets a device replaces: from the
// default rings of 262,144 entries, each regrowth at least doubles the
// ring that overflowed, never past 2^31, and never below either ring in
// use, so that the regrowths from the default rings to rings of 2^31, each
// the least that overflows one ring, are at most 26; and parts of 2^31 - 1
// entries, the most Room passes to Grow, fit the rings of 2^31.
func TestRegrowCap(t *testing.T) {
	d := &gpu{ch: [2]*channel{{entries: defaultRingEntries}, {entries: defaultRingEntries}}}
	sets := 0
	for q := 0; d.ch[0].entries < 1<<31 || d.ch[1].entries < 1<<31; q ^= 1 {
		cur := d.ch[q].entries
		if cur == 1<<31 {
			continue
		}
		var need [2]uint64
		need[q] = cur // one entry more than the ring holds
		e := uint64(d.regrowEntries(need))
		if e < 2*cur || e > 1<<31 || bits.OnesCount64(e) != 1 || e < d.ch[0].entries || e < d.ch[1].entries {
			t.Fatalf("regrowth %d of parts of %d entries on channel %d beyond rings of %d and %d: rings of %d entries",
				sets+1, need[q], q, d.ch[0].entries, d.ch[1].entries, e)
		}
		d.ch = [2]*channel{{entries: e}, {entries: e}}
		sets++
		if sets > 26 {
			t.Fatalf("more than 26 regrowths from rings of %d entries", defaultRingEntries)
		}
	}
	t.Logf("%d regrowths, each the least that overflows a ring, take the rings from %d entries to 2^31: a device replaces at most %d sets (the bound: 26)",
		sets, defaultRingEntries, sets)
	for _, n := range []uint64{1<<31 - 1, 1 << 30, 1<<30 + 1} {
		d.ch = [2]*channel{{entries: defaultRingEntries}, {entries: defaultRingEntries}}
		if e := d.regrowEntries([2]uint64{0, n}); e != 1<<31 {
			t.Errorf("parts of %d entries: rings of %d entries, want 2^31", n, e)
		}
	}
}

// stingyRM is the fake's RM, which refuses, where set, to free channel
// groups, and to allocate channels of more than maxEntries entries.
type stingyRM struct {
	fakeRM
	keepGroups  atomic.Bool
	maxEntries  atomic.Uint32 // 0: any
	groupFrees  atomic.Int32  // frees of channel groups asked
	refusedRing atomic.Int32  // channels refused for their entries
}

func (r *stingyRM) Free(parent, object nvidia.Handle) error {
	r.f.mu.Lock()
	class := r.f.objects[object]
	r.f.mu.Unlock()
	if class == nvidia.ClassChannelGroup {
		r.groupFrees.Add(1)
		if r.keepGroups.Load() {
			return &nvidia.RMError{Call: "RM_FREE", Status: nvidia.StatusInvalidArgument}
		}
	}
	return r.fakeRM.Free(parent, object)
}

func (r *stingyRM) Alloc(parent nvidia.Handle, class uint32, params []byte) (nvidia.Handle, error) {
	if max := r.maxEntries.Load(); max != 0 && class == r.f.gpu.Channel {
		if p := (*nvidia.ChannelAllocParams)(unsafe.Pointer(&params[0])); p.GPFIFOEntries > max {
			r.refusedRing.Add(1)
			return 0, &nvidia.RMError{Call: "RM_ALLOC channel", Status: nvidia.StatusInvalidArgument}
		}
	}
	return r.fakeRM.Alloc(parent, class, params)
}

// openStingy opens a device on the fake through a stingyRM.
func openStingy(t *testing.T, c Config) (*raw, *stingyRM) {
	t.Helper()
	f := newFake()
	rm := &stingyRM{fakeRM: fakeRM{f}}
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	d, err := makeDevice(w, f, rm, c)
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	r := &raw{t: t, f: f, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	return r, rm
}

// bigWords is a Words part of k entries on COMPUTE:0, each running the
// segment at byte 256 of m, which releases tag into the 8 bytes at byte
// 64 of m.
func bigWords(r *raw, m *nvidia.Memory, k int, tag uint64) device.Part {
	b := hw.Release(hostWords(m, 256, 6)[:0], r.d.gen, m.Address+64, tag)
	e0, e1 := hw.Segment(m.Address+256, uint32(len(b)), hw.Subroutine, false).Words()
	words := make([]uint32, 0, 2*k)
	for range k {
		words = append(words, e0, e1)
	}
	return device.Part{Kind: device.Words, Queue: qCompute, Words: words}
}

// TestRegrowKept regrows the channels four times on a fake whose RM
// refuses to free channel groups: each replaced set stays, with its
// memory, and the device asks the RM once for each until Stop, which asks
// again and, the path stopped, gives the sets' memory back.
func TestRegrowKept(t *testing.T) {
	r, rm := openStingy(t, Config{RingEntries: regrowRing})
	rm.keepGroups.Store(true)
	m := r.alloc(device.PinnedMemory, 4096)
	var kept []*chanSet
	for i, k := range []int{100, 300, 1100, 4500} {
		r.wait(r.submit(nil, bigWords(r, m, k, uint64(i+1))))
		if got := binary.LittleEndian.Uint64(hostOf(m)[64:]); got != uint64(i+1) {
			t.Fatalf("regrowth %d: the Words released %d", i+1, got)
		}
		want := uint64(1) << bits.Len64(uint64(2*k))
		if e := r.d.ch[qCompute].entries; e < want || e > 2*want {
			t.Errorf("regrowth %d for %d entries: a ring of %d entries", i+1, k, e)
		}
		r.alloc(device.PinnedMemory, 4096) // the replaced set would go back here
		r.alloc(device.PinnedMemory, 4096)
		if n := len(r.d.oldSets); n != i+1 {
			t.Fatalf("after regrowth %d: %d sets held, want %d", i+1, n, i+1)
		}
		if n := r.f.objectsOf(r.f.gpu.Channel); n != 2*(i+2) {
			t.Errorf("after regrowth %d: %d channels, want %d", i+1, n, 2*(i+2))
		}
		if n := rm.groupFrees.Load(); n != int32(i+1) {
			t.Errorf("after regrowth %d: %d frees of channel groups asked, want one a replaced set", i+1, n)
		}
		kept = r.d.oldSets
		for _, set := range kept {
			if !set.kept {
				t.Errorf("after regrowth %d: a replaced set not marked kept", i+1)
			}
		}
	}
	t.Logf("4 regrowths, rings of %d entries: 4 replaced sets kept with their memory", r.d.ch[qCompute].entries)
	var mems []*nvidia.Memory
	for _, set := range kept {
		mems = append(mems, setMemory(set)...)
	}
	held := func() int {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		n := 0
		for _, mm := range mems {
			if r.f.mems[mm.Handle] != nil {
				n++
			}
		}
		return n
	}
	if n := held(); n != len(mems) {
		t.Fatalf("%d of the kept sets' %d memories live before Stop", n, len(mems))
	}
	frees := rm.groupFrees.Load()
	if err := r.d.Stop(""); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if n := rm.groupFrees.Load() - frees; n != 5 {
		t.Errorf("Stop asked %d frees of channel groups, want 5 (the live set and the 4 kept)", n)
	}
	if n := held(); n != 0 {
		t.Errorf("%d of the kept sets' memories live after Stop, the path stopped", n)
	}
}

// TestRegrowRefused regrows channels whose RM bounds a ring at 65,536
// entries, the fallback of make, for parts of 70,000 entries: Grow returns
// the RM's refusal, not a set of rings smaller than the parts, and the
// device keeps its channels and runs on.
func TestRegrowRefused(t *testing.T) {
	r, rm := openStingy(t, Config{RingEntries: fallbackEntries})
	rm.maxEntries.Store(fallbackEntries)
	m := r.alloc(device.PinnedMemory, 4096)
	chans, live := r.f.objectsOf(r.f.gpu.Channel), r.f.live()
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{bigWords(r, m, 70000, 1)}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 70,000 entries on rings of 65,536: %+v", a)
	}
	err := r.d.Grow()
	var short *device.Short
	if err == nil || errors.As(err, &short) || !errors.Is(err, nvidia.ErrRefused) {
		t.Fatalf("a regrowth the RM refuses: %v", err)
	}
	t.Logf("grow: %v", err)
	if n := rm.refusedRing.Load(); n != 1 {
		t.Errorf("%d channels refused for their entries, want 1: a regrowth asks no smaller ring", n)
	}
	if r.d.grown.set != nil || r.d.ch[qCompute].entries != fallbackEntries {
		t.Errorf("a set kept aside, or rings of %d entries, after the refusal", r.d.ch[qCompute].entries)
	}
	if n, l := r.f.objectsOf(r.f.gpu.Channel), r.f.live(); n != chans || l != live {
		t.Errorf("%d channels and %d memories after the refusal, want %d and %d", n, l, chans, live)
	}
	r.wait(r.submit(nil, bigWords(r, m, 1000, 2), fillPart(qCopy, m, 0, 8, 9)))
	if got := binary.LittleEndian.Uint64(hostOf(m)[64:]); got != 2 || hostOf(m)[7] != 9 {
		t.Errorf("after the refusal: the Words released %d, the fill wrote %d", got, hostOf(m)[7])
	}
}

// TestRegrowSegments runs a value that outgrows both a channel's ring and
// its segment ring: one growth opens the new channels and the segment
// ring, which goes to the new compute channel as it takes over.
func TestRegrowSegments(t *testing.T) {
	r := openRaw(t, Config{RingEntries: regrowRing, SegmentBytes: 4096})
	m := r.alloc(device.PinnedMemory, 4096)
	fills := r.alloc(device.PinnedMemory, 4096)
	parts := []device.Part{bigWords(r, m, 100, 7)}
	for i := range 2000 {
		parts = append(parts, fillPart(qCompute, fills, uint64(i%4096), 1, byte(i)))
	}
	s := device.Submission{Value: r.v + 1, Parts: parts}
	grows := 0
	for i := 0; ; i++ {
		a := r.d.Room(&s)
		if a.Kind == device.RoomOK {
			break
		}
		switch {
		case a.Kind == device.RoomGrow:
			grows++
			if err := r.d.Grow(); err != nil {
				t.Fatal(err)
			}
		case a.Kind != device.RoomLater || i > 1000:
			t.Fatalf("room: %+v", a)
		default:
			r.pump()
		}
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		t.Fatalf("submit: %+v", a)
	}
	r.d.Kick(r.v)
	r.wait(r.v)
	if grows != 1 {
		t.Errorf("%d growths, want 1", grows)
	}
	ch := r.d.ch[qCompute]
	if ch.entries != 256 || ch.segMem == nil || len(ch.seg) <= 1024 {
		t.Errorf("the new compute channel: %d entries, a segment ring of %d words", ch.entries, len(ch.seg))
	}
	if got := binary.LittleEndian.Uint64(hostOf(m)[64:]); got != 7 || hostOf(fills)[1999] != 1999%256 {
		t.Errorf("the Words released %d, the last fill wrote %d", got, hostOf(fills)[1999])
	}
}

// TestRegrowReaderHoldsSet pauses a reader of the live set's notifiers
// (the supervisor's Sleep) between its load of the set and its read, while
// a regrowth replaces the set and an allocation reaps replaced sets: the
// set stays, with its memory, while the reader holds it, and goes back at
// the first allocation after the reader is done.
func TestRegrowReaderHoldsSet(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64})
	m := r.alloc(device.PinnedMemory, 4096)
	old := r.d.live.Load()
	loaded, release, done := make(chan struct{}), make(chan struct{}), make(chan bool)
	var paused atomic.Bool
	hook := func() {
		if paused.CompareAndSwap(false, true) {
			close(loaded)
			<-release
		}
	}
	r.d.liveHook.Store(&hook)
	go func() { done <- r.d.notified() }()
	<-loaded
	released := false
	stop := func() {
		if !released {
			released = true
			close(release)
			if <-done {
				t.Error("the paused reader found an error in a notifier")
			}
		}
	}
	t.Cleanup(stop)
	r.wait(r.submit(nil, bigWords(r, m, 100, 1)))
	if r.d.live.Load() == old {
		t.Fatal("no regrowth: the set in use is the one make opened")
	}
	mems := setMemory(old)
	held := func() int {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		n := 0
		for _, mm := range mems {
			if r.f.mems[mm.Handle] != nil {
				n++
			}
		}
		return n
	}
	r.alloc(device.PinnedMemory, 4096)
	if n := held(); n != len(mems) {
		t.Fatalf("%d of the replaced set's %d memories live while a reader holds the set", n, len(mems))
	}
	stop()
	r.alloc(device.PinnedMemory, 4096)
	if n := held(); n != 0 || len(r.d.oldSets) != 0 {
		t.Errorf("after the reader is done and an allocation: %d of the replaced set's memories live, %d sets held", n, len(r.d.oldSets))
	}
}

// TestSleepNotifierOfReplacedSet has a regrowth replace the live set
// between Sleep's look at the notifiers, which finds an error in the set
// it loaded, and its read of the error, from the set it loads next, which
// holds none: Sleep returns nil or a fault, never a nil *device.Fault as
// its error, which rig would dereference.
func TestSleepNotifierOfReplacedSet(t *testing.T) {
	for _, still := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprint("still ", still), func(t *testing.T) {
			r := openRaw(t, Config{RingEntries: 64})
			m := r.alloc(device.PinnedMemory, 4096)
			old := r.d.live.Load()
			var once atomic.Bool
			hook := func() {
				if once.CompareAndSwap(false, true) {
					r.submit(nil, bigWords(r, m, 100, 1))
				}
			}
			// An error the RM wrote into the set's notifier once its
			// work had ended (a fault of another channel of its group).
			atomic.StoreUint32(&old.ch[qCompute].notifier[2], 45)
			atomic.StoreUint32(&old.ch[qCompute].notifier[3], 0xffff<<16)
			r.d.liveHook.Store(&hook)
			err := r.d.Sleep(r.d.Signaled(), still)
			r.d.liveHook.Store(nil)
			if r.d.live.Load() == old {
				t.Fatal("no regrowth: the set in use is the one make opened")
			}
			if f, ok := device.AsFault(err); err != nil && (!ok || f == nil) {
				t.Fatalf("Sleep returned an error, of type %T, that holds no fault", err)
			}
		})
	}
}
