package cudadev

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/hostram"
)

// gpu is one open device: a GPU's primary context, two streams and a
// timeline word. rig owns it from make until it has freed every region and
// unloaded every image after Stop.
type gpu struct {
	t       *table
	info    *gpuInfo
	index   int // the GPU's number in rig's list, by bus address
	ordinal int // its CUdevice
	// timeline is which of the GPU's timelines the device is (Timeline).
	timeline int
	ctx      uintptr

	major, minor         int
	maxBlock, maxGrid    [3]uint32
	maxThreads           int
	maxPitch             uint64
	sharedOptin          int
	dmaDevice, dmaPinned int

	streams     [2]uintptr // "COMPUTE:0", "COPY:0"
	clockStream uintptr    // the clock measure's own stream
	joins       [2]uintptr // an event per stream, for order between them

	facts device.Facts
	rec   *cuda.Record

	word     *uint64 // the host's view of the word: rig's, or own's memory
	wordDev  uint64  // the word's device address
	arrayDev uint64  // the device address of rig's array, 0 if unmapped
	own      *region // the word of the device's own, or nil

	// bare: the stream calls of Submit, Commit and Sleep run without the
	// context made current, since each names a stream, which names the
	// context (open checks it; a call refused for want of a context
	// clears it). Set by open; cleared by the goroutine whose call CUDA
	// refused: a submitter under rig's submit lock, the supervisor in
	// Sleep, or a Sleep helper.
	bare atomic.Bool

	// The hot path's state, which rig's submit lock guards (Room, Submit
	// and Commit are called one at a time, in value order).
	hot       frame
	hotBare   bareCall
	last      uint64 // the last value given to Submit
	written   uint64 // the last value a stream write was enqueued for
	end       int    // the stream the last value ended on
	split     bool   // no stream follows all the work (closeValue)
	failed    string // the failure every later submit answers
	ctxFailed bool   // a fault ended the context's work
	extra     [5]uintptr
	psize     uint64
	cp        memcpy2D
	ops       [maxBatch]batchOp
	afterEv   []uintptr // events of parts that later parts run after
	mark      []bool    // which parts record an event for a later one

	// Sleep's state: only the supervisor calls Sleep.
	sleepF    frame
	sleepBare bareCall
	nap       napTime
	sleeper   sleeper

	faultMu sync.Mutex
	fault   string // the fault a stream met, once Sleep or Stop saw one

	prof profile

	stopMu  sync.Mutex
	stopped bool
}

// Facts is the device's facts.
func (d *gpu) Facts() *device.Facts { return &d.facts }

// Capability is the device's *cuda.Record.
func (d *gpu) Capability() any { return d.rec }

// regionKind is what a region is.
type regionKind uint8

const (
	devMem     regionKind = iota + 1 // cuMemAlloc
	pinnedMem                        // Go memory that cuMemHostRegister locked, portable and mapped: counted
	hostMap                          // MapHost that locked its range: counted
	hostBorrow                       // MapHost inside memory CUDA locked for another owner
	peerView                         // MapPeer of another device's region
	ownWord                          // the device's own word
)

// region is memory of a device.
type region struct {
	kind regionKind
	size uint64 // the bytes it addresses
	loc  device.Location
	host uintptr    // the host address of host memory
	rng  *hostRange // the counted range of a pinnedMem or a hostMap
}

// handle is the address by which CUDA names the region's memory in copies.
func (r *region) handle() uint64 { return r.loc.Handle }

func (d *gpu) region(r device.Region, call string) (*region, error) {
	reg, ok := r.(*region)
	if !ok || reg == nil {
		return nil, fmt.Errorf("cudadev: %s of a region of another driver (%T)", call, r)
	}
	return reg, nil
}

// fail converts CUDA's refusal r of a counted call into an error: a
// *device.Fault after a fault of the GPU's work, refusal otherwise.
func (d *gpu) fail(what string, r result, refusal error) error {
	if r.sticky() {
		d.noteFault(d.t.text(r))
		return &device.Fault{Why: d.t.text(r)}
	}
	if refusal != nil {
		return fmt.Errorf("%w: %s: %s", refusal, what, d.t.text(r))
	}
	return fmt.Errorf("cudadev: %s: %w", what, d.t.err(r))
}

