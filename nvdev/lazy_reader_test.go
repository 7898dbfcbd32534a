package nvdev

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// lazyGPU runs the channels of a paused fake the way a PBDMA may: it reads
// each method's words from memory only as it executes them, and each
// descriptor as its launch is sent, as late as a GPU may. It holds every
// ring entry to what the entry, its words and the descriptors they send
// held when the host published it: a difference is the host storing over
// work the GPU had yet to read.
type lazyGPU struct {
	t   testing.TB
	f   *fake
	mu  sync.Mutex // orders the stepper of a concurrent Grow
	chs map[*fakeChan]*lazyChan
	bad []string
}

// lazyChan is a channel's published entries not yet fetched, and the
// entry it executes.
type lazyChan struct {
	snapPut  uint64 // the entries snapshotted, modulo the ring
	snapBase uint64 // the extended base after them
	fifo     []lazySnap
	cur      *lazySnap
	i        int // the next word of cur
	pending  []hw.Write
	pi       int
}

// lazySnap is an entry as published: its value, its words and the
// descriptors and constant banks those send.
type lazySnap struct {
	e     hw.Entry
	addr  uint64
	words []uint32
	qmds  map[uint64][]byte
}

func newLazyGPU(t testing.TB, f *fake) *lazyGPU {
	return &lazyGPU{t: t, f: f, chs: map[*fakeChan]*lazyChan{}}
}

func (g *lazyGPU) fail(format string, args ...any) {
	if len(g.bad) < 8 {
		g.bad = append(g.bad, fmt.Sprintf(format, args...))
	}
}

// snap records the entries every channel's GPPut publishes beyond those
// recorded. The caller holds f.mu.
func (g *lazyGPU) snap() {
	for _, c := range g.f.chans {
		lc := g.chs[c]
		if lc == nil {
			// The channel's entries from where it stands on.
			lc = &lazyChan{snapPut: c.get, snapBase: c.base}
			g.chs[c] = lc
		}
		put := uint64(atomic.LoadUint32(c.gpPut))
		for lc.snapPut != put {
			e := hw.Entry(binary.LittleEndian.Uint64(g.f.bytesAt(c.ring+8*lc.snapPut, 8)))
			s := lazySnap{e: e}
			if op, ok := e.Control(); ok {
				if op == hw.EntryOpExtendedBase {
					lc.snapBase = e.Base()
				}
			} else {
				s.addr = lc.snapBase | e.Address()
				if b := g.f.bytesAt(s.addr, 4*uint64(e.Length())); b != nil {
					s.words = slices.Clone(unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), e.Length()))
					s.qmds = g.descriptors(s.words)
				}
			}
			lc.fifo = append(lc.fifo, s)
			lc.snapPut = (lc.snapPut + 1) % c.entries
		}
	}
}

// descriptors is the bytes of the descriptors, and their constant banks
// 0, that the words send, with those they link to. The caller holds f.mu.
func (g *lazyGPU) descriptors(words []uint32) map[uint64][]byte {
	ws, err := hw.Decode(words)
	if err != nil {
		return nil
	}
	m := map[uint64][]byte{}
	for _, w := range ws {
		if w.Subchannel != hw.SubCompute || w.Method != hw.ComputeSendPcasA {
			continue
		}
		for qa := uint64(w.Value) << 8; qa != 0 && m[qa] == nil; {
			b := g.f.bytesAt(qa, uint64(hw.QmdV04.Bytes()))
			if b == nil {
				break
			}
			m[qa] = slices.Clone(b)
			q := hw.QmdOf(hw.QmdV04, qmdWords(b))
			if _, ba, bn, _ := q.ConstantBuffer(0); bn > 0 {
				if bb := g.f.bytesAt(ba, uint64(bn)); bb != nil {
					m[ba|1<<63] = slices.Clone(bb)
				}
			}
			next, on := q.Dependent()
			if !on {
				break
			}
			qa = next
		}
	}
	return m
}

