package cudadev

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
)

// CUDA's constants that opening uses.
const (
	attrMaxThreadsPerBlock    = 1
	attrMaxBlockDimX          = 2
	attrMaxGridDimX           = 5
	attrMaxPitch              = 11
	attrKernelExecTimeout     = 17
	attrCanMapHostMemory      = 19
	attrL2CacheSize           = 38
	attrUnifiedAddressing     = 41
	attrComputeMajor          = 75
	attrComputeMinor          = 76
	attrMaxSharedOptin        = 97
	attrHostRegisterSupported = 99
	attr64BitStreamMemOps     = 122
	attrDMABufSupported       = 124
	attrHostAllocDMABuf       = 146 // CUDA 13

	limitMaxL2FetchGranularity = 0x05

	ctxSchedMask         = 0x07
	ctxSchedAuto         = 0x00
	ctxSchedBlockingSync = 0x04

	streamNonBlocking = 0x1
	eventDisableTime  = 0x2

	hostAllocPortable   = 0x01
	hostAllocDeviceMap  = 0x02
	hostRegPortable     = 0x01
	hostRegDeviceMap    = 0x02
	defaultHang         = 30 * time.Second
	wordsCommittedLater = 64
)

// gpuInfo is one GPU CUDA sees, in the process's list.
type gpuInfo struct {
	ordinal int // the CUdevice
	bus     string

	// ctx is the GPU's primary context, retained once, by the first
	// device, and kept for the process: set under mu, and read without it
	// by the opens of other GPUs, which must not take mu while their own
	// GPU's mu is held.
	ctx atomic.Uintptr

	// mu guards the rest: the GPU's open devices by timeline, the work
	// stopped devices left running, and the fault that ended the GPU's use.
	mu    sync.Mutex
	open  map[int]*gpu
	kept  []*keptWork
	fault string
}

// keptWork is what Stop keeps of a device whose work still ran: its
// timeline, an event behind the work on each stream (0 where CUDA made or
// recorded none), the stream itself where it has no event, which Stop
// leaves for settleKept to ask and destroy, and the word with the last
// value (nil once the word is freed). raise: CUDA refused Stop's write of
// the last value, so that the word is raised to it once the events and
// streams tell that the work ended.
type keptWork struct {
	timeline int
	events   [2]uintptr
	streams  [2]uintptr
	word     *uint64
	last     uint64
	raise    bool
}

var (
	listMu sync.Mutex
	gpus   []*gpuInfo // by PCI bus address; nil until listed
	// peers[i][j] is true once GPU i's context may access GPU j's memory.
	peers sync.Map // [2]int -> bool
)

// list returns the GPUs CUDA sees, by PCI bus address. The list is read at
// the first call whose load and listing succeed, and kept for the process.
func list() ([]*gpuInfo, *table, error) {
	t, err := load()
	if err != nil {
		return nil, nil, err
	}
	l, err := t.list()
	if err != nil {
		return nil, nil, err
	}
	return l, t, nil
}

// list reads the GPUs CUDA sees through t, once for the process (gpus).
func (t *table) list() ([]*gpuInfo, error) {
	listMu.Lock()
	defer listMu.Unlock()
	if gpus != nil {
		return gpus, nil
	}
	if t.noDevice {
		gpus = []*gpuInfo{}
		return gpus, nil
	}
	var n int32
	if r := t.call(t.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))); r != 0 {
		return nil, fmt.Errorf("cudadev: listing the GPUs: %w", t.err(r))
	}
	l := make([]*gpuInfo, 0, n)
	for i := 0; i < int(n); i++ {
		var dev int32
		if r := t.call(t.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(i)); r != 0 {
			return nil, fmt.Errorf("cudadev: listing GPU %d: %w", i, t.err(r))
		}
		buf := make([]byte, 64)
		if r := t.call(t.cuDeviceGetPCIBusId, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(dev)); r != 0 {
			return nil, fmt.Errorf("cudadev: reading GPU %d's bus address: %w", i, t.err(r))
		}
		l = append(l, &gpuInfo{ordinal: int(dev), bus: normalBus(string(buf[:clen(buf)]))})
	}
	sortByBus(l)
	gpus = l
	return gpus, nil
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// normalBus writes a PCI address as "dddd:bb:dd.f" in lower case, as
// /sys/bus/pci/devices names it: the domain in four digits at least, and
// more where it needs them (a domain past ffff, such as the 10000 of
// Intel's VMD, is "10000:bb:dd.f" there); CUDA may give the domain eight
// digits, whose leading zeros it drops.
func normalBus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexByte(s, ':'); i > 4 && strings.Count(s, ":") == 2 {
		dom := strings.TrimLeft(s[:i], "0")
		if len(dom) < 4 {
			dom = strings.Repeat("0", 4-len(dom)) + dom
		}
		s = dom + s[i:]
	}
	return s
}