// mapRefusal is the refusal of a mapping of host memory that CUDA
// answered r: ErrNoRoom where CUDA lacked the memory to map it
// (CUDA_ERROR_OUT_OF_MEMORY), which may pass, and ErrNever otherwise.
func mapRefusal(r result) error {
	if r == errOutOfMemory {
		return device.ErrNoRoom
	}
	return device.ErrNever
}

// lacking is the refusal of an allocation CUDA answered r: ErrNoMemory
// where CUDA lacks the memory (CUDA_ERROR_OUT_OF_MEMORY), which the
// runtime meets with rounds of reclamation, and nil for any other answer,
// which no reclamation changes: fail then returns CUDA's error.
func lacking(r result) error {
	if r == errOutOfMemory {
		return device.ErrNoMemory
	}
	return nil
}

// noteFault records the fault that ended the context's work.
func (d *gpu) noteFault(why string) {
	d.faultMu.Lock()
	if d.fault == "" {
		d.fault = why
	}
	d.faultMu.Unlock()
}

func (d *gpu) faulted() string {
	d.faultMu.Lock()
	defer d.faultMu.Unlock()
	return d.fault
}

// Alloc is n bytes of d's memory m: GPU memory for Device, page-locked host
// memory that every CUDA device addresses for Pinned, and ErrNoMemory for
// Mapped, since CUDA maps no GPU memory for the host. Pinned memory is Go
// memory (whole pages of Go's heap) that CUDA page-locks and maps
// (cuMemHostRegister, portable and mapped): Free unlocks it once no region
// counts its range, and the garbage collector frees it once no slice of it
// is left, so that a slice of it never faults nor aliases other memory;
// where CUDA refuses the unlock (after a fault of the GPU's work), the
// process keeps the pages, which CUDA keeps locked and mapped.
// More Pinned memory than the host has is ErrNoMemory, and so is CUDA's
// CUDA_ERROR_OUT_OF_MEMORY; any other refusal of CUDA's is returned as
// CUDA's error. It returns an error naming n below 1, or m where it is no
// kind of memory. Counted.
func (d *gpu) Alloc(m device.Memory, n int) (device.Region, error) {
	if n < 1 {
		return nil, fmt.Errorf("cudadev: alloc of %d bytes of %s memory: a region holds at least one byte", n, m)
	}
	switch m {
	case device.DeviceMemory, device.PinnedMemory:
	case device.MappedMemory:
		return nil, device.ErrNoMemory
	default:
		return nil, fmt.Errorf("cudadev: alloc of %d bytes of memory kind %d, which is none of Device, Pinned and Mapped", n, m)
	}
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	f.out[0] = 0
	if m == device.DeviceMemory {
		if r := f.c2(t.cuMemAlloc, f.outp(0), uintptr(n)); r != 0 {
			return nil, d.fail("allocating Device memory", r, lacking(r))
		}
		p := f.out[0]
		return &region{kind: devMem, size: uint64(n), loc: device.Location{Address: p, Handle: p}}, nil
	}
	if uintptr(n) > ^uintptr(0)-pageSize {
		return nil, device.ErrNoMemory
	}
	size := (uintptr(n) + pageSize - 1) &^ (pageSize - 1)
	if ram := hostram.Bytes(); ram > 0 && uint64(size) > ram {
		// No page-locking gives more than the host's memory, and the
		// Go memory would not be made: the runtime ends the process
		// where the OS refuses it.
		return nil, fmt.Errorf("cudadev: alloc of %d bytes of Pinned memory, more than the host's %d: %w", n, ram, device.ErrNoMemory)
	}
	mem := goPages(int(size))
	h := uintptr(unsafe.Pointer(&mem[0]))
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	if r := f.c3(t.cuMemHostRegister, h, size, hostRegPortable|hostRegDeviceMap); r != 0 {
		return nil, d.fail(fmt.Sprintf("page-locking %d bytes of Pinned memory", size), r, lacking(r))
	}
	f.out[1] = 0
	if r := f.c3(t.cuMemHostGetDevicePointer, f.outp(1), h, 0); r != 0 {
		keptLocked(f.c1(t.cuMemHostUnregister, h), mem)
		return nil, d.fail("mapping Pinned memory", r, lacking(r))
	}
	rng := &hostRange{start: h, n: size, count: 1, pages: mem}
	hosts.ranges = append(hosts.ranges, rng)
	return &region{kind: pinnedMem, size: uint64(n), host: h, rng: rng,
		loc: device.Location{Address: f.out[1], Handle: uint64(h), Host: h}}, nil
}