func qmdWords(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// step runs channel c for at most n methods, or where stop is not 0 until
// it released a value into the word at stop, and reports whether it
// progressed.
func (g *lazyGPU) step(c *fakeChan, n int, stop uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.f
	f.mu.Lock()
	defer f.mu.Unlock()
	g.snap()
	lc := g.chs[c]
	progress := false
	for n > 0 {
		for lc.pi < len(lc.pending) {
			w := lc.pending[lc.pi]
			if w.Subchannel == hw.SubCompute && w.Method == hw.ComputeSendSignalingPcas2B && pcasSchedules(w.Value) {
				g.checkDescriptors(c, lc, uint64(c.compRegs[hw.ComputeSendPcasA])<<8)
			}
			if !f.exec(c, w) {
				return progress
			}
			lc.pi++
			progress = true
			if stop != 0 && w.Subchannel == hw.SubHost && w.Method == hw.HostSemExecute && w.Value&7 == hw.SemRelease &&
				uint64(c.sem[1])<<32|uint64(c.sem[0]) == stop {
				return progress
			}
		}
		lc.pending, lc.pi = nil, 0
		if lc.cur != nil && lc.i < len(lc.cur.words) {
			s := lc.cur
			b := f.bytesAt(s.addr+4*uint64(lc.i), 4*uint64(len(s.words)-lc.i))
			if b == nil {
				g.fail("the %s's words at 0x%x were freed before it read them", c.name, s.addr+4*uint64(lc.i))
				return progress
			}
			now := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(s.words)-lc.i)
			k := methodWords(now)
			if lc.i+k > len(s.words) {
				k = len(s.words) - lc.i
			}
			if !slices.Equal(now[:k], s.words[lc.i:lc.i+k]) {
				g.fail("the %s's words at 0x%x were stored over before it read them: published %08x, now %08x",
					c.name, s.addr+4*uint64(lc.i), s.words[lc.i:lc.i+k], now[:k])
			}
			ws, err := hw.Decode(s.words[lc.i : lc.i+k])
			if err != nil {
				g.fail("the %s's words do not decode: %v", c.name, err)
				return progress
			}
			lc.i += k
			lc.pending = ws
			n--
			progress = true
			continue
		}
		lc.cur = nil
		if len(lc.fifo) == 0 {
			// GPPut as snap read it: a later store is the next step's.
			return progress
		}
		s := lc.fifo[0]
		lc.fifo = lc.fifo[1:]
		e := hw.Entry(binary.LittleEndian.Uint64(f.bytesAt(c.ring+8*c.get, 8)))
		if e != s.e {
			g.fail("the %s's entry %d was stored over before it was fetched: published %x, now %x", c.name, c.get, s.e, e)
		}
		c.get = (c.get + 1) % c.entries
		progress = true
		if op, ok := e.Control(); ok {
			if op == hw.EntryOpExtendedBase {
				c.base = e.Base()
			}
			continue
		}
		if s.words == nil || s.addr != c.base|e.Address() {
			g.fail("the %s's entry named no memory as it was published", c.name)
			return progress
		}
		lc.cur, lc.i = &s, 0
	}
	return progress
}

// checkDescriptors holds the descriptors a launch sends, from qa on, to
// what they held as the entry was published. The caller holds f.mu.
func (g *lazyGPU) checkDescriptors(c *fakeChan, lc *lazyChan, qa uint64) {
	if lc.cur == nil {
		return
	}
	for qa != 0 {
		want, ok := lc.cur.qmds[qa]
		if !ok {
			return
		}
		b := g.f.bytesAt(qa, uint64(len(want)))
		if b == nil {
			g.fail("the %s's descriptor at 0x%x was freed before its launch", c.name, qa)
			return
		}
		if !slices.Equal(b, want) {
			g.fail("the %s's descriptor at 0x%x was stored over before its launch", c.name, qa)
		}
		q := hw.QmdOf(hw.QmdV04, qmdWords(want))
		if _, ba, bn, _ := q.ConstantBuffer(0); bn > 0 {
			if wb, ok := lc.cur.qmds[ba|1<<63]; ok {
				if bb := g.f.bytesAt(ba, uint64(bn)); bb == nil || !slices.Equal(bb, wb) {
					g.fail("the %s's constant bank at 0x%x was stored over before its launch", c.name, ba)
				}
			}
		}
		next, on := q.Dependent()
		if !on {
			return
		}
		qa = next
	}
}

// chans is the fake's channels now.
func (g *lazyGPU) chans() []*fakeChan {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	return slices.Clone(g.f.chans)
}