// sortByBus orders GPUs by PCI address, whatever CUDA_DEVICE_ORDER says:
// by domain as a number, then by bus, device and function.
func sortByBus(l []*gpuInfo) {
	key := func(bus string) string {
		if i := strings.IndexByte(bus, ':'); i >= 0 && i < 8 {
			return strings.Repeat("0", 8-i) + bus
		}
		return bus
	}
	sort.SliceStable(l, func(i, j int) bool { return key(l[i].bus) < key(l[j].bus) })
}

// Count is the number of GPUs CUDA sees, or an error if the CUDA library
// cannot be loaded or initialised, or CUDA cannot list its GPUs. A machine
// with none returns 0. CUDA_VISIBLE_DEVICES decides which GPUs CUDA sees.
func Count() (int, error) {
	l, _, err := list()
	if err != nil {
		return 0, err
	}
	return len(l), nil
}

// Buses returns the PCI bus addresses of the GPUs CUDA sees, in the order
// GPU numbers them.
func Buses() ([]string, error) {
	l, _, err := list()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l))
	for i, g := range l {
		out[i] = g.bus
	}
	return out, nil
}

// Config adjusts an opener.
type Config struct {
	// Timeline is which timeline of the GPU the opener opens: 0, the
	// first, is GPU(i)'s; each is a device of its own (Timeline says so).
	// Negative panics.
	Timeline int

	// Hang bounds progress: rig loses the device once its word has not
	// moved for Hang while work is pending. 0 is the default: none where a
	// display's watchdog bounds the GPU's kernels, 30 s otherwise.
	// Negative is none. Facts.HangMs is the bound in whole milliseconds
	// (device.HangMsOf), 1 for a positive bound below a millisecond; the
	// opener refuses a bound whose milliseconds do not fit an int, naming
	// it, which only a 32-bit int allows, where cudadev does not open.
	Hang time.Duration

	// CurrentContext makes the device's context current for every call
	// of Submit, Commit and Sleep, as for every other call, instead of
	// running their stream calls without it (the package documentation,
	// Threads and contexts). For measuring what that saves.
	CurrentContext bool
}

// GPU is the opener of GPU i, the ith by PCI address among the GPUs CUDA
// sees, whatever CUDA_DEVICE_ORDER says: its first timeline. It is named
// "CUDA" for 0 and "CUDA:i" otherwise. It panics if i < 0.
func GPU(i int) device.Opener { return Open(i, Config{}) }

// Timeline is the opener of the kth timeline of GPU i, a device of its
// own beside the GPU's other timelines: its own word and its own two
// streams in the GPU's primary context, sharing the GPU's memory at the
// same addresses (the package documentation, Timelines). Timeline(i, 0)
// is GPU(i). The kth for k > 0 is named as GPU(i) with "/k" after it:
// "CUDA/1", "CUDA:2/3". It panics if i < 0 or k < 0.
func Timeline(i, k int) device.Opener { return Open(i, Config{Timeline: k}) }

// Open is GPU's opener with a configuration: the timeline c.Timeline of
// GPU i. It panics if i < 0 or c.Timeline < 0.
func Open(i int, c Config) device.Opener {
	if i < 0 {
		panic(fmt.Sprintf("cudadev: GPU(%d): a GPU's number is not negative", i))
	}
	if c.Timeline < 0 {
		panic(fmt.Sprintf("cudadev: Timeline(%d, %d): a timeline's number is not negative", i, c.Timeline))
	}
	name := Name(i, c.Timeline)
	return device.Opener{Name: name, Make: func(word *uint64) (device.Driver, error) {
		d, err := open(i, c, word)
		if err != nil {
			return nil, err
		}
		return d, nil
	}}
}