// Free gives back r. It ignores CUDA's errors, but where CUDA refuses to
// unlock Pinned memory the process keeps its pages (Alloc).
func (d *gpu) Free(r device.Region) error {
	reg, err := d.region(r, "free")
	if err != nil {
		return err
	}
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	switch reg.kind {
	case devMem:
		f.c1(t.cuMemFree, uintptr(reg.loc.Address))
	case ownWord:
		// The work Stop kept may still be settled at a later open, which
		// must not touch the word once it is freed.
		g := d.info
		g.mu.Lock()
		for _, k := range g.kept {
			if uintptr(unsafe.Pointer(k.word)) == reg.host {
				k.word = nil
			}
		}
		g.mu.Unlock()
		f.c1(t.cuMemFreeHost, reg.host)
	case pinnedMem, hostMap:
		hosts.mu.Lock()
		rg := reg.rng
		rg.count--
		if rg.count == 0 {
			keptLocked(f.c1(t.cuMemHostUnregister, rg.start), rg.pages)
			for i, o := range hosts.ranges {
				if o == rg {
					hosts.ranges = append(hosts.ranges[:i], hosts.ranges[i+1:]...)
					break
				}
			}
			// Unlocked, or kept for the process where CUDA refused: the
			// collector may free the pages once no slice of them is left.
			rg.pages = nil
		}
		hosts.mu.Unlock()
	}
	return nil
}

// Locate is where r lies.
func (d *gpu) Locate(r device.Region) device.Location {
	if reg, ok := r.(*region); ok && reg != nil {
		return reg.loc
	}
	return device.Location{}
}

// Peer is true iff other is a device of d's GPU, or CUDA gave d's GPU
// access to other's GPU memory when the later of the two opened.
func (d *gpu) Peer(other device.Driver) bool {
	o, ok := other.(*gpu)
	if !ok {
		return false
	}
	if o.info == d.info {
		return true
	}
	v, _ := peers.Load([2]int{d.index, o.index})
	b, _ := v.(bool)
	return b
}

// MapPeer maps for d the memory of r, a region of other: host memory
// always, GPU memory where Peer is true, ErrNever otherwise. Where CUDA
// lacks the memory to map host memory (CUDA_ERROR_OUT_OF_MEMORY) it
// returns ErrNoRoom, and ErrNever for CUDA's other refusals. Counted.
func (d *gpu) MapPeer(other device.Driver, r device.Region) (device.Region, error) {
	reg, err := d.region(r, "map_peer")
	if err != nil {
		return nil, err
	}
	if reg.host != 0 {
		t := d.t
		f := getFrame()
		defer putFrame(f)
		prev := enterCtx(t, f, d.ctx)
		defer leaveCtx(t, f, d.ctx, prev)
		f.out[0] = 0
		if rc := f.c3(t.cuMemHostGetDevicePointer, f.outp(0), reg.host, 0); rc != 0 {
			return nil, d.fail("mapping another device's host memory", rc, mapRefusal(rc))
		}
		return &region{kind: peerView, size: reg.size, host: reg.host,
			loc: device.Location{Address: f.out[0], Handle: reg.loc.Handle, Host: reg.host}}, nil
	}
	if !d.Peer(other) {
		return nil, fmt.Errorf("%w: GPU %d has no access to the other GPU's memory", device.ErrNever, d.index)
	}
	return &region{kind: peerView, size: reg.size, loc: reg.loc}, nil
}

// hostRange is a range of host memory that MapHost or Alloc page-locked,
// and the number of regions over it, on any device.
type hostRange struct {
	start, n uintptr
	count    int
	pages    []byte // the Go memory of a Pinned allocation, held while locked
}