// drain runs every channel until none progresses.
func (g *lazyGPU) drain() {
	for progress := true; progress; {
		progress = false
		for _, c := range g.chans() {
			if g.step(c, 1<<20, 0) {
				progress = true
			}
		}
	}
}

// check fails the test for what the GPU found.
func (g *lazyGPU) check() {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, b := range g.bad {
		g.t.Error(b)
	}
	if len(g.bad) > 0 {
		g.t.FailNow()
	}
}

// TestLazyReaderRings drives one timeline, or two of one GPU, on a paused
// fake whose channels a lazy GPU runs in random steps between the host's
// calls: random submissions on both channels (fills, copies, the driver's
// copy kernels, launches of small and large constant banks, raw entries,
// parts after earlier parts, values of no parts, timed values,
// waits on the timelines' words), waiters parked and not, uploads of an
// image, growth of the rings and regrowth of the channels. It holds each
// ring to what was published: no Room, Submit, Grow or upload stores over
// an entry, a word or a descriptor the GPU may yet read, nor frees memory
// that holds one.
func TestLazyReaderRings(t *testing.T) {
	n := 24
	if testing.Short() {
		n = 6
	}
	for i := range n {
		t.Run(fmt.Sprint(i), func(t *testing.T) { lazyRun(t, uint64(i), 400) })
	}
}