// Name is the name of the opener of GPU i's timeline k: "CUDA" or
// "CUDA:i" for the first, with "/k" after it for k > 0.
func Name(i, k int) string {
	name := "CUDA"
	if i > 0 {
		name = fmt.Sprintf("CUDA:%d", i)
	}
	if k > 0 {
		name = fmt.Sprintf("%s/%d", name, k)
	}
	return name
}

// the array of timeline words, registered once per process.
var array struct {
	mu         sync.Mutex
	registered bool
	base       uintptr
	n          int
}

// registerArray registers rig's array of words for every context, in the
// current context, once per process. It returns whether it is registered.
func registerArray(t *table, f *frame) bool {
	array.mu.Lock()
	defer array.mu.Unlock()
	if array.registered {
		return true
	}
	base, n, err := timeline.Array()
	if err != nil {
		return false
	}
	r := t.call(t.cuMemHostRegister, base, uintptr(n), hostRegPortable|hostRegDeviceMap)
	if r != 0 && r != errHostAlreadyRegister {
		return false
	}
	array.registered, array.base, array.n = true, base, n
	return true
}

// open opens timeline c.Timeline of GPU i with the word.
func open(i int, c Config, word *uint64) (*gpu, error) {
	l, t, err := list()
	if err != nil {
		return nil, err
	}
	if i >= len(l) {
		return nil, fmt.Errorf("cudadev: CUDA sees no GPU %d: it sees %d", i, len(l))
	}
	g := l[i]
	g.mu.Lock()
	defer g.mu.Unlock()
	k := c.Timeline
	if g.open[k] != nil {
		return nil, fmt.Errorf("cudadev: timeline %d of GPU %d (%s) has a device open", k, i, g.bus)
	}
	if len(g.kept) > 0 {
		if err := g.settleKept(t, k); err != nil {
			return nil, err
		}
	}
	if g.fault != "" {
		return nil, faultedError(i, g.bus, errors.New(g.fault))
	}
	d := &gpu{t: t, info: g, index: i, ordinal: g.ordinal, timeline: k}
	if err := d.make(c, word); err != nil {
		d.release()
		// A sticky error, wherever the open meets it, is a fault that
		// CUDA keeps in the context: later opens refuse the GPU.
		var e *Error
		if errors.As(err, &e) && result(e.Code).sticky() {
			if g.fault == "" {
				g.fault = t.text(result(e.Code))
			}
			if !errors.Is(err, ErrFaulted) {
				err = faultedError(i, g.bus, e)
			}
		}
		return nil, err
	}
	d.bare.Store(!c.CurrentContext && d.streamsCarryCtx())
	if g.open == nil {
		g.open = map[int]*gpu{}
	}
	g.open[k] = d
	return d, nil
}

// carryDepth bounds the contexts streamsCarryCtx takes off a thread's
// stack: with more pushed, it answers false.
const carryDepth = 16

// streamsCarryCtx reports whether CUDA runs the device's stream calls on a
// thread where the device's context is not current: on a locked thread it
// pops every context of the thread's stack, so that none is current,
// records an event on one stream, has the other wait for it and queries
// the first, then pushes the contexts back in their order. (Setting none
// current would take the top of the stack alone off it, and setting the
// previous one back would then replace the context below it.)
func (d *gpu) streamsCarryCtx() bool {
	t := d.t
	f := getFrame()
	defer putFrame(f)
	lockThread()
	defer unlockThread()
	var held [carryDepth]uintptr
	n := 0
	defer func() {
		for n > 0 {
			n--
			f.c1(t.cuCtxPushCurrent, held[n])
		}
	}()
	for {
		if f.c1(t.cuCtxGetCurrent, uintptr(unsafe.Pointer(&f.cur))) != 0 {
			return false
		}
		if f.cur == 0 {
			break
		}
		if n == len(held) || f.c1(t.cuCtxPopCurrent, uintptr(unsafe.Pointer(&f.cur))) != 0 {
			return false
		}
		held[n] = uintptr(f.cur)
		n++
	}
	ok := f.c2(t.cuEventRecord, d.joins[0], d.streams[0]) == 0 &&
		f.c3(t.cuStreamWaitEvent, d.streams[1], d.joins[0], 0) == 0
	if r := f.c1(t.cuStreamQuery, d.streams[1]); r != 0 && r != errNotReady {
		ok = false
	}
	return ok
}