// keptLocked keeps pages, the Go memory of a Pinned range, for the
// process where r, CUDA's answer to their unlock, is a refusal other than
// of memory not locked (as every call of a context is refused after a
// fault of its work): CUDA keeps them locked and mapped for every device,
// so that the collector must not give them to other Go values, which a GPU
// would still address, and where CUDA would refuse to lock a later
// allocation. hosts.mu is held.
func keptLocked(r result, pages []byte) {
	if r != 0 && r != errHostNotRegistered && pages != nil {
		hosts.refused = append(hosts.refused, pages)
	}
}

// goPages is size bytes of Go memory that start a page, size a multiple of
// the page: an array of its own, so that no other Go value shares the
// pages CUDA locks. Go gives an array of whole pages a page of its own,
// which goPages checks; it makes a page more and aligns where it did not.
func goPages(size int) []byte {
	b := make([]byte, size)
	if uintptr(unsafe.Pointer(&b[0]))%pageSize == 0 {
		return b
	}
	b = make([]byte, size+int(pageSize))
	skip := int((pageSize - uintptr(unsafe.Pointer(&b[0]))%pageSize) % pageSize)
	return b[skip : skip+size : skip+size]
}

var hosts struct {
	mu     sync.Mutex
	ranges []*hostRange
	// refused holds, for the process, the Go memory of Pinned ranges
	// whose unlock CUDA refused (keptLocked).
	refused [][]byte
}

// CUDA's pointer attributes that MapHost reads.
const (
	pointerRangeStart = 11
	pointerRangeSize  = 12
)

var pageSize = uintptr(os.Getpagesize())

// MapHost page-locks for every CUDA device the pages that hold the n bytes
// at p, and maps them for d. A range inside one that MapHost or a Pinned
// Alloc locked counts against it; a range that overlaps such ranges
// without lying inside one is refused with ErrNever; a range inside one
// allocation CUDA locked for another owner is mapped as it is, uncounted;
// any other range is locked, or refused: ErrNoRoom where CUDA lacked the
// memory, ErrNever otherwise. It returns an error naming n below 1.
// Counted.
func (d *gpu) MapHost(p uintptr, n int) (device.Region, error) {
	if n < 1 {
		return nil, fmt.Errorf("cudadev: map_host of %d bytes at %#x: a region holds at least one byte", n, p)
	}
	if !d.facts.MapsHost {
		return nil, fmt.Errorf("%w: GPU %d maps no host memory (CUDA says it cannot map or register host memory)", device.ErrNever, d.index)
	}
	start := p &^ (pageSize - 1)
	end := (p + uintptr(n) + pageSize - 1) &^ (pageSize - 1)
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	kind := hostMap
	var rng *hostRange
	overlaps := false
	for _, o := range hosts.ranges {
		if start >= o.start && end <= o.start+o.n {
			rng = o
			break
		}
		overlaps = overlaps || (start < o.start+o.n && o.start < end)
	}
	if rng == nil && overlaps {
		// Bytes across the ranges the driver counts, or across one's
		// edge: counted against none, they would stay mapped after the
		// Free that unlocks a range's pages.
		return nil, fmt.Errorf("%w: %d bytes at %#x overlap page-locked memory without lying inside one of its ranges", device.ErrNever, n, p)
	}
	if rng == nil && d.borrowed(f, p, uintptr(n)) {
		kind = hostBorrow
	} else if rng == nil {
		switch rc := f.c3(t.cuMemHostRegister, start, end-start, hostRegPortable|hostRegDeviceMap); {
		case rc == 0:
			rng = &hostRange{start: start, n: end - start}
			hosts.ranges = append(hosts.ranges, rng)
		case rc == errHostAlreadyRegister:
			return nil, fmt.Errorf("%w: %d bytes at %#x overlap page-locked memory without lying inside one of its ranges", device.ErrNever, n, p)
		case rc == errOutOfMemory:
			return nil, d.fail(fmt.Sprintf("page-locking %d bytes at %#x", end-start, start), rc, device.ErrNoRoom)
		default:
			return nil, d.fail(fmt.Sprintf("page-locking %d bytes at %#x", end-start, start), rc, device.ErrNever)
		}
	}
	f.out[2] = 0
	if rc := f.c3(t.cuMemHostGetDevicePointer, f.outp(2), p, 0); rc != 0 {
		if rng != nil && rng.count == 0 {
			f.c1(t.cuMemHostUnregister, rng.start)
			hosts.ranges = hosts.ranges[:len(hosts.ranges)-1]
		}
		return nil, d.fail("mapping host memory", rc, mapRefusal(rc))
	}
	reg := &region{kind: kind, size: uint64(n), host: p,
		loc: device.Location{Address: f.out[2], Handle: uint64(p), Host: p}}
	if kind == hostMap {
		rng.count++
		reg.rng = rng
	}
	return reg, nil
}

