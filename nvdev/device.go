package nvdev

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Queues and channels: queue 0 is "COMPUTE:0" on the compute channel,
// queue 1 "COPY:0" on the copy channel.
const (
	qCompute = device.Compute
	qCopy    = device.Copy
)

// maxInFlight is the most values the device holds in flight (32,768),
// and records the size of its ring of marks, twice that, so that
// the record of the value the word holds is never overwritten while Room
// reads it.
const (
	maxInFlight = 1 << 15
	records     = 2 * maxInFlight
)

// fallbackEntries is the entries of a channel's ring where the RM refuses
// the configured number.
const fallbackEntries = 1 << 16

// Layout of a channel's auxiliary Pinned memory: the error notifier's page,
// then the channel's mark word; auxSegments is its size.
const (
	auxNotifier = 0
	auxMark     = 4096
	auxSegments = 8192
)

// gpu is an open device.
type gpu struct {
	p     path
	rm    rmAPI
	cfg   Config
	gen   *hw.Generation
	rec   *hw.Gpu
	facts device.Facts
	grp   *sharedGroup // the shared channel group of its sets, or nil; set at open

	// word is the host address of the word the channels release, and
	// wordGPU its GPU address. array maps rig's array of words, where the
	// word lies in it; own is the device's own word's page otherwise.
	word       *uint64
	wordGPU    uint64
	array      *nvidia.Memory
	arrayBase  uintptr
	arrayBytes uintptr
	own        *nvidia.Memory
	base       uint64 // the word's value at make

	// ch is the channels in use, those of the set live holds.
	ch [2]*channel

	// The launch ring: each launch's constant bank 0 and descriptor;
	// launch0 is the one make allocated.
	launchMem  *nvidia.Memory
	launch0    *nvidia.Memory
	launchHost []byte
	launchPos  uint64 // bytes placed, monotonic
	flush      *uint32

	// mu orders the hot path (Room, Submit) against Stop.
	mu sync.Mutex
	// kickMu orders the stores of GPPut and the doorbells (kick.go);
	// kickCount, under it, counts the kicks that rang, for tests. fence
	// is the locked instruction of the kicker and of setup, whose value
	// nothing reads.
	kickMu    sync.Mutex
	fence     atomic.Uint32
	kickCount uint64
	// Under mu, or owned by the submitting goroutine between Room and
	// Submit:
	last uint64 // the last value submitted
	// given is the last value given to Submit, also where Submit failed:
	// the value Stop writes into the word, which a failed value reaches
	// too.
	given     uint64
	lastEnder int // the channel that released the last value
	recs      []record
	plan      walk // Room's walk, which Submit replays
	needMark  []bool
	partMarks []uint64
	parts     []partPlan
	copyK     *copyKernels // the driver's copy kernels, where it runs them
	kpart     device.Part  // the launch of a copy kernel, as a walk stamps it
	kparams   [48]byte
	qmd       [2][hw.MaxQmdWords]uint32 // scratch descriptors, a launch's and the one before
	bank0     []byte
	applied   *localMem // the local memory the compute channel was given
	lastOwn   bool      // the last value's launch released it (no wait for idle followed)
	planned   bool      // Room answered RoomOK and Submit has not run
	need      need      // what Room found the submission needs grown
	grown     grown     // what Grow made, for the next Room
	// upMark is the copy channel's mark of the last image upload, which
	// the compute channel has acquired up to upAcquired; layPending is set
	// while upload words follow the last value's on the copy channel.
	upMark, upAcquired uint64
	layPending         bool

	// retMu guards retired, staging and laying: rings a growth replaced
	// and uploads' staging memory, which go back once the GPU is past
	// them, and the regions of rig's that uploads write, by the copy
	// channel's mark of the last upload into each, which Free holds in
	// staging until that mark passes.
	retMu   sync.Mutex
	retired []retired
	staging []retired
	laying  map[*nvidia.Memory]uint64

	prof profile

	// icache is set by a lay: the next submission on the compute channel
	// invalidates the instruction and constant caches first.
	icache atomic.Bool
	// local is the compute channel's local memory; localMu serialises
	// its growth, and old keeps the memories it replaced until Stop.
	localMu sync.Mutex
	local   atomic.Pointer[localMem]
	old     []*nvidia.Memory

	// wk wakes Sleep through the GPU's non-stall interrupt (wake.go).
	wk waker

	// sub: the device's channels are a subcontext of the GPU's shared
	// channel group, and its waits for idle and acquires say so
	// (group.go).
	sub bool

	fault         atomic.Pointer[device.Fault]
	stopped       atomic.Bool
	clock0        nvidia.Timer
	boost         error // the RM's refusal of PERF_BOOST, if any
	copyOnCompute bool

	// oldSets is the channel sets a regrowth replaced, or opened and never
	// used: they go back at the next growth or allocation (under mu). live
	// is the set in use, for the goroutines that read its notifiers
	// without mu.
	oldSets []*chanSet
	setsOld atomic.Bool // oldSets is not empty
	live    atomic.Pointer[chanSet]
	// undone is the steps a failed regrowth could not undo (under mu):
	// an object the RM refused to free, and what was made before it,
	// which it may name. Stop runs them once the path has stopped.
	undone []func() error
	// liveReaders counts the goroutines that read a set they loaded from
	// live without mu (liveSet): while it is not 0, reapSets gives back
	// none. The supervisor adds to it at each look of its Sleep, so it has
	// a cache line of its own, apart from live and stopped, which every
	// submission reads. liveHook, for tests, runs in liveSet after its
	// load.
	_           [64]byte
	liveReaders atomic.Int32
	_           [60]byte
	liveHook    atomic.Pointer[func()]

	// budget is the interrupts' budget of the GPU, which its other
	// devices in the process share (wake.go). It is last, so that it
	// moves none of the fields the hot path and the supervisor share.
	budget *intrBudget
}