// keptPoll is the longest pause between two looks of watchKept.
const keptPoll = 10 * time.Millisecond

// watchKept settles g's kept work now and then, as an open of the GPU
// does, until k's work has ended or a fault ended it, then returns: a
// fault of that work raises its device's word to its last value without
// waiting for the GPU's next open, so that rig gives the stopped device's
// memory back and its Done closes. Stop starts one for each device whose
// work it keeps; it takes g.mu.
func (g *gpuInfo) watchKept(t *table, k *keptWork) {
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, keptPoll) {
		time.Sleep(wait)
		g.mu.Lock()
		_ = g.settleKept(t, -1)
		still := slices.Contains(g.kept, k)
		g.mu.Unlock()
		if !still {
			return
		}
	}
}

// settleKept decides whether the work of g's stopped devices still runs:
// it forgets the work that ended, raises a stopped device's word to its
// last value once a fault ended its work, and returns an error while the
// work of timeline tl's stopped device still runs. g.mu is held.
func (g *gpuInfo) settleKept(t *table, tl int) error {
	f := getFrame()
	defer putFrame(f)
	ctx := g.ctx.Load()
	prev := enterCtx(t, f, ctx)
	defer leaveCtx(t, f, ctx, prev)
	var err error
	left := g.kept[:0]
	for _, k := range g.kept {
		ended, known := true, true
		var fault result
		for q, ev := range k.events {
			// Where Stop could not make or record the event, the
			// stream it kept tells when its work ends.
			h, query := ev, t.cuEventQuery
			if ev == 0 {
				h, query = k.streams[q], t.cuStreamQuery
			}
			if h == 0 {
				// Nothing tells when that stream's work ends.
				known = false
				continue
			}
			// Only a fault of the context's work ends the GPU's use; any
			// other refusal is of the query alone, which tells nothing
			// this time: the work is kept, and asked about again.
			switch r := f.c1(query, h); {
			case r == 0:
			case r.sticky():
				fault = r
			default:
				ended = false
			}
		}
		if fault == 0 && !ended {
			left = append(left, k)
			if k.timeline == tl {
				err = fmt.Errorf("cudadev: the work of the stopped device of timeline %d of GPU %s still runs", tl, g.bus)
			}
			continue
		}
		if fault != 0 {
			if k.word != nil {
				atomicRaise(k.word, k.last)
			}
			if g.fault == "" {
				g.fault = t.text(fault)
			}
		} else if k.raise && known && k.word != nil {
			// The work ended, and no write of the last value was
			// enqueued behind it.
			atomicRaise(k.word, k.last)
		}
		for q, ev := range k.events {
			if ev != 0 {
				f.c1(t.cuEventDestroy, ev)
			}
			if s := k.streams[q]; s != 0 {
				f.c1(t.cuStreamDestroy, s)
			}
		}
	}
	clear(g.kept[len(left):])
	g.kept = left
	return err
}

// atomicRaise stores v into w unless w already holds v or later.
func atomicRaise(w *uint64, v uint64) {
	for {
		cur := atomic.LoadUint64(w)
		if device.AtLeast(cur, v) || atomic.CompareAndSwapUint64(w, cur, v) {
			return
		}
	}
}

// keepAutoSched keeps a primary context's CU_CTX_SCHED_AUTO, for
// benchmarks that measure what blocking sync costs.
var keepAutoSched bool

// switches counts the calls that could not push the context and set it
// instead, for tests.
var switches atomic.Uint64

// pushed is enterCtx's answer where it pushed the context.
const pushed = ^uintptr(0)

// enterCtx locks the goroutine to its thread and makes ctx current on it
// (cuCtxPushCurrent), answering what leaveCtx needs to restore the
// thread's previous context. Where CUDA refuses the push, it sets ctx
// current and returns the previous context, as cuCtxGetCurrent read it;
// where CUDA refuses that too, the previous context is unknown: it
// returns ctx, so that leaveCtx restores none, rather than whatever an
// earlier call left in the frame (another GPU's context, say).
func enterCtx(t *table, f *frame, ctx uintptr) uintptr {
	lockThread()
	if f.c1(t.cuCtxPushCurrent, ctx) == 0 {
		return pushed
	}
	switches.Add(1)
	if f.c1(t.cuCtxGetCurrent, uintptr(unsafe.Pointer(&f.cur))) != 0 {
		f.c1(t.cuCtxSetCurrent, ctx)
		return ctx
	}
	prev := uintptr(f.cur)
	if prev != ctx {
		f.c1(t.cuCtxSetCurrent, ctx)
	}
	return prev
}