// borrowed reports whether the n bytes at p lie inside one allocation
// that CUDA page-locked for another owner, by the allocation's range.
// Where CUDA gives no range, it reports false: under unified addressing
// the device addresses of the first and last bytes are n-1 apart across
// two allocations too, so they cannot tell one from two. MapHost then asks
// CUDA to lock the bytes, which it refuses over locked memory.
func (d *gpu) borrowed(f *frame, p, n uintptr) bool {
	t := d.t
	f.out[0], f.out[1] = 0, 0
	if f.c3(t.cuPointerGetAttribute, f.outp(0), pointerRangeStart, p) == 0 &&
		f.c3(t.cuPointerGetAttribute, f.outp(1), pointerRangeSize, p) == 0 && f.out[1] > 0 {
		return p >= uintptr(f.out[0]) && p+n <= uintptr(f.out[0]+f.out[1])
	}
	return false
}

// busAddress matches a PCI function's bus address, such as "0000:41:00.0".
var busAddress = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD.
const rangeHandleDMABuf = 1

// DMA exports the whole allocation r lies in as a dma-buf for the PCI
// function fn (cuMemGetHandleForAddressRange, no flags). Counted.
func (d *gpu) DMA(r device.Region, fn string) (device.DMA, error) {
	if !busAddress.MatchString(fn) {
		return device.DMA{}, fmt.Errorf("cudadev: dma for %q: not a PCI bus address such as 0000:41:00.0", fn)
	}
	if _, err := os.Stat("/sys/bus/pci/devices/" + normalBus(fn)); err != nil {
		return device.DMA{}, fmt.Errorf("cudadev: dma for %s: no such PCI function under /sys/bus/pci/devices", fn)
	}
	reg, err := d.region(r, "dma")
	if err != nil {
		return device.DMA{}, err
	}
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	var base, size uint64
	switch reg.kind {
	case devMem:
		if d.dmaDevice == 0 {
			return device.DMA{}, fmt.Errorf("cudadev: dma for %s: CUDA exports no dma-buf of GPU %d's memory (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)", fn, d.index)
		}
		f.out[0], f.out[1] = 0, 0
		if rc := f.c3(t.cuMemGetAddressRange, f.outp(0), f.outp(1), uintptr(reg.loc.Address)); rc != 0 {
			return device.DMA{}, d.fail("finding the allocation", rc, nil)
		}
		base, size = f.out[0], f.out[1]
	case pinnedMem:
		if d.dmaPinned == 0 {
			return device.DMA{}, fmt.Errorf("cudadev: dma for %s: CUDA exports no dma-buf of page-locked host memory here (CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED is 0 or unknown)", fn)
		}
		base, size = reg.loc.Address, uint64(reg.rng.n)
	default:
		return device.DMA{}, fmt.Errorf("cudadev: dma for %s: only a region alloc made is exported", fn)
	}
	if base%uint64(pageSize) != 0 || size%uint64(pageSize) != 0 {
		return device.DMA{}, fmt.Errorf("cudadev: dma for %s: the allocation at %#x of %d bytes is off the host's %d-byte pages, and CUDA exports only whole pages", fn, base, size, pageSize)
	}
	f.out[2] = 0
	if rc := f.c5(t.cuMemGetHandleForAddressRange, f.outp(2), uintptr(base), uintptr(size), rangeHandleDMABuf, 0); rc != 0 {
		return device.DMA{}, d.fail("exporting a dma-buf", rc, nil)
	}
	fd := int(int32(uint32(f.out[2])))
	return device.DMA{Kind: device.DMABuf, FD: fd, Offset: reg.loc.Address - base}, nil
}

// errStopped returns calls that need the device's streams after Stop.
var errStopped = errors.New("cudadev: the device is stopped")
