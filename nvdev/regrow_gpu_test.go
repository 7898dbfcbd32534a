package nvdev

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	rig "github.com/rig-go/rig/runtime"
)

// A channel's regrowth through rig: channels whose rings hold 64 entries
// (Config.RingEntries), values held on the GPU while a value of Words
// needs more entries than a ring holds, the switch to the new channel
// group once every earlier value is reached, the values after it on both
// queues, a second regrowth, local memory and an image loaded after the
// switch. runRegrow is the test's body; TestGPURegrow runs it on GPU 0,
// TestRegrowOnFake on the fake.

// regrowRing is the entries of each channel's ring the test opens with.
const regrowRing = 64

// TestGPURegrow makes the device regrow its channels twice on GPU 0
// through rig, with earlier values in flight each time: the first held by
// spin_until until the host writes its flag, the second by Words that
// acquire a flag the host writes. It logs each growth (what grew, how long
// the new channels took to open and run their first words) and each switch
// (how long the new channels waited for the earlier values, and how long
// after the hold's release they took over).
func TestGPURegrow(t *testing.T) {
	if os.Getenv("RIG_GPU") != "1" {
		t.Skip("RIG_GPU unset: TestGPURegrow makes the channels of NVIDIA GPU 0 regrow; run it with RIG_GPU=1")
	}
	runRegrow(t, regrowEnv{open: func(c Config) device.Opener { return Open(0, gpuConfig(c)) }, spin: true, floats: 1 << 20})
	noCUDA(t)
}

// regrowEnv is where runRegrow runs: GPU 0, or the fake.
type regrowEnv struct {
	open func(c Config) device.Opener
	// kernel tells the fake's emulator which function an entry is; nil
	// on a GPU.
	kernel func(name string, e *device.Entry)
	// channels counts the RM's live channels; nil on a GPU.
	channels func() int
	// spin holds the first regrowth's earlier values with spin_until, a
	// kernel that runs until the host writes its flag; otherwise, and
	// always for the second regrowth, Words acquire the flag.
	spin bool
	// floats is the size of the array the test doubles.
	floats int
}

// regrowWatch is a device's driver as rig drives it, watched: it logs
// each growth, with its time, and each switch to new channels, with the
// wait before it.
type regrowWatch struct {
	*gpu
	t testing.TB

	mu          sync.Mutex
	regrowths   int           // growths that opened channels
	grewAt      time.Time     // the end of the last of them
	growTook    time.Duration // its time
	laters      int           // RoomLater answers while its channels waited
	switches    int
	switchAt    time.Time
	switchValue uint64
}

// watchState is a copy of what the watch saw.
type watchState struct {
	regrowths, laters, switches int
	grewAt, switchAt            time.Time
	growTook                    time.Duration
	switchValue                 uint64
}

func (w *regrowWatch) state() watchState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return watchState{regrowths: w.regrowths, laters: w.laters, switches: w.switches, grewAt: w.grewAt,
		switchAt: w.switchAt, growTook: w.growTook, switchValue: w.switchValue}
}

// Grow is the driver's Grow, logged.
func (w *regrowWatch) Grow() error {
	d := w.gpu
	d.mu.Lock()
	n, before := d.need, d.grown.set
	old := [2]uint64{d.ch[0].entries, d.ch[1].entries}
	d.mu.Unlock()
	t0 := time.Now()
	err := d.Grow()
	took := time.Since(t0)
	if err != nil {
		w.t.Logf("growth for %+v failed after %v: %v", n, took, err)
		return err
	}
	d.mu.Lock()
	set := d.grown.set
	var tsg uint32
	if set != nil {
		tsg = uint32(set.tsg)
	}
	d.mu.Unlock()
	if set == nil || set == before {
		w.t.Logf("growth in %v: segment rings for %v words, launch ring for %d bytes, stamps %v", took, n.seg, n.launch, n.stamps)
		return nil
	}
	w.mu.Lock()
	w.regrowths++
	w.grewAt, w.growTook, w.laters = time.Now(), took, 0
	k := w.regrowths
	w.mu.Unlock()
	w.t.Logf("regrowth %d: parts of %d entries on COMPUTE and %d on COPY (0: they fit) beyond rings of %d and %d entries: channel group 0x%x opened in %v, COMPUTE channel 0x%x (token 0x%x) of %d entries and COPY channel 0x%x (token 0x%x) of %d entries, their binding and windows run; segment rings grown for %v words",
		k, n.entries[0], n.entries[1], old[0], old[1], tsg, took, uint32(set.ch[0].h), set.ch[0].token, set.ch[0].entries,
		uint32(set.ch[1].h), set.ch[1].token, set.ch[1].entries, n.seg)
	return nil
}