// leaveCtx restores the thread's previous context, prev, as enterCtx
// answered it: it pops the context enterCtx pushed, sets back the one
// enterCtx read, and restores none where prev is ctx. It unlocks the
// thread.
func leaveCtx(t *table, f *frame, ctx, prev uintptr) {
	switch prev {
	case pushed:
		f.c1(t.cuCtxPopCurrent, uintptr(unsafe.Pointer(&f.cur)))
	case ctx:
	default:
		f.c1(t.cuCtxSetCurrent, prev)
	}
	unlockThread()
}

// make opens the device: the primary context, the streams, the word, the
// limits and the clock measure. On error the caller releases what it made.
func (d *gpu) make(c Config, word *uint64) error {
	t, g := d.t, d.info
	attr := func(a int) (int, error) {
		var v int32
		if r := t.call(t.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(d.ordinal)); r != 0 {
			return 0, fmt.Errorf("cudadev: reading attribute %d of GPU %d: %w", a, d.index, t.err(r))
		}
		return int(v), nil
	}
	var errs []error
	get := func(a int) int {
		v, err := attr(a)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	// A refused read is CUDA's error, not a GPU that lacks the feature.
	if v, err := attr(attrUnifiedAddressing); err != nil {
		return err
	} else if v == 0 {
		return fmt.Errorf("cudadev: GPU %d (%s) lacks unified addressing, which rig needs", d.index, g.bus)
	}
	if v, err := attr(attr64BitStreamMemOps); err != nil {
		return err
	} else if v == 0 {
		return fmt.Errorf("cudadev: GPU %d (%s) lacks 64-bit stream memory operations (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS), which rig's timeline words need", d.index, g.bus)
	}
	d.major, d.minor = get(attrComputeMajor), get(attrComputeMinor)
	for a := 0; a < 3; a++ {
		d.maxBlock[a] = uint32(get(attrMaxBlockDimX + a))
		d.maxGrid[a] = uint32(get(attrMaxGridDimX + a))
	}
	d.maxThreads = get(attrMaxThreadsPerBlock)
	d.maxPitch = uint64(get(attrMaxPitch))
	d.sharedOptin = get(attrMaxSharedOptin)
	watchdog := get(attrKernelExecTimeout) != 0
	l2 := get(attrL2CacheSize)
	mapsHost := get(attrCanMapHostMemory) != 0 && get(attrHostRegisterSupported) != 0
	d.dmaDevice, _ = attr(attrDMABufSupported)
	d.dmaPinned, _ = attr(attrHostAllocDMABuf)
	if len(errs) > 0 {
		return errs[0]
	}
	var total uint64
	if r := t.call(t.cuDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(d.ordinal)); r != 0 {
		return fmt.Errorf("cudadev: reading GPU %d's memory: %w", d.index, t.err(r))
	}

	// The primary context, its scheduling set to block where it is AUTO.
	if g.ctx.Load() == 0 {
		var flags uint32
		var active int32
		if r := t.call(t.cuDevicePrimaryCtxGetState, uintptr(d.ordinal), uintptr(unsafe.Pointer(&flags)), uintptr(unsafe.Pointer(&active))); r != 0 {
			return fmt.Errorf("cudadev: reading GPU %d's primary context: %w", d.index, t.err(r))
		}
		if flags&ctxSchedMask == ctxSchedAuto && !keepAutoSched {
			if r := t.call(t.cuDevicePrimaryCtxSetFlags, uintptr(d.ordinal), uintptr(flags|ctxSchedBlockingSync)); r != 0 {
				return fmt.Errorf("cudadev: setting GPU %d's scheduling to blocking sync: %w", d.index, t.err(r))
			}
		}
		var ctx uintptr
		if r := t.call(t.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&ctx)), uintptr(d.ordinal)); r != 0 {
			return fmt.Errorf("cudadev: retaining GPU %d's primary context: %w", d.index, t.err(r))
		}
		g.ctx.Store(ctx)
	}
	d.ctx = g.ctx.Load()

	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)

	var lim uint64
	if r := t.call(t.cuCtxGetLimit, uintptr(unsafe.Pointer(&lim)), limitMaxL2FetchGranularity); r == 0 && lim == 64 {
		t.call(t.cuCtxSetLimit, limitMaxL2FetchGranularity, 128)
	} else if r.sticky() {
		return faultedError(d.index, d.info.bus, t.err(r))
	}

	for q := range d.streams {
		var s uintptr
		if r := t.call(t.cuStreamCreate, uintptr(unsafe.Pointer(&s)), streamNonBlocking); r != 0 {
			return fmt.Errorf("cudadev: making a stream on GPU %d: %w", d.index, t.err(r))
		}
		d.streams[q] = s
	}
	if r := t.call(t.cuStreamCreate, uintptr(unsafe.Pointer(&d.clockStream)), streamNonBlocking); r != 0 {
		return fmt.Errorf("cudadev: making a stream on GPU %d: %w", d.index, t.err(r))
	}
	for q := range d.joins {
		if r := t.call(t.cuEventCreate, uintptr(unsafe.Pointer(&d.joins[q])), eventDisableTime); r != 0 {
			return fmt.Errorf("cudadev: making an event on GPU %d: %w", d.index, t.err(r))
		}
	}

	// The word: in rig's array, registered and mapped, or a word of the
	// device's own.
	d.facts = device.Facts{
		Arch:        fmt.Sprintf("sm_%d%d", d.major, d.minor),
		Budget:      int64(total),
		Queues:      []string{"COMPUTE:0", "COPY:0"},
		CopyEngine:  device.Copy,
		Completion:  device.Store,
		MayBlock:    true,
		MapsHost:    mapsHost,
		Kinds:       device.KindsOf(device.DeviceMemory, device.PinnedMemory),
		Alignment:   256,
		CacheBytes:  int64(l2),
		Capability:  cuda.Key,
		Bus:         g.bus,
		FaultDomain: "cuda",
	}
	hang := c.Hang
	if hang == 0 && !watchdog {
		hang = defaultHang
	}
	hangMs, err := device.HangMsOf(hang)
	if err != nil {
		return fmt.Errorf("cudadev: %w", err)
	}
	d.facts.HangMs = hangMs
	if mapsHost && registerArray(t, f) {
		var dbase uint64
		if r := t.call(t.cuMemHostGetDevicePointer, uintptr(unsafe.Pointer(&dbase)), array.base, 0); r == 0 {
			d.arrayDev = dbase
			d.facts.Waits = device.WaitStores | device.WaitHosts
		}
	}
	if d.arrayDev != 0 && timeline.Contains(word) {
		d.word = word
		d.wordDev = d.arrayDev + uint64(uintptr(unsafe.Pointer(word))-array.base)
		d.facts.Word = word
	} else {
		var p uintptr
		if r := t.call(t.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), 8, hostAllocPortable|hostAllocDeviceMap); r != 0 {
			return fmt.Errorf("cudadev: allocating GPU %d's word: %w", d.index, t.err(r))
		}
		var dp uint64
		if r := t.call(t.cuMemHostGetDevicePointer, uintptr(unsafe.Pointer(&dp)), p, 0); r != 0 {
			t.call(t.cuMemFreeHost, p)
			return fmt.Errorf("cudadev: mapping GPU %d's word: %w", d.index, t.err(r))
		}
		w := cWord(p)
		start := uint64(0)
		if word != nil {
			start = atomic.LoadUint64(word)
		}
		atomic.StoreUint64(w, start)
		d.word, d.wordDev = w, dp
		d.own = &region{kind: ownWord, size: 8, loc: device.Location{Address: dp, Handle: uint64(p)}, host: p}
		d.facts.OwnWord = d.own
	}
	last := atomic.LoadUint64(d.word)
	d.last, d.written = last, last

	d.enablePeers(f)

	d.rec = &cuda.Record{
		Version: t.version, Ordinal: d.ordinal, Bus: g.bus, Context: d.ctx,
		Compute: d.streams[0], Copy: d.streams[1],
		Funcs:  t.funcs(),
		Symbol: t.lookup,
		Graphs: &graphs{d: d},
	}
	if err := d.measure(f); err != nil {
		return err
	}
	return nil
}