// lazyRun is one run of TestLazyReaderRings: its configuration and its
// random choices follow from k.
func lazyRun(t *testing.T, k, ops uint64) {
	rnd := rand.New(rand.NewPCG(0x51a7e, k))
	c := Config{RingEntries: 64, SegmentBytes: 4096, LaunchBytes: 8192}
	c.SharedGroup = k%3 != 0
	c.NoLinkLaunches = k%5 == 2
	c.NoOwnRelease = k%7 == 3
	if k%2 == 0 {
		c.CopyKernels = 1
	}
	// One timeline, or two of one GPU.
	f := newFake()
	var devs []*lazyDev
	for i := range 1 + int(k%4)/3 {
		c.Timeline = i
		r := rawOn(t, f, c)
		t.Cleanup(r.close)
		withEvent(r)
		x := &lazyDev{r: r, e: r.entry("empty"), m: r.alloc(device.PinnedMemory, 1<<16), dm: r.alloc(device.DeviceMemory, 1<<20)}
		x.big = r.entry("params4000")
		kf, _ := entryOf(x.big)
		x.bigParams = make([]byte, kf.l.Kernel.ParamBytes)
		var err error
		if x.code, err = r.d.Image(cubin(t)); err != nil {
			t.Fatal(err)
		}
		x.place = r.alloc(device.DeviceMemory, x.code.Place)
		devs = append(devs, x)
	}
	f.intr = nil // the fake's interrupts reach no device's event
	g := newLazyGPU(t, f)
	f.pause()
	defer func() {
		g.drain()
		g.check()
		f.resume()
	}()
	stepSome := func() {
		chs := g.chans()
		for range 1 + rnd.IntN(4) {
			if rnd.IntN(2) == 0 {
				g.step(chs[rnd.IntN(len(chs))], 1<<20, devs[rnd.IntN(len(devs))].r.d.wordGPU)
			} else {
				g.step(chs[rnd.IntN(len(chs))], 1+rnd.IntN(12), 0)
			}
		}
	}
	part := func(x *lazyDev) device.Part {
		q := rnd.IntN(2)
		switch rnd.IntN(8) {
		case 0, 1:
			return fillPart(q, x.m, uint64(8*rnd.IntN(1024)), 8, byte(rnd.Uint32()))
		case 2:
			return copyPart(q, x.m, x.dm, uint64(8*rnd.IntN(512)), uint64(8*rnd.IntN(512)), 64)
		case 3:
			// A copy the driver's kernel runs where it runs them.
			return copyPart(q, x.dm, x.dm, 0, 512<<10, 256<<10)
		case 4:
			return launch(x.e, 1, 32, nil)
		case 5:
			if rnd.IntN(2) == 0 {
				// A constant bank of 4 KiB more: slots of two sizes
				// meet the launch ring's end.
				return launch(x.big, 1, 32, x.bigParams)
			}
			return launch(x.e, 1, 32, nil)
		case 6:
			if rnd.IntN(16) == 0 {
				// Entries past a channel's ring: a regrowth.
				return device.Part{Kind: device.Words, Queue: q, Words: make([]uint32, 2*(60+rnd.IntN(80)))}
			}
			fallthrough
		default:
			return device.Part{Kind: device.Words, Queue: q, Words: make([]uint32, 2*rnd.IntN(3))}
		}
	}
	for range ops {
		x := devs[rnd.IntN(len(devs))]
		r := x.r
		switch op := rnd.IntN(12); {
		case op < 7:
			n := rnd.IntN(6)
			if rnd.IntN(12) == 0 {
				n = 40 + rnd.IntN(120)
			}
			var ps []device.Part
			for range n {
				p := part(x)
				if len(ps) > 0 && rnd.IntN(6) == 0 {
					p.After = 1 + rnd.IntN(len(ps))
				}
				ps = append(ps, p)
			}
			s := device.Submission{Value: r.v + 1, Parts: ps, Timed: rnd.IntN(6) == 0}
			if rnd.IntN(4) == 0 {
				// A wait for a value of a timeline that may be in flight.
				o := devs[rnd.IntN(len(devs))].r
				s.Waits = []device.Wait{{Word: o.d.word, Value: o.v - uint64(rnd.IntN(3))}}
				if o == r {
					s.Waits[0].Value = r.v
				}
			}
			gaveUp := false
			for tries := 0; !gaveUp; tries++ {
				a := r.d.Room(&s)
				g.snapNow()
				if a.Kind == device.RoomOK {
					break
				}
				switch a.Kind {
				case device.RoomGrow:
					var err error
					g.beside(func() { err = r.d.Grow() })
					if err != nil {
						t.Fatalf("grow: %v", err)
					}
					// The submission gives up now and then (its context
					// ended), and another takes its value.
					gaveUp = rnd.IntN(3) == 0
				case device.RoomLater:
					if tries > 100000 {
						t.Fatalf("room of value %d: later for good (word %d)", s.Value, r.d.Signaled())
					}
					stepSome()
				default:
					t.Fatalf("room of value %d: %+v", s.Value, a)
				}
			}
			if gaveUp {
				continue
			}
			r.v++
			if a := r.d.Submit(&s); a.Kind != device.Committed {
				t.Fatalf("submit: %+v", a)
			}
			r.d.Kick(r.v)
			g.snapNow()
		case op < 9:
			stepSome()
		case op == 9:
			if rnd.IntN(4) != 0 {
				parkWaiters(r)
			} else {
				noWaiters(r)
			}
		case op == 10 && rnd.IntN(8) == 0:
			// An image's upload on the copy channel, between values.
			var img device.Image
			var err error
			g.beside(func() { img, err = x.code.Lay(x.place) })
			if err != nil {
				t.Fatalf("lay: %v", err)
			}
			r.imgs = append(r.imgs, img)
		case op == 10:
			if _, err := r.d.Settle(nil); err != nil {
				t.Fatalf("settle: %v", err)
			}
		default:
			r.alloc(device.PinnedMemory, 4096) // reaps
		}
		g.check()
	}
	g.drain()
	g.check()
	for _, x := range devs {
		r := x.r
		if got := r.d.Signaled(); got != r.v {
			t.Fatalf("the word reads %d after every channel ran, not %d", got, r.v)
		}
		if r.d.notified() {
			t.Fatal(r.d.notifierFault())
		}
		if _, err := r.d.Settle(nil); err != nil {
			t.Fatalf("settle: %v", err)
		}
	}
}

// lazyDev is a timeline lazyRun drives, and what its submissions use.
type lazyDev struct {
	r *raw
	e *device.Entry
	// big is a function of 4,000 parameter bytes, and bigParams its
	// parameters.
	big       *device.Entry
	bigParams []byte
	m, dm     *nvidia.Memory
	code      device.Code
	place     *nvidia.Memory
}

// snapNow records what the host published.
func (g *lazyGPU) snapNow() {
	g.f.mu.Lock()
	g.snap()
	g.f.mu.Unlock()
}

// beside runs fn while a goroutine runs the channels, which a regrowth
// and an upload wait for.
func (g *lazyGPU) beside(fn func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, c := range g.chans() {
				g.step(c, 4, 0)
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	g.snapNow()
}