// Room is the driver's Room, watched for the switch.
func (w *regrowWatch) Room(s *device.Submission) device.RoomAnswer {
	d := w.gpu
	d.mu.Lock()
	pending := d.grown.set != nil
	live := d.live.Load()
	oldTSG := uint32(live.tsg)
	d.mu.Unlock()
	a := d.Room(s)
	now := d.live.Load()
	if now == live {
		if pending && a.Kind == device.RoomLater {
			w.mu.Lock()
			w.laters++
			w.mu.Unlock()
		}
		return a
	}
	d.mu.Lock()
	newTSG, held := uint32(now.tsg), len(d.oldSets)
	d.mu.Unlock()
	word := atomic.LoadUint64(d.word)
	w.mu.Lock()
	w.switches++
	w.switchAt, w.switchValue = time.Now(), s.Value
	wait, laters := w.switchAt.Sub(w.grewAt), w.laters
	w.mu.Unlock()
	w.t.Logf("switch: value %d starts on channel group 0x%x, the word at %d (every earlier value reached), %v after the regrowth, after %d answers of later while the new channels waited; the replaced group 0x%x is held (%d held) until the next growth or allocation",
		s.Value, newTSG, word, wait, laters, oldTSG, held)
	return a
}

// channels is the channels in use.
func (w *regrowWatch) channels() [2]*channel {
	w.gpu.mu.Lock()
	defer w.gpu.mu.Unlock()
	return w.gpu.ch
}

// held is the number of channel sets a regrowth replaced that the device
// still holds.
func (w *regrowWatch) held() int {
	w.gpu.mu.Lock()
	defer w.gpu.mu.Unlock()
	return len(w.gpu.oldSets)
}

// regrowRun submits the test's values and keeps their points.
type regrowRun struct {
	t   *testing.T
	dev *rig.Device
	mu  sync.Mutex
	pts []rig.Point
}

// submit submits parts with bufs, set first fixing the launches' groups
// and threads, within 30 s.
func (r *regrowRun) submit(parts []rig.Part, set func(*rig.Run), bufs ...*rig.Buffer) (rig.Point, error) {
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	s, err := rig.NewSubmission(r.dev, parts...)
	if err != nil {
		return rig.Point{}, err
	}
	run := s.Take()
	if set != nil {
		set(run)
	}
	p, err := run.Submit(ctx, bufs...)
	if err != nil {
		return rig.Point{}, err
	}
	r.mu.Lock()
	r.pts = append(r.pts, p)
	r.mu.Unlock()
	return p, nil
}

// must is submit, failing the test on an error.
func (r *regrowRun) must(what string, parts []rig.Part, set func(*rig.Run), bufs ...*rig.Buffer) rig.Point {
	r.t.Helper()
	p, err := r.submit(parts, set, bufs...)
	if err != nil {
		r.t.Fatalf("%s: submit: %v", what, err)
	}
	return p
}

// wait waits for p, at most 30 s.
func (r *regrowRun) wait(what string, p rig.Point) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		r.t.Fatalf("%s: wait for value %d: %+v", what, p.Value(), err)
	}
}

// dims sets launch part i to groups × threads.
func dims(i, groups, threads int) func(*rig.Run) {
	return func(r *rig.Run) {
		r.Groups(i, groups, 1, 1)
		r.Threads(i, threads, 1, 1)
	}
}