// enablePeers enables access between d's GPU and every other GPU whose
// primary context the process holds, both ways, where CUDA gives it.
func (d *gpu) enablePeers(f *frame) {
	t := d.t
	listMu.Lock()
	others := append([]*gpuInfo(nil), gpus...)
	listMu.Unlock()
	for j, o := range others {
		if o == d.info {
			continue
		}
		// Not o.mu: an open of o's GPU holds it while it enables its
		// peers, and the caller holds d's GPU's.
		octx := o.ctx.Load()
		if octx == 0 {
			continue
		}
		var can int32
		if t.call(t.cuDeviceCanAccessPeer, uintptr(unsafe.Pointer(&can)), uintptr(d.ordinal), uintptr(o.ordinal)) == 0 && can != 0 {
			if r := t.call(t.cuCtxEnablePeerAccess, octx, 0); r == 0 || r == errPeerAlreadyEnabled {
				peers.Store([2]int{d.index, j}, true)
			}
		}
		can = 0
		if t.call(t.cuDeviceCanAccessPeer, uintptr(unsafe.Pointer(&can)), uintptr(o.ordinal), uintptr(d.ordinal)) == 0 && can != 0 {
			prev := enterCtx(t, f, octx)
			r := t.call(t.cuCtxEnablePeerAccess, d.ctx, 0)
			leaveCtx(t, f, octx, prev)
			if r == 0 || r == errPeerAlreadyEnabled {
				peers.Store([2]int{j, d.index}, true)
			}
		}
	}
}