// record is where a value left each ring: once the word holds the value,
// the channels have consumed everything before.
type record struct {
	put, seg [2]uint64
	launch   uint64
}

// localMem is the compute channel's local memory.
type localMem struct {
	mem       *nvidia.Memory
	perThread int
	perTPC    uint64
}

// channel is one GPFIFO channel of the device's channel group.
type channel struct {
	q     int
	name  string
	h     nvidia.Handle
	token uint32

	// ring holds the GPFIFO entries, then USERD.
	ring    *nvidia.Memory
	gp      []uint64
	gpPut   *uint32
	entries uint64
	flags   uint32 // the NVOS04 flags the channel was made with: its runqueue
	put     uint64 // entries written, monotonic
	// pub is put as Submit published it, and kicked the put GPPut holds
	// (under kickMu): kick.go.
	pub    atomic.Uint64
	kicked uint64

	// aux holds the error notifier, the mark word and the segment ring.
	aux      *nvidia.Memory
	notifier *[4]uint32
	mark     *uint64
	markGPU  uint64
	marks    uint64 // the last mark released
	seg      []uint32
	segGPU   uint64
	seg0     *nvidia.Memory // the segment ring make allocated
	segMem   *nvidia.Memory // the segment ring a growth made, or nil
	segPos   uint64         // words placed, monotonic
	// tail is where the words after the last release on the channel begin
	// (a value's non-stall interrupt and yield): the words before it are
	// read once the word shows that value, and the words from it to
	// segPos only once a later release shows the channel went past them.
	tail uint64
	base uint64 // bits 56:40 the ring's segments run at
	// oldSeg is the segment ring a growth replaced while the words after
	// the channel's last release on it may be unread: the next value
	// submitted on the channel shows it read them, and retires it.
	oldSeg *nvidia.Memory

	registered bool
}

// words is the memory's bytes as the host sees it, as words.
func hostWords(m *nvidia.Memory, off, n int) []uint32 {
	return unsafe.Slice((*uint32)(ptrAt(m.Host+uintptr(off))), n)
}

// hostBytes is n bytes of m from off, as the host sees them.
func hostBytes(m *nvidia.Memory, off, n int) []byte {
	return unsafe.Slice((*byte)(ptrAt(m.Host+uintptr(off))), n)
}