// wordsOf is the ring entries es as a Words part's words.
func wordsOf(es []hw.Entry) []uint32 {
	ws := make([]uint32, 0, 2*len(es))
	for _, e := range es {
		e0, e1 := e.Words()
		ws = append(ws, e0, e1)
	}
	return ws
}

// putWords writes ws into b at byte off.
func putWords(b []byte, off int, ws []uint32) {
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[off+4*i:], w)
	}
}

// segmentEntries appends the entries of the segments at the GPU addresses
// addrs, n words each: an extended base before the first, whatever the
// channel's words before left, where the generation has one.
func segmentEntries(t testing.TB, gen *hw.Generation, addrs []uint64, n uint32) []hw.Entry {
	t.Helper()
	base := ^uint64(0)
	if !gen.ExtendedBase {
		base = 0
	}
	var es []hw.Entry
	for _, a := range addrs {
		var err error
		if es, err = hw.AppendSegment(es, gen, &base, a, n, hw.Subroutine, false); err != nil {
			t.Fatalf("a segment at 0x%x: %v", a, err)
		}
	}
	return es
}

// releaseWords writes k segments into segs at byte off, 32 bytes apart,
// segment i releasing tag<<32 | i into the 8 bytes at byte resOff + 8i of
// res, and returns the ring entries that run them.
func releaseWords(t testing.TB, gen *hw.Generation, segs *rig.Buffer, off int, res *rig.Buffer, resOff, k int, tag uint64) []uint32 {
	t.Helper()
	addrs := make([]uint64, k)
	n := 0
	for i := range k {
		ws := hw.Release(nil, gen, res.Address()+uint64(resOff+8*i), tag<<32|uint64(i))
		putWords(segs.Bytes(), off+32*i, ws)
		addrs[i], n = segs.Address()+uint64(off+32*i), len(ws)
	}
	return wordsOf(segmentEntries(t, gen, addrs, uint32(n)))
}

// acquireWords writes, at byte off of segs, a segment that holds its
// channel until the 8 bytes at byte at of flag hold at least 1, and
// returns the ring entries that run it.
func acquireWords(t testing.TB, gen *hw.Generation, segs *rig.Buffer, off int, flag *rig.Buffer, at int) []uint32 {
	t.Helper()
	ws := hw.Acquire(nil, gen, flag.Address()+uint64(at), 1)
	putWords(segs.Bytes(), off, ws)
	return wordsOf(segmentEntries(t, gen, []uint64{segs.Address() + uint64(off)}, uint32(len(ws))))
}

// ringFor is the entries of the rings a regrowth opens for Words of k
// entries: with the extended base before them and the driver's own entry
// around them (the value's words before and after), twice that, rounded up
// to a power of two.
func ringFor(k int) uint64 {
	n := uint64(2 * (k + 1 + 2))
	e := uint64(1)
	for e < n {
		e *= 2
	}
	return e
}

// word64 is the 8 bytes at byte at of b, for atomic access.
func word64(b *rig.Buffer, at int) *uint64 { return (*uint64)(unsafe.Pointer(&b.Bytes()[at])) }