// funcs is the record's table of addresses.
func (t *table) funcs() cuda.Funcs {
	return cuda.Funcs{
		CtxGetCurrent: t.cuCtxGetCurrent, CtxSetCurrent: t.cuCtxSetCurrent,
		LaunchKernel: t.cuLaunchKernel,
		MemcpyAsync:  t.cuMemcpyAsync, Memcpy2DAsync: t.cuMemcpy2DAsync,
		MemsetD8Async: t.cuMemsetD8Async, MemsetD2D8Async: t.cuMemsetD2D8Async,
		StreamWaitValue64: t.cuStreamWaitValue64, StreamWriteValue64: t.cuStreamWriteValue64,
		StreamBatchMemOp: t.cuStreamBatchMemOp,
		StreamWaitEvent:  t.cuStreamWaitEvent, StreamQuery: t.cuStreamQuery,
		EventCreate: t.cuEventCreate, EventRecord: t.cuEventRecord, EventDestroy: t.cuEventDestroy,
		GraphLaunch:  t.cuGraphLaunch,
		GetErrorName: t.cuGetErrorName, GetErrorString: t.cuGetErrorString,
		ModuleGetFunction: t.cuModuleGetFunction, ModuleGetGlobal: t.cuModuleGetGlobal, FuncLoad: t.cuFuncLoad,
		MemAlloc: t.cuMemAlloc, MemFree: t.cuMemFree, MemHostAlloc: t.cuMemHostAlloc, MemFreeHost: t.cuMemFreeHost,
		MemHostRegister: t.cuMemHostRegister, MemHostUnregister: t.cuMemHostUnregister,
		MemHostGetDevicePointer: t.cuMemHostGetDevicePointer, PointerGetAttribute: t.cuPointerGetAttribute,
		DeviceGetAttribute: t.cuDeviceGetAttribute, FuncGetAttribute: t.cuFuncGetAttribute,
		FuncSetAttribute: t.cuFuncSetAttribute, FuncGetParamInfo: t.cuFuncGetParamInfo,
		GraphInstantiateWithFlags: t.cuGraphInstantiateWithFlags, GraphExecDestroy: t.cuGraphExecDestroy,
		GraphCreate: t.cuGraphCreate, GraphDestroy: t.cuGraphDestroy, GraphAddKernelNode: t.cuGraphAddKernelNode,
	}
}

// release gives back what a failed make made.
func (d *gpu) release() {
	t := d.t
	if d.ctx == 0 {
		return
	}
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	for _, s := range append(d.streams[:], d.clockStream) {
		if s != 0 {
			f.c1(t.cuStreamDestroy, s)
		}
	}
	d.destroyEvents(f)
	if d.own != nil {
		f.c1(t.cuMemFreeHost, d.own.host)
	}
}