// ptrAt is the pointer to host address a, which lies outside Go's heap.
func ptrAt(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// leftError is a failed make's error where its undo stopped at an object
// the RM refused to free: left is the steps that did not run, the last
// made last, which closeMade runs once the path has stopped.
type leftError struct {
	err  error
	left []func() error
}

func (e *leftError) Error() string { return e.err.Error() }
func (e *leftError) Unwrap() error { return e.err }

// closeMade closes p after a make that failed with err. Where the make
// left steps undone, it stops the path first, which frees the objects the
// RM kept, then runs them, the last made first, so that the memory they
// name goes back and the path is released; a path that did not stop keeps
// them, as their objects may still name that memory.
func closeMade(p path, err error) {
	var le *leftError
	if errors.As(err, &le) && p.Stop() == nil {
		for i := len(le.left) - 1; i >= 0; i-- {
			_ = le.left[i]()
		}
	}
	_ = p.Close()
}

// makeDevice makes the device of the GPU p reaches, whose
// timeline word is the 8 bytes at word. A failed make frees what it
// allocated, but what an object the RM refused to free names (the error
// is then a *leftError, for closeMade); p stays the caller's.
func makeDevice(word *uint64, p path, rm rmAPI, c Config) (_ *gpu, err error) {
	if c.RingEntries == 0 {
		c.RingEntries = defaultRingEntries
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = defaultSegmentBytes
	}
	if c.LaunchBytes == 0 {
		c.LaunchBytes = defaultLaunchBytes
	}
	switch {
	case c.RingEntries < 16 || c.RingEntries&(c.RingEntries-1) != 0 || uint64(c.RingEntries) > 1<<31:
		return nil, fmt.Errorf("nvdev: a ring of %d entries: a power of two from 16 to 2^31", c.RingEntries)
	case c.SegmentBytes < 4096 || c.SegmentBytes%4096 != 0 || c.SegmentBytes/4 > hw.MaxSegmentWords:
		return nil, fmt.Errorf("nvdev: a segment ring of %d bytes", c.SegmentBytes)
	case c.LaunchBytes < 4096 || c.LaunchBytes%4096 != 0:
		return nil, fmt.Errorf("nvdev: a launch ring of %d bytes", c.LaunchBytes)
	}
	pg := p.GPU()
	rec, err := hw.NewGpu(pg.SMVersion, pg.GPCs, pg.TPCsPerGPC, pg.SMsPerTPC, pg.WarpsPerSM)
	if err != nil {
		return nil, fmt.Errorf("nvdev: GPU %d: %w", p.Index(), err)
	}
	rec.ChannelClass, rec.ComputeClass, rec.CopyClass = pg.Channel, pg.Compute, pg.Copy
	d := &gpu{p: p, rm: rm, cfg: c, gen: rec.Gen, rec: rec, flush: p.Flush(),
		recs: make([]record, records), bank0: make([]byte, hw.MaxBankBytes)}
	rec.Local = d.growLocal
	var undo []func() error
	defer func() {
		if err == nil {
			return
		}
		if left, u := undoUntil(undo); u != nil {
			// What the RM kept names the memory made before it: the
			// caller gives it back once the path has stopped (closeMade).
			err = &leftError{err: fmt.Errorf("%w; what stays: %w", err, u), left: left}
		}
	}()
	alloc := func(k device.Memory, n int) (*nvidia.Memory, error) {
		m, err := p.Alloc(k, n)
		if err != nil {
			return nil, fmt.Errorf("nvdev: make: %d bytes of %v memory: %w", n, k, err)
		}
		undo = append(undo, func() error { return p.Free(m) })
		return m, nil
	}

	// The word: rig's array mapped for the GPU, or a word of the device's
	// own.
	d.base = atomic.LoadUint64(word)
	if base, n, aerr := timeline.Array(); aerr == nil && p.MapsHost() && inArray(word, base, n) {
		if m, merr := p.MapHost(base, n); merr == nil {
			undo = append(undo, func() error { return p.Free(m) })
			d.array, d.arrayBase, d.arrayBytes = m, base, uintptr(n)
			d.word = word
			d.wordGPU = m.Address + uint64(uintptr(unsafe.Pointer(word))-base)
		} else if _, ok := device.AsFault(merr); ok {
			return nil, fmt.Errorf("nvdev: make: mapping rig's array: %w", merr)
		}
	}
	if d.word == nil {
		m, err := p.Alloc(device.PinnedMemory, 4096)
		if err != nil {
			return nil, fmt.Errorf("nvdev: make: the device's own word: %w", err)
		}
		undo = append(undo, func() error { return p.Free(m) })
		d.own = m
		d.word = (*uint64)(ptrAt(m.Host))
		d.wordGPU = m.Address
		atomic.StoreUint64(d.word, d.base)
	}

	// The channels, then the launch ring in Mapped memory where the BAR has
	// room, Pinned otherwise.
	d.copyOnCompute = !c.NoComputeCopies
	d.sub = c.SharedGroup
	set, err := d.openChannels(c.RingEntries, [2]uint64{}, "make", true, &undo)
	if err != nil {
		return nil, err
	}
	d.ch = set.ch
	d.live.Store(set)
	if d.mapped() && c.pin&pinLaunch == 0 {
		if d.launchMem, err = alloc(device.MappedMemory, c.LaunchBytes); err != nil && !lacks(err) {
			return nil, err
		}
	}
	if d.launchMem == nil {
		if d.launchMem, err = alloc(device.PinnedMemory, c.LaunchBytes); err != nil {
			return nil, err
		}
	}
	d.launchHost = hostBytes(d.launchMem, 0, c.LaunchBytes)
	d.launch0 = d.launchMem
	d.retired = make([]retired, 0, 64)
	d.boost = rm.Boost(p.Subdevice())

	if d.clock0, err = measure(p); err != nil {
		return nil, fmt.Errorf("nvdev: make: reading the GPU's timer: %w", err)
	}
	d.prof.first = d.clock0
	if d.copyK, err = d.loadCopyKernels(); err != nil {
		return nil, fmt.Errorf("nvdev: make: the driver's copy kernels: %w", err)
	}

	d.last, d.given, d.lastEnder = d.base, d.base, qCompute
	d.recs[d.base%records] = d.record()
	d.facts = device.Facts{
		Arch:          d.gen.Arch,
		Budget:        p.Budget(),
		Queues:        []string{"COMPUTE:0", "COPY:0"},
		CopyEngine:    qCopy,
		Completion:    device.Store,
		HangMs:        p.HangMs(),
		MapsHost:      p.MapsHost(),
		HostAddresses: false,
		Alignment:     4096,
		CacheBytes:    p.CacheBytes(),
		Capability:    hw.Key,
		Bus:           p.Bus(),
	}
	if set.grp != nil {
		d.grp = set.grp
		d.facts.FaultDomain = set.grp.domain
	}
	if d.array != nil {
		d.facts.Word = word
		d.facts.Waits = device.WaitStores | device.WaitHosts
	} else {
		d.facts.OwnWord = d.own
	}
	d.openEvents()
	return d, nil
}

// inArray reports whether w is a word of rig's array at base.
func inArray(w *uint64, base uintptr, n int) bool {
	a := uintptr(unsafe.Pointer(w))
	return a >= base && a+8 <= base+uintptr(n) && a%8 == 0
}

// setupTimeout bounds the first words' run at make, and a regrowth's
// once the work before its channels is done; tests shorten it.
var setupTimeout = 5 * time.Second

// setup writes the first words of the channels chs and wakes them: the
// engines' binding and the compute engine's windows, then a release of
// each channel's next mark. Where wait, it waits for the marks
// (awaitSetup), so that a channel that does not run fails the make; a
// regrowth's channels run theirs behind the work of the channels they
// replace, and the switch waits for them (Room, Grow).
func (d *gpu) setup(chs [2]*channel, wait bool) error {
	for _, ch := range chs {
		b := ch.seg[:0]
		if ch.q == qCompute {
			b = hw.SetObject(b, hw.SubCompute, d.rec.ComputeClass)
			if d.copyOnCompute {
				b = hw.SetObject(b, hw.SubCopy, d.rec.CopyClass)
			}
			b = hw.SetWindows(b, d.rec.Windows)
		} else {
			b = hw.SetObject(b, hw.SubCopy, d.rec.CopyClass)
		}
		ch.marks++
		b = hw.Release(b, d.gen, ch.markGPU, ch.marks)
		ch.segPos = uint64(len(b))
		ch.tail = ch.segPos
		if err := ch.appendSegment(d.gen, 0, uint32(len(b))); err != nil {
			return err
		}
		// As Kick: the locked store of pub drains the entries and words
		// from the write-combining buffers before GPPut is stored, and the
		// fence drains GPPut's store before the flush read, so that the
		// GPU never sees a GPPut whose entries are not written, even where
		// it reads USERD before the doorbell.
		ch.pub.Store(ch.put)
		ch.publish()
		ch.kicked = ch.put
	}
	if d.flush != nil {
		d.fence.Add(1)
		_ = atomic.LoadUint32(d.flush)
	}
	for _, ch := range chs {
		d.p.Ring(ch.token)
	}
	if !wait {
		return nil
	}
	return awaitSetup(chs)
}

// ready reports whether the channels of the set ran their first words.
func (s *chanSet) ready() bool {
	for _, ch := range s.ch {
		if atomic.LoadUint64(ch.mark) != ch.marks {
			return false
		}
	}
	return true
}

// awaitSetup waits, at most setupTimeout, for the channels chs to run
// their first words, and returns the error a notifier holds meanwhile.
func awaitSetup(chs [2]*channel) error {
	t0 := time.Now()
	for _, ch := range chs {
		for atomic.LoadUint64(ch.mark) != ch.marks {
			if f := chsFault(chs); f != "" {
				return fmt.Errorf("the channels' first words: %s", f)
			}
			if time.Since(t0) > setupTimeout {
				return fmt.Errorf("the %s channel did not run its first words in %v (mark %d, notifier %x)",
					ch.name, setupTimeout, atomic.LoadUint64(ch.mark), ch.notifierWords())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// chsFault names the error a notifier of the channels holds, or "".
func chsFault(chs [2]*channel) string {
	for _, ch := range chs {
		if w := ch.notifierWords(); w[3]>>16 != 0 {
			return fmt.Sprintf("error %d on the %s channel", w[2], ch.name)
		}
	}
	return ""
}

// record is where the device's rings stand now.
func (d *gpu) record() record {
	var r record
	for q, ch := range d.ch {
		r.put[q], r.seg[q] = ch.put, ch.tail
	}
	r.launch = d.launchPos
	return r
}

// appendSegment writes the entries that run the words from word index at
// (monotonic) of the segment ring, n of them, and advances put.
func (ch *channel) appendSegment(g *hw.Generation, at uint64, n uint32) error {
	var tmp [2]hw.Entry
	addr := ch.segGPU + 4*(at%uint64(len(ch.seg)))
	es, err := hw.AppendSegment(tmp[:0], g, &ch.base, addr, n, hw.Subroutine, false)
	if err != nil {
		return fmt.Errorf("the %s channel's segment of %d words at 0x%x: %w", ch.name, n, addr, err)
	}
	for _, e := range es {
		ch.gp[ch.put%ch.entries] = uint64(e)
		ch.put++
	}
	return nil
}

// publish stores GPPut: a plain store into the BAR, which Ring orders.
func (ch *channel) publish() { storePut(ch.gpPut, uint32(ch.put%ch.entries)) }

// notifierWords is the first notification of the channel's error notifier.
func (ch *channel) notifierWords() [4]uint32 {
	var w [4]uint32
	for i := range w {
		w[i] = atomic.LoadUint32(&ch.notifier[i])
	}
	return w
}

// measure takes the first measure of the GPU's timer: of sixteen
// readings, the first within 10 µs, or the narrowest.
func measure(p path) (nvidia.Timer, error) {
	var best nvidia.Timer
	for i := range 16 {
		t, err := p.ReadTimer()
		if err != nil {
			return t, err
		}
		if i == 0 || t.Width < best.Width {
			best = t
		}
		if best.Width <= 10_000 {
			break
		}
	}
	return best, nil
}

var _ device.Driver = (*gpu)(nil)

// mapped reports whether the device writes Mapped memory through the BAR,
// and so reads the path's flush word before it wakes its channels.
func (d *gpu) mapped() bool { return d.flush != nil && !d.cfg.PinnedRings }