// runRegrow is TestGPURegrow's body on the device env opens: it opens
// with rings of regrowRing entries (of 512 where the RM refuses those),
// holds values on the compute channel while a value of Words outgrows the
// rings, twice, and checks the data, the word and what the device holds.
func runRegrow(t *testing.T, env regrowEnv) {
	var w *regrowWatch
	var dev *rig.Device
	ring := regrowRing
	t0 := time.Now()
	for {
		o := env.open(Config{RingEntries: ring, Hang: 10 * time.Second})
		mk := o.Make
		o.Make = func(word *uint64) (device.Driver, error) {
			drv, err := mk(word)
			if err != nil {
				return nil, err
			}
			w = &regrowWatch{gpu: drv.(*gpu), t: t}
			return w, nil
		}
		var err error
		if dev, err = rig.Open(bg, o); err == nil {
			break
		}
		if ring != regrowRing {
			t.Fatalf("open with rings of %d entries: %v", ring, err)
		}
		t.Logf("open with rings of %d entries: %v; again with rings of 512", ring, err)
		ring = 512
	}
	t.Cleanup(func() { closeDone(t, dev) })
	chs := w.channels()
	t.Logf("opened %s in %v: channel group 0x%x, COMPUTE channel 0x%x of %d entries, COPY channel 0x%x of %d entries",
		dev.Name(), time.Since(t0), uint32(w.live.Load().tsg), uint32(chs[0].h), chs[0].entries, uint32(chs[1].h), chs[1].entries)
	if chs[0].entries != uint64(ring) || chs[1].entries != uint64(ring) {
		t.Fatalf("rings of %d and %d entries, want %d", chs[0].entries, chs[1].entries, ring)
	}
	// Words of kA entries outgrow rings of ring entries (100 for 64:
	// rings of 256 follow), then kB those rings (300: rings of 1024).
	kA, kB := ring+ring/2+4, 4*ring+ring/2+12
	ringA, ringB := ringFor(kA), ringFor(kB)
	g, ok := rig.Capability(dev, hw.Key)
	if !ok {
		t.Fatal("no capability")
	}
	gen := g.Gen
	r := &regrowRun{t: t, dev: dev}

	// The word never goes back, read every 20 µs while the test runs.
	word := dev.Word()
	var backs atomic.Int64
	var backAt atomic.Value
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		if word == nil {
			return
		}
		last := atomic.LoadUint64(word)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Microsecond):
			}
			cur := atomic.LoadUint64(word)
			if !device.AtLeast(cur, last) {
				backs.Add(1)
				backAt.Store(fmt.Sprintf("from %d to %d", last, cur))
			}
			last = cur
		}
	}()
	stopSampling := sync.OnceFunc(func() {
		close(stop)
		<-sampled
	})
	defer stopSampling()

	fn := func(img *rig.Image, name string) *rig.Function {
		f, err := img.Resolve(name)
		if err != nil {
			t.Fatalf("resolve %s: %v", name, err)
		}
		if env.kernel != nil {
			env.kernel(name, f.Entry())
		}
		return f
	}
	img, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatalf("load image: %v", err)
	}
	twice, local := fn(img, "twice"), fn(img, "local_mem")
	var spin *rig.Function
	if env.spin {
		spin = fn(img, "spin_until")
	}

	n := env.floats
	buf := func(k device.Memory, size int) *rig.Buffer { return allocBuf(t, dev, k, size) }
	h, x, out, y := buf(device.PinnedMemory, 4*n), buf(device.DeviceMemory, 4*n), buf(device.PinnedMemory, 4*n), buf(device.DeviceMemory, 4*n)
	for i := range n {
		putF32(h.Bytes(), i, float32(i))
	}
	fills := buf(device.PinnedMemory, 16384)
	flag := buf(device.PinnedMemory, 4096)
	// A test that fails while a value is held releases it before the
	// device closes.
	t.Cleanup(func() {
		atomic.StoreUint64(word64(flag, 0), 1)
		atomic.StoreUint64(word64(flag, 64), 1)
	})
	// segs holds the holds' segments, then the Words' of A, then B's;
	// res what they release, A's then B's.
	segs := buf(device.PinnedMemory, 4096+32*(kA+kB))
	res := buf(device.PinnedMemory, 8*(kA+kB))
	segsB, resB := 4096+32*kA, 8*kA
	marks := buf(device.PinnedMemory, 4096)
	seen := buf(device.PinnedMemory, 4096)
	idx, lout := buf(device.PinnedMemory, 1024), buf(device.PinnedMemory, 1024)
	z := buf(device.PinnedMemory, 1024)
	twiceOf := func(f *rig.Function, b int) rig.Part { return rig.Launch(f, 8, rig.ReadWrite(b, 0)) }
	doublings := 0
	checkX := func(what string) {
		t.Helper()
		p := r.must(what+": copy x → out on COPY:0", []rig.Part{rig.Copy(0, 0, 1, 0, uint64(4*n))}, nil, x, out)
		r.wait(what, p)
		k := float32(math.Pow(2, float64(doublings)))
		for i := range n {
			if got := f32(out.Bytes(), i); got != k*float32(i) {
				t.Fatalf("%s: x[%d] = %v, want %v (%d doublings)", what, i, got, k*float32(i), doublings)
			}
		}
		t.Logf("%s: x holds the %d floats doubled %d times", what, n, doublings)
	}
	checkLocal := func(what string, f *rig.Function) {
		t.Helper()
		for i := range 256 {
			binary.LittleEndian.PutUint32(idx.Bytes()[4*i:], uint32((i*37+11)&255))
		}
		clear(lout.Bytes())
		p := r.must(what, []rig.Part{rig.Launch(f, f.Params(), rig.Read(0, 0), rig.Write(1, 8))}, dims(0, 1, 256), idx, lout)
		r.wait(what, p)
		for i := range 256 {
			if got, want := i32(lout.Bytes(), i), int32(((i*37+11)&255)*i); got != want {
				t.Fatalf("%s: local_mem's out[%d] = %d, want %d", what, i, got, want)
			}
		}
		t.Logf("%s: local_mem right on 256 threads (local memory of %d bytes a thread)", what, w.local.Load().perThread)
	}
	checkBytes := func(what string, b []byte, v byte) {
		t.Helper()
		if i := notByte(b, v); i >= 0 {
			t.Fatalf("%s: byte %d reads 0x%x, want 0x%x", what, i, b[i], v)
		}
	}

	checkLocal("before the regrowth", local)

	// grow submits the value of Words that outgrows the rings, in a
	// goroutine, while hold holds the values before it; it releases the
	// hold once the new channels wait for them (at most 3 s), and returns
	// the value once reached.
	grow := func(what string, k int, hold rig.Point, release func(), parts []rig.Part, bufs ...*rig.Buffer) rig.Point {
		t.Helper()
		time.Sleep(20 * time.Millisecond)
		if hold.Reached() {
			release()
			t.Fatalf("%s: the held value %d was reached before its release", what, hold.Value())
		}
		before := w.state().regrowths
		type answer struct {
			p   rig.Point
			err error
			at  time.Time
		}
		done := make(chan answer, 1)
		t1 := time.Now()
		go func() {
			p, err := r.submit(parts, nil, bufs...)
			done <- answer{p, err, time.Now()}
		}()
		deadline := t1.Add(3 * time.Second)
		var st watchState
		for {
			st = w.state()
			if st.regrowths > before && st.laters > 0 || time.Now().After(deadline) {
				break
			}
			select {
			case a := <-done:
				release()
				t.Fatalf("%s: value %d (%v) answered while value %d was held: the new channels did not wait", what, a.p.Value(), a.err, hold.Value())
			default:
			}
			time.Sleep(500 * time.Microsecond)
		}
		if st.regrowths > before {
			t.Logf("%s: the value of %d ring entries regrew the channels %v after its Submit began (the growth took %v); the new channels answered later %d times while value %d was held",
				what, k, st.grewAt.Sub(t1), st.growTook, st.laters, hold.Value())
		} else {
			t.Logf("%s: no regrowth within 3 s of the Submit with value %d held: the new channels' first words wait behind the held work; releasing it", what, hold.Value())
		}
		if hold.Reached() {
			t.Errorf("%s: the held value %d was reached before its release", what, hold.Value())
		}
		release()
		released := time.Now()
		var a answer
		select {
		case a = <-done:
		case <-time.After(40 * time.Second):
			t.Fatalf("%s: the Submit did not answer within 40 s of the release", what)
		}
		if a.err != nil {
			t.Fatalf("%s: submit: %v", what, a.err)
		}
		r.wait(what, a.p)
		reached := time.Now()
		st = w.state()
		if st.regrowths != before+1 {
			t.Fatalf("%s: %d regrowths, want %d", what, st.regrowths, before+1)
		}
		if st.switchValue != a.p.Value() {
			t.Fatalf("%s: the switch came at value %d, not at the value %d that needed it", what, st.switchValue, a.p.Value())
		}
		if st.switchAt.Before(released) {
			t.Errorf("%s: the switch came %v before the held value's release", what, released.Sub(st.switchAt))
		}
		t.Logf("%s: value %d submitted %v after the hold's release; the switch came %v after the release and %v after the regrowth; the value reached %v after the switch (Submit to reached: %v)",
			what, a.p.Value(), a.at.Sub(released), st.switchAt.Sub(released), st.switchAt.Sub(st.grewAt), reached.Sub(st.switchAt), reached.Sub(t1))
		return a.p
	}

	// The first regrowth: values on both queues, then a hold on the
	// compute channel, then more values on both queues, all in flight
	// when a value of 100 entries of Words needs more than the rings'
	// 64 entries.
	atomic.StoreUint64(word64(flag, 0), 0)
	atomic.StoreUint64(word64(flag, 64), 0)
	r.must("A1: copy h → x on COPY:0", []rig.Part{rig.Copy(0, 0, 1, 0, uint64(4*n))}, nil, h, x)
	r.must("A2: twice(x)", []rig.Part{twiceOf(twice, 0)}, dims(0, n/256, 256), x)
	doublings++
	var hold rig.Point
	if env.spin {
		hold = r.must("A3: spin_until(flag)", []rig.Part{rig.Launch(spin, 8, rig.Read(0, 0))}, nil, flag)
	} else {
		hold = r.must("A3: Words acquiring the flag", []rig.Part{
			rig.Words(acquireWords(t, gen, segs, 0, flag, 0), rig.Uses(0, rig.Reads), rig.Uses(1, rig.Reads))}, nil, segs, flag)
	}
	r.must("A4: twice(x), a copy h → y and a fill on COMPUTE:0, a fill on COPY:0", []rig.Part{
		twiceOf(twice, 0), rig.Copy(1, 0, 2, 0, uint64(4*n)).On(device.Compute),
		rig.FillBytes(3, 0, 4096, 0xa1).On(device.Compute), rig.FillBytes(3, 4096, 4096, 0xb2)},
		dims(0, n/256, 256), x, h, y, fills)
	doublings++
	r.must("A5: a fill of the marker on COPY:0, twice(x)", []rig.Part{rig.FillBytes(0, 0, 64, 0x77), twiceOf(twice, 1)},
		dims(1, n/256, 256), marks, x)
	doublings++
	holdWhat := "Words acquiring the flag"
	if env.spin {
		holdWhat = "spin_until"
	}
	t.Logf("A: 5 values submitted, value %d (%s) holding the later ones; the word at %d", hold.Value(), holdWhat, w.Signaled())
	wordsA := releaseWords(t, gen, segs, 4096, res, 0, kA, 0xa)
	grow("A (first regrowth)", len(wordsA)/2, hold, func() { atomic.StoreUint64(word64(flag, 0), 1) },
		[]rig.Part{rig.Words(wordsA, rig.Uses(0, rig.Reads), rig.Uses(1, rig.Writes)), rig.Copy(2, 0, 3, 0, 64)},
		segs, res, marks, seen)
	for i := range kA {
		if got, want := binary.LittleEndian.Uint64(res.Bytes()[8*i:]), uint64(0xa)<<32|uint64(i); got != want {
			t.Fatalf("A: the Words' segment %d released 0x%x, want 0x%x", i, got, want)
		}
	}
	checkBytes("A: the marker the growth value copied after the switch (written by the fill before it)", seen.Bytes()[:64], 0x77)
	chs = w.channels()
	t.Logf("A: the %d segments of the Words ran, the copy on the new COPY channel read the old one's fill; rings of %d and %d entries",
		kA, chs[0].entries, chs[1].entries)
	if chs[0].entries != ringA || chs[1].entries != ringA {
		t.Errorf("A: rings of %d and %d entries after the regrowth, want %d", chs[0].entries, chs[1].entries, ringA)
	}

	// Later values on both channels, the data checked.
	checkX("A: after the switch")
	clear(out.Bytes())
	r.wait("A: copy y → out on COMPUTE:0", r.must("A: copy y → out on COMPUTE:0",
		[]rig.Part{rig.Copy(0, 0, 1, 0, uint64(4*n)).On(device.Compute)}, nil, y, out))
	if i := firstDiff(out.Bytes(), h.Bytes()); i >= 0 {
		t.Fatalf("A: the copy h → y on COMPUTE:0 before the switch, read back after it: byte %d differs (%s)", i, around(out.Bytes(), i))
	}
	checkBytes("A: the fill on COMPUTE:0 before the switch", fills.Bytes()[:4096], 0xa1)
	checkBytes("A: the fill on COPY:0 before the switch", fills.Bytes()[4096:8192], 0xb2)
	t.Logf("A: the copies and fills of both queues before the switch are right")

	// 300 values after it wrap the new rings (of 256 entries, from rings
	// of 64).
	for i := range 256 {
		putF32(z.Bytes(), i, 1)
	}
	t1 := time.Now()
	var last rig.Point
	for i := range 300 {
		fill := rig.FillBytes(1, uint64(8192+i), 1, byte(i*7+1))
		switch i % 3 {
		case 0:
			last = r.must("A: twice(z) and a fill on COPY:0", []rig.Part{twiceOf(twice, 0), fill}, dims(0, 1, 256), z, fills)
		case 1:
			last = r.must("A: a fill on COMPUTE:0", []rig.Part{fill.On(device.Compute)}, nil, z, fills)
		case 2:
			last = r.must("A: a fill on COPY:0", []rig.Part{fill}, nil, z, fills)
		}
	}
	r.wait("A: 300 values", last)
	for i := range 256 {
		if got := f32(z.Bytes(), i); got != float32(math.Pow(2, 100)) {
			t.Fatalf("A: z[%d] = %v after 100 doublings, want 2^100", i, got)
		}
	}
	for i := range 300 {
		if got := fills.Bytes()[8192+i]; got != byte(i*7+1) {
			t.Fatalf("A: fill %d wrote 0x%x, want 0x%x", i, got, byte(i*7+1))
		}
	}
	t.Logf("A: 300 values after the switch (100 of twice and a fill, 200 fills on either queue) in %v, right", time.Since(t1))

	// The replaced set goes back at the next allocation.
	heldBefore := w.held()
	buf(device.PinnedMemory, 4096)
	heldAfter := w.held()
	t.Logf("A: replaced channel sets held: %d before an allocation, %d after", heldBefore, heldAfter)
	if heldAfter != 0 {
		t.Errorf("A: %d replaced channel sets held after an allocation", heldAfter)
	}
	if env.channels != nil {
		if c := env.channels(); c != 2 {
			t.Errorf("A: %d channels live after the allocation, want 2", c)
		}
	}

	// Local memory on the new compute channel, and an image loaded after
	// the switch.
	checkLocal("A: after the switch, local_mem of the first image", local)
	t1 = time.Now()
	img2, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatalf("load an image after the switch: %v", err)
	}
	twice2, local2 := fn(img2, "twice"), fn(img2, "local_mem")
	u := buf(device.PinnedMemory, 4096)
	for i := range 1024 {
		putF32(u.Bytes(), i, float32(i)+0.5)
	}
	r.wait("twice of the second image", r.must("twice of the second image", []rig.Part{twiceOf(twice2, 0)}, dims(0, 4, 256), u))
	for i := range 1024 {
		if got := f32(u.Bytes(), i); got != 2*(float32(i)+0.5) {
			t.Fatalf("twice of the image loaded after the switch: u[%d] = %v, want %v", i, got, 2*(float32(i)+0.5))
		}
	}
	t.Logf("A: an image loaded after the switch (its copy on the new COPY channel) ran twice right, %v from its load", time.Since(t1))
	checkLocal("A: after the switch, local_mem of the image loaded after it", local2)

	// The second regrowth: a hold of Words, values on both queues, then
	// Words of kB entries beyond the rings of the first.
	hold = r.must("B1: Words acquiring the second flag", []rig.Part{
		rig.Words(acquireWords(t, gen, segs, 256, flag, 64), rig.Uses(0, rig.Reads), rig.Uses(1, rig.Reads))}, nil, segs, flag)
	r.must("B2: twice(x), a fill of the marker on COPY:0", []rig.Part{twiceOf(twice, 0), rig.FillBytes(1, 1024, 64, 0x88)},
		dims(0, n/256, 256), x, marks)
	doublings++
	r.must("B3: a fill on COMPUTE:0", []rig.Part{rig.FillBytes(0, 12288, 4096, 0xc3).On(device.Compute)}, nil, fills)
	wordsB := releaseWords(t, gen, segs, segsB, res, resB, kB, 0xb)
	grow("B (second regrowth)", len(wordsB)/2, hold, func() { atomic.StoreUint64(word64(flag, 64), 1) },
		[]rig.Part{rig.Words(wordsB, rig.Uses(0, rig.Reads), rig.Uses(1, rig.Writes)), rig.Copy(2, 1024, 3, 1024, 64)},
		segs, res, marks, seen)
	for i := range kB {
		if got, want := binary.LittleEndian.Uint64(res.Bytes()[resB+8*i:]), uint64(0xb)<<32|uint64(i); got != want {
			t.Fatalf("B: the Words' segment %d released 0x%x, want 0x%x", i, got, want)
		}
	}
	checkBytes("B: the marker the growth value copied after the switch", seen.Bytes()[1024:1088], 0x88)
	checkBytes("B: the fill on COMPUTE:0 before the switch", fills.Bytes()[12288:16384], 0xc3)
	chs = w.channels()
	t.Logf("B: the %d segments of the Words ran; rings of %d and %d entries", kB, chs[0].entries, chs[1].entries)
	if chs[0].entries != ringB || chs[1].entries != ringB {
		t.Errorf("B: rings of %d and %d entries after the second regrowth, want %d", chs[0].entries, chs[1].entries, ringB)
	}
	r.must("B: twice(x) and a fill on COMPUTE:0", []rig.Part{twiceOf(twice, 0), rig.FillBytes(1, 0, 4096, 0xd4).On(device.Compute)},
		dims(0, n/256, 256), x, fills)
	doublings++
	r.must("B: twice(x) with the second image, a fill on COPY:0", []rig.Part{twiceOf(twice2, 0), rig.FillBytes(1, 4096, 4096, 0xe5)},
		dims(0, n/256, 256), x, fills)
	doublings++
	checkX("B: after the switch")
	checkBytes("B: the fill on COMPUTE:0 after the switch", fills.Bytes()[:4096], 0xd4)
	checkBytes("B: the fill on COPY:0 after the switch", fills.Bytes()[4096:8192], 0xe5)
	checkLocal("B: after the second switch, local_mem", local)
	buf(device.PinnedMemory, 4096)
	if c := w.held(); c != 0 {
		t.Errorf("B: %d replaced channel sets held after an allocation", c)
	}

	// The word reached every value, and never went back.
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	r.mu.Lock()
	pts := append([]rig.Point(nil), r.pts...)
	r.mu.Unlock()
	if err := rig.WaitAll(ctx, pts...); err != nil {
		t.Fatalf("waiting for the %d values: %v", len(pts), err)
	}
	for _, p := range pts {
		if !p.Reached() {
			t.Fatalf("value %d not reached", p.Value())
		}
	}
	lastV := dev.Last().Value()
	if word != nil {
		if got := atomic.LoadUint64(word); got != lastV {
			t.Errorf("the word reads %d after every value, want %d", got, lastV)
		}
	}
	stopSampling()
	if b := backs.Load(); b > 0 {
		t.Errorf("the word went back %d times (last %v)", b, backAt.Load())
	}
	st := w.state()
	t.Logf("the word reached each of the %d values the test submitted (the last %d) and never went back; %d regrowths, %d switches, %v in all",
		len(pts), lastV, st.regrowths, st.switches, time.Since(t0))
}
