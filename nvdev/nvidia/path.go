package nvidia

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// Options tune Open. The zero value is the default.
type Options struct {
	// HangMs is the path's hang_ms: work whose timeline word has not moved
	// for HangMs milliseconds hung. 0 is None: the RM's watchdog, not rig,
	// bounds the GPU's work.
	HangMs int

	// bar1Doorbell maps the usermode page through BAR1 rather than BAR0
	// (NV_HOPPER_USERMODE_A_PARAMS.bBar1Mapping), as libcuda does. Hopper
	// only.
	bar1Doorbell bool

	// defaultMap also maps each memory into the device's default address
	// space (NV_ESC_RM_MAP_MEMORY_DMA through an NV01_MEMORY_VIRTUAL), as
	// tinygrad does before UVM maps it. The channels never use that space.
	defaultMap bool
}

// GPU is what the path read of a GPU.
type GPU struct {
	// Generation holds the classes of the GPU's channels and engines.
	Generation
	// SMVersion is the multiprocessors' version as the RM reports it
	// (NV2080_CTRL_GR_INFO_INDEX_SM_VERSION), such as 0x900.
	SMVersion uint32
	// GPCs, TPCsPerGPC and SMsPerTPC are the GPU's graphics processing
	// clusters, the texture processing clusters of one, and the
	// multiprocessors of one of those, as the RM's LITTER counts give them:
	// the chip's, of which some may be fused off.
	GPCs, TPCsPerGPC, SMsPerTPC int
	// WarpsPerSM is the most warps a multiprocessor runs concurrently.
	WarpsPerSM int
	// Classes lists every class the RM offers on the GPU.
	Classes []uint32
}

// Arch is the multiprocessors' architecture, such as "sm_90".
func (g GPU) Arch() string {
	major, minor := (g.SMVersion>>8)&0xff, g.SMVersion&0xff
	if minor > 0xf {
		minor >>= 4
	}
	return fmt.Sprintf("sm_%d%d", major, minor)
}

// Memory is memory a path gives a device.
type Memory struct {
	// Kind is Device, Pinned or Mapped memory; host memory MapHost maps is
	// Pinned, with Borrowed set.
	Kind device.Memory
	// Borrowed is true for host memory MapHost mapped, which the caller
	// owns, and for a view MapPeer made of another GPU's memory.
	Borrowed bool
	// Address is the GPU address of its first byte. No byte of it lies from
	// 2^40 - 8 GiB (the windows) to 2^40. Pinned and Mapped memory, and
	// host memory the path maps, lie below the windows.
	Address uint64
	// Host is the host address of its first byte, or 0 where the host does
	// not address it (Device memory).
	Host uintptr
	// Size is the bytes asked for. The GPU maps the whole pages that hold
	// them.
	Size int
	// Handle is the RM's name of the memory, which channel allocations take.
	Handle Handle
	// Data is the path's own record of the memory.
	Data any
}

// Bytes is the memory as the host sees it, or nil for Device memory, for
// host memory MapHost mapped (the caller's own slice is its view), and
// for memory that Free gave back whose host view went with it (all but
// AllocHeld's). Mapped memory is write-combined for the host: reads of it
// are slow.
func (m *Memory) Bytes() []byte {
	r, _ := m.Data.(*memRecord)
	if m.Host == 0 || r == nil || r.hostPtr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(r.hostPtr), m.Size)
}

// memRecord is the nvidia path's record of a Memory.
type memRecord struct {
	va      uint64         // the GPU address of the first mapped page
	length  uint64         // the bytes the GPU maps, whole pages
	page    uint64         // the GPU page size
	pool    *pool          // where va came from; nil for a host range at its own address
	hostPtr unsafe.Pointer // the host's view of the first byte, for Pinned and Mapped; nil once Free gave the pages back
	own     bool           // the path mapped host pages at va (Pinned, Mapped)
	gpu     *gpuState      // the GPU whose memory it is (Device, Mapped), for MapPeer
	goMem   []byte         // the Go memory whose pages a Mapped memory's host mapping replaced
	held    bool           // Go code may hold the host's view past Free (AllocHeld)
	path    *Client        // the path that gave it, through which alone it is freed
	kept    bool           // Free leaves va out of the pool (held Pinned memory, held Mapped memory outside Go's heap)
	stays   bool           // UVM kept its range after a failed map: its addresses never go back
	freed   bool
}

// Client is the path to one GPU through NVIDIA's kernel driver
// (/dev/nvidiactl, /dev/nvidia<minor> and /dev/nvidia-uvm), which the RM
// driver builds its channels on. Open makes it; the device's stop calls
// Stop; Close gives everything back once every Memory is freed. Any
// goroutine may call its methods, but for the uses of the usermode page
// and the flush word that Stop unmaps (Ring, ReadTimer, Doorbell, Flush),
// which must end before Stop begins: the package's documentation says
// more.
type Client struct {
	*gpuState // what the paths of this GPU share

	sys  *system
	r    rm // the system's client, with the path's fault sink
	rm   *RM
	u    uvm
	opts Options
	sink faultSink

	usermode    Handle  // the doorbell page's object
	usermodeMap uintptr // its host mapping
	doorbell    *uint32 // NVC361_NOTIFY_CHANNEL_PENDING in it, nil once unmapped
	flush       *Memory // a word of Mapped memory, or nil
	noMapped    bool    // the BAR had no room for the flush word

	mu       sync.Mutex // guards what follows; held for bookkeeping only, never across a call of the driver
	live     int        // memories given and not freed, and Registers in flight
	channels map[Handle]span
	// leaving holds the channels an Unregister is ending the registration
	// of, each with a channel closed once it returned, for an Unregister of
	// the same channel to wait on.
	leaving map[Handle]chan struct{}
	// joining holds the channels a Register is registering, so that a
	// Register of the same channel beside it is refused.
	joining  map[Handle]bool
	stopped  bool
	closed   bool
	released bool
}

// usermodeSize is the size of the usermode page (NVC361_NV_USERMODE__SIZE).
const usermodeSize = 0x10000

// Offsets in the usermode page (class/clc361.h).
const (
	usermodeTime0    = 0x80 // NVC361_TIME_0: the GPU's timer, low word
	usermodeTime1    = 0x84 // NVC361_TIME_1: its high word
	usermodeDoorbell = 0x90 // NVC361_NOTIFY_CHANNEL_PENDING
)

// channelVASize is the addresses UVM maps a registered channel's buffers in.
const channelVASize = 64 << 20

// pathKey is the key of every path through NVIDIA's kernel driver: they are
// all of one machine.
var pathKey = &struct{ name string }{"nvidia"}

// Open opens GPU index, counted in bus order among the machine's NVIDIA
// GPUs (IsGPU), through NVIDIA's kernel driver: it makes the RM's device,
// subdevice and address space for it, registers them with UVM, maps the
// doorbell, reads the GPU's classes and counts, and asks the RM which other
// GPUs the process holds it reaches (Reaches).
//
// The paths of one GPU in a process share its device, subdevice and
// address space, which go back with the last of them: a path opened while
// an earlier one still waits for its memory to be freed uses the earlier
// one's objects, which is safe once that path's device has stopped.
func Open(index int, opts *Options) (_ *Client, err error) {
	if index < 0 {
		return nil, fmt.Errorf("nvidia: no GPU %d", index)
	}
	s, err := acquireSystem()
	if err != nil {
		return nil, err
	}
	p := &Client{sys: s, channels: map[Handle]span{}}
	if opts != nil {
		p.opts = *opts
	}
	p.r = rm{conn: conn{ioctl: s.ioctl, sink: &p.sink}, ctl: s.ctl, client: s.client}
	p.u = uvm{conn: p.r.conn, fd: s.uvm.fd}
	p.rm = newRM(p.r, s.release, &s.objects)
	defer func() {
		if err != nil {
			err = errors.Join(err, p.teardown())
		}
	}()
	if p.gpuState, err = s.acquireGPU(index, &p.opts); err != nil {
		return nil, err
	}
	p.learnPeers()
	if err = p.mapUsermode(); err != nil {
		return nil, err
	}
	// The flush word: a read of it drains the host's writes through BAR1.
	// Without room for it the device has no Mapped memory.
	m, err := p.Alloc(device.MappedMemory, 4)
	switch {
	case err == nil:
		p.flush = m
	case errors.Is(err, device.ErrNoMemory):
		p.noMapped = true
	default:
		return nil, err
	}
	return p, nil
}

// mapUsermode allocates the GPU's usermode page and maps it for the host:
// the doorbell and the GPU's timer.
func (p *Client) mapUsermode() (err error) {
	var params []byte
	if p.opts.bar1Doorbell && p.gpu.Usermode == classHopperUsermode {
		params = bytesOf(&HopperUsermodeAllocParams{Bar1Mapping: 1})
	}
	if p.usermode, err = p.r.alloc(p.subdevice, p.gpu.Usermode, params); err != nil {
		return err
	}
	if p.usermodeMap, err = p.mapCPU(p.usermode, usermodeSize, 0); err != nil {
		return err
	}
	p.doorbell = (*uint32)(ptrAt(p.usermodeMap + usermodeDoorbell))
	return nil
}

// mapCPU maps length bytes of the memory object mem for the host, at a if
// a is not 0: RM_MAP_MEMORY through a fresh /dev/nvidia<minor>, then mmap of
// that file. The driver allows one mapping per file.
func (p *Client) mapCPU(mem Handle, length uint64, a uintptr) (uintptr, error) {
	fd, err := p.openDevFD(p.r, p.sys.ctl)
	if err != nil {
		return 0, err
	}
	defer closeFD(fd) // the mapping keeps the file
	mp := rmMapMemoryWithFD{
		Params: rmMapMemoryParams{Client: p.r.client, Device: p.device, Memory: mem, Length: length},
		FD:     int32(fd),
	}
	err = p.r.invoke(func() string { return fmt.Sprintf("RM_MAP_MEMORY 0x%x", mem) }, p.sys.ctl,
		escape(escRMMapMemory, unsafe.Sizeof(mp)), unsafe.Pointer(&mp), &mp.Params.Status)
	if err != nil {
		return 0, err
	}
	got, err := mapFile(a, length, fd)
	if err != nil {
		return 0, fmt.Errorf("nvidia: mmap of RM memory 0x%x: %w", mem, err)
	}
	return got, nil
}

// Index is the GPU's number (IsGPU).
func (p *Client) Index() int { return p.index }

// Key is the path's key: devices whose paths share it are of one machine,
// and may map each other's memory.
func (p *Client) Key() any { return pathKey }

// RM is the GPU's resource manager.
func (p *Client) RM() *RM { return p.rm }

// Device is the RM's device object of the GPU (NV01_DEVICE_0).
func (p *Client) Device() Handle { return p.device }

// Subdevice is its subdevice object (NV20_SUBDEVICE_0).
func (p *Client) Subdevice() Handle { return p.subdevice }

// VASpace is the address space the device's channels use (FERMI_VASPACE_A):
// a channel group takes it through its context share.
func (p *Client) VASpace() Handle { return p.vaspace }

// GPU is the GPU's classes and counts.
func (p *Client) GPU() GPU { return p.gpu }

// UUID is the GPU's UUID.
func (p *Client) UUID() UUID { return p.uuid }

// DriverVersion is the kernel driver's version, such as "580.159.04".
func (p *Client) DriverVersion() string { return p.sys.version }

// Budget is the GPU memory, in bytes, the device's work may allocate: the
// RM's heap (NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE).
func (p *Client) Budget() int64 { return p.budget }

// CacheBytes is the bytes of the GPU's L2 cache, or 0 where the RM states
// none.
func (p *Client) CacheBytes() int64 { return p.cache }

// Bus is the bus address of the GPU's PCI function.
func (p *Client) Bus() string { return p.addr.String() }

// HangMs is the path's hang_ms (Options.HangMs), 0 for None.
func (p *Client) HangMs() int { return p.opts.HangMs }

// MapsHost is true: the path maps host memory for the GPU.
func (p *Client) MapsHost() bool { return true }

// Doorbell is the 4-byte register into which the device stores a channel's
// work submit token to wake it (NVC361_NOTIFY_CHANNEL_PENDING). It stays
// mapped until Stop.
func (p *Client) Doorbell() *uint32 { return p.doorbell }

// Ring wakes the channel whose work submit token is token. It orders every
// store of the calling goroutine before it, to host memory and through the
// BARs (ring entries, GPPut), then stores token at the doorbell.
//
// The store is a plain one and the order comes from a locked instruction on
// the goroutine's own stack, which also drains the write-combining
// buffers. A locked store to the doorbell itself, such as
// atomic.StoreUint32, is a bus lock on uncached memory: on the H200's
// virtual machine each took about 200 µs, against 0.18 µs for Ring. The
// same holds for GPPut and any other word of Mapped memory, which is
// write-combined: store to them plainly, and let Ring order.
//
// Ring does not read the flush word; a device reads it first where it
// wrote through the BAR. It must not be called after Stop.
func (p *Client) Ring(token uint32) {
	ring(p.doorbell, token)
}

// ring fences, then stores v at the uncached word d plainly.
//
//go:nosplit
func ring(d *uint32, v uint32) {
	var f uint32
	atomic.AddUint32(&f, 0) // LOCK XADD on the stack: a full fence
	*d = v
}

// Flush is a 32-bit word of the GPU's Mapped memory, which a device reads
// before waking its channels so that the host's writes through the BAR
// reach the GPU first, or nil if the BAR had no room for it: the device
// then has no Mapped memory. It stays mapped until Stop. A read of it took
// 1.3 µs on the H200: a device reads it only where it wrote through
// the BAR since its last read.
func (p *Client) Flush() *uint32 {
	if p.flush == nil {
		return nil
	}
	return (*uint32)(p.flush.Data.(*memRecord).hostPtr)
}

// errStopped returns the calls a path takes no more after Stop or Close.
var errStopped = ErrClosed

// Alloc is n new bytes of memory of kind k at a GPU address aligned to 4
// KiB, or an error that wraps device.ErrNoMemory if the GPU, its BAR or
// the host lacks the memory or the addresses. Mapped memory is
// write-combined for the host, as the kernel driver maps the BAR. Any other
// failure is a *device.Fault. It panics if n is below 1.
func (p *Client) Alloc(k device.Memory, n int) (*Memory, error) {
	return p.alloc(k, n, false)
}

// AllocHeld is Alloc for memory that Go code may hold a slice of past its
// Free: Mapped memory lies over pages of Go's heap (allocVidmem says how),
// so that the slice never faults nor reaches other memory. Pinned memory
// keeps its addresses past Free, zeroed, and never gives them back.
func (p *Client) AllocHeld(k device.Memory, n int) (*Memory, error) {
	return p.alloc(k, n, true)
}

func (p *Client) alloc(k device.Memory, n int, held bool) (*Memory, error) {
	if n < 1 {
		panic(fmt.Sprintf("nvidia: Alloc of %d bytes", n))
	}
	if err := p.begin(); err != nil {
		return nil, err
	}
	var m *Memory
	var err error
	switch {
	case k == device.MappedMemory && p.noMapped:
		err = fmt.Errorf("nvidia: the BAR had no room for the flush word: %w", errNoAddresses)
	case k == device.DeviceMemory, k == device.MappedMemory:
		m, err = p.allocVidmem(k, n, held)
	case k == device.PinnedMemory:
		m, err = p.allocPinned(n, held)
	default:
		err = fmt.Errorf("nvidia: no memory of kind %v", k)
	}
	if eerr := p.end(err == nil); eerr != nil {
		err = errors.Join(err, eerr)
	}
	if err != nil {
		return nil, allocError(k, n, err)
	}
	return m, nil
}

// begin counts a memory about to be made, unless the path stopped.
func (p *Client) begin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.closed {
		return errStopped
	}
	p.live++
	return nil
}

// end uncounts a memory that was not made, and releases the path where
// Close waits for that memory alone.
func (p *Client) end(made bool) error {
	if made {
		return nil
	}
	return p.drop()
}

// errNoAddresses returns an allocation the path has no addresses for.
var errNoAddresses = errors.New("nvidia: no GPU addresses left")

// allocError sorts a failed allocation's error: lack is device.ErrNoMemory,
// anything else a fault. A host mapping's ENOMEM is lack.
func allocError(k device.Memory, n int, err error) error {
	if errors.Is(err, ErrLacking) || errors.Is(err, errNoAddresses) || errors.Is(err, syscall.ENOMEM) {
		return &lackError{what: fmt.Sprintf("%d bytes of %v memory", n, k), err: err}
	}
	if _, ok := device.AsFault(err); ok {
		return err
	}
	return &device.Fault{Why: fmt.Sprintf("alloc of %d bytes of %v memory: %v", n, k, err)}
}

// lackError is a refusal for want of memory or addresses: it is
// device.ErrNoMemory (and device.ErrNoRoom for MapHost), and wraps the
// cause.
type lackError struct {
	what string
	room bool // a mapping's No_room rather than an allocation's None
	err  error
}

func (e *lackError) Error() string { return fmt.Sprintf("nvidia: no memory for %s: %v", e.what, e.err) }

func (e *lackError) Unwrap() error { return e.err }

func (e *lackError) Is(target error) bool {
	if e.room {
		return target == device.ErrNoRoom
	}
	return target == device.ErrNoMemory
}

// pageFor is the GPU page size of n bytes of GPU memory: 2 MiB pages from 8
// MiB up, 4 KiB pages below.
func pageFor(n uint64) uint64 {
	if n >= memHugePageThreshold {
		return memHugePage
	}
	return memSmallPage
}

// takeVA takes size bytes of addresses from the host-visible pool, or from
// Device memory's pool.
func (p *Client) takeVA(host bool, size, align uint64) (uint64, *pool, error) {
	p.sys.mu.Lock()
	defer p.sys.mu.Unlock()
	pl := p.sys.dev
	if host {
		var err error
		if pl, err = p.sys.hostPool(); err != nil {
			return 0, nil, err
		}
	}
	va, ok := pl.alloc(size, align)
	if !ok {
		return 0, nil, errNoAddresses
	}
	return va, pl, nil
}

// giveVA gives back what takeVA took.
func (p *Client) giveVA(pl *pool, va, size uint64) {
	p.sys.mu.Lock()
	pl.release(va, size)
	p.sys.mu.Unlock()
}

// allocVidmem allocates GPU memory (NV01_MEMORY_LOCAL_USER) and maps it for
// the GPU, and for Mapped memory for the host through BAR1 at the same
// address.
//
// Mapped memory that Go code may hold past Free (held) lies over pages of
// Go's heap (goRange), where they lie below the windows: the BAR mapping
// replaces them until Free, which puts ordinary zeroed memory back, so that
// a slice of the host's view that Go code still holds reads zeros, never
// faults, and keeps the addresses from any other memory until the garbage
// collector finds no slice of them. Elsewhere, held Mapped memory takes
// the host-visible pool's addresses, and Free puts zeroed memory there and
// never gives them back. Other Mapped memory takes the pool's addresses,
// and Free puts the reservation back.
func (p *Client) allocVidmem(k device.Memory, n int, held bool) (m *Memory, err error) {
	page := pageFor(uint64(n))
	size := roundUp(uint64(n), page)
	host := k == device.MappedMemory
	var goMem []byte
	var va uint64
	var pl *pool
	if host && held && size <= uint64(p.bar1) {
		// Memory larger than the BAR never maps through it: no Go memory
		// is taken for it, since Go ends the process where the host cannot
		// hold an allocation of that size.
		goMem, va = p.goRange(size, page)
	}
	if goMem == nil {
		if va, pl, err = p.takeVA(host, size, page); err != nil {
			return nil, err
		}
	}
	rec := &memRecord{va: va, length: size, page: page, pool: pl, gpu: p.gpuState, goMem: goMem, held: held, path: p}
	defer func() {
		if err != nil {
			p.giveRange(rec)
		}
	}()
	attr := uint32(attrAllowNoncontig) << attrPhysicalityShift
	attr2 := uint32(attr2ZBCPreferNoZBC) | attr2GPUCacheableYes<<attr2GPUCacheableShift
	if page == memHugePage {
		attr |= attrPageSizeHuge << attrPageSizeShift
		attr2 |= attr2PageSizeHuge2MB << attr2PageSizeHugeShift
	} else {
		attr |= attrPageSize4KB << attrPageSizeShift
	}
	mp := MemoryAllocParams{
		Owner:     uint32(p.r.client),
		Type:      memTypeImage,
		Flags:     memFlagMapNotRequired | memFlagHandleProvided | memFlagAlignmentForce | memFlagIgnoreBankPlacement | memFlagPersistentVidmem,
		Attr:      attr,
		Attr2:     attr2,
		Format:    memFormatGenericKind,
		Size:      size,
		Alignment: page,
		Limit:     size - 1,
	}
	h, err := allocOf(p.r, p.device, ClassMemoryLocalUser, &mp)
	if err != nil {
		return nil, err
	}
	m = &Memory{Kind: k, Address: va, Size: n, Handle: h, Data: rec}
	if host {
		if _, err = p.mapCPU(h, size, uintptr(va)); err != nil {
			// A failed MAP_FIXED may have dropped what was mapped there.
			return nil, errors.Join(err, rec.dropHost(), p.r.free(p.device, h))
		}
		rec.own = true
		if goMem != nil {
			// The pages are Go's heap: the pointer comes from the slice,
			// not from the address (ptrAt takes only memory outside it).
			rec.hostPtr = unsafe.Pointer(unsafe.SliceData(goMem))
		} else {
			rec.hostPtr = ptrAt(uintptr(va))
		}
		m.Host = uintptr(va)
	}
	if err = p.mapGPU(rec, h); err != nil {
		return nil, errors.Join(err, p.undo(rec, h))
	}
	return m, nil
}

// allocPinned allocates host pages the GPU maps coherently: anonymous
// shared memory at an address of the reservation, which the RM pins
// (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR), mapped for the GPU at the same address.
// Free of memory Go code may hold past it (held) puts zeroed memory there
// and never gives the addresses back.
func (p *Client) allocPinned(n int, held bool) (m *Memory, err error) {
	size := roundUp(uint64(n), pageSize)
	va, pl, err := p.takeVA(true, size, pageSize)
	if err != nil {
		return nil, err
	}
	rec := &memRecord{va: va, length: size, page: pageSize, pool: pl, held: held, path: p}
	defer func() {
		if err != nil && !rec.stays {
			p.giveVA(pl, va, size)
		}
	}()
	if _, err = mapShared(uintptr(va), size); err != nil {
		// A failed MAP_FIXED may have dropped the reservation there.
		return nil, errors.Join(fmt.Errorf("nvidia: mmap of %d bytes of host memory: %w", size, err), unreserveTo(uintptr(va), size))
	}
	rec.own = true
	rec.hostPtr = ptrAt(uintptr(va))
	h, err := p.describeHost(uintptr(va), size)
	if err != nil {
		return nil, errors.Join(err, unreserveTo(uintptr(va), size))
	}
	m = &Memory{Kind: device.PinnedMemory, Address: va, Host: uintptr(va), Size: n, Handle: h, Data: rec}
	if err = p.mapGPU(rec, h); err != nil {
		return nil, errors.Join(err, p.undo(rec, h))
	}
	return m, nil
}

// describeHost makes an RM memory object of the host pages [a, a+size),
// which the RM pins (NV_ESC_RM_ALLOC_MEMORY of
// NV01_MEMORY_SYSTEM_OS_DESCRIPTOR on /dev/nvidia<minor>).
func (p *Client) describeHost(a uintptr, size uint64) (Handle, error) {
	h := p.sys.nameHandle()
	am := rmAllocMemoryWithFD{
		Params: rmAllocMemoryParams{
			Root:         p.r.client,
			ObjectParent: p.device,
			ObjectNew:    h,
			Class:        ClassMemoryOSDescriptor,
			Flags:        os02HostPagesCachedGP,
			Memory:       uint64(a),
			Limit:        size - 1,
		},
		FD: -1,
	}
	err := p.r.invoke(func() string {
		return fmt.Sprintf("RM_ALLOC_MEMORY of host pages [0x%x, 0x%x)", a, uint64(a)+size)
	}, p.devFD, escape(escRMAllocMemory, unsafe.Sizeof(am)), unsafe.Pointer(&am), &am.Params.Status)
	if err != nil {
		return 0, err
	}
	return h, nil
}

// mapGPU maps the memory object h for the GPU at rec's addresses, through
// UVM: an external range, then the mapping of the object in it.
func (p *Client) mapGPU(rec *memRecord, h Handle) error {
	cr := uvmCreateExternalRangeParams{Base: rec.va, Length: rec.length}
	if err := uvmCall(p.u, "UVM_CREATE_EXTERNAL_RANGE", uvmCreateExternalRange, &cr, &cr.RMStatus); err != nil {
		return err
	}
	if p.virtmem != 0 {
		dm := rmMapMemoryDMAParams{
			Client:    p.r.client,
			Device:    p.device,
			DMA:       p.virtmem,
			Memory:    h,
			Length:    rec.length,
			Flags:     os46PageSize4KB<<os46PageSizeShift | 1<<os46CacheSnoopShift | 1<<os46DMAOffsetFixedShift,
			DMAOffset: rec.va,
		}
		err := p.r.invoke(func() string { return fmt.Sprintf("RM_MAP_MEMORY_DMA 0x%x", h) }, p.sys.ctl,
			escape(escRMMapMemoryDMA, unsafe.Sizeof(dm)), unsafe.Pointer(&dm), &dm.Status)
		if err == nil && dm.DMAOffset != rec.va {
			err = fmt.Errorf("nvidia: RM_MAP_MEMORY_DMA placed 0x%x at 0x%x, not 0x%x", h, dm.DMAOffset, rec.va)
		}
		if err != nil {
			return p.dropRange(rec, err)
		}
	}
	me := p.mapParams(rec, h)
	if err := uvmCall(p.u, "UVM_MAP_EXTERNAL_ALLOCATION", uvmMapExternalAlloc, me, &me.RMStatus); err != nil {
		return p.dropRange(rec, err)
	}
	return nil
}

// dropRange frees rec's UVM range after its map failed with err, and
// returns err. Where UVM refuses, the range stays in UVM's space, and rec
// marks its addresses as never to go back (stays): the next allocation
// would take them and meet the range.
func (p *Client) dropRange(rec *memRecord, err error) error {
	if ferr := p.uvmFree(rec); ferr != nil {
		rec.stays = true
		return fmt.Errorf("%w (and the range stays: %w)", err, ferr)
	}
	return err
}

// mapParams is UVM_MAP_EXTERNAL_ALLOCATION's 9 KiB block, on the heap.
func (p *Client) mapParams(rec *memRecord, h Handle) *uvmMapExternalAllocationParams {
	me := &uvmMapExternalAllocationParams{
		Base:               rec.va,
		Length:             rec.length,
		GPUAttributesCount: 1,
		RMCtrlFD:           int32(p.sys.ctl),
		Client:             p.r.client,
		Memory:             h,
	}
	me.PerGPUAttributes[0] = uvmGPUMappingAttributes{GPUUUID: p.uuid, MappingType: uvmMappingReadWriteAtomic, CachingType: uvmCachingDefault}
	return me
}

// uvmFree unmaps rec's addresses for the GPU and ends their external range.
func (p *Client) uvmFree(rec *memRecord) error {
	f := uvmFreeParams{Base: rec.va, Length: rec.length}
	return uvmCall(p.u, "UVM_FREE", uvmFree, &f, &f.RMStatus)
}

// goRange is size bytes of Go's heap at an address aligned to align, of
// their own, and that address, which it adds to the ranges the GPU maps at
// their own addresses; or nil where the pages lie past the windows or in
// a range the GPU maps already.
func (p *Client) goRange(size, align uint64) ([]byte, uint64) {
	if size > 1<<62 {
		return nil, 0
	}
	var b []byte
	if align <= pageSize {
		// Go gives an array of whole pages a page of its own.
		b = make([]byte, size)
	}
	if b == nil || uint64(uintptr(unsafe.Pointer(&b[0])))%align != 0 {
		b = make([]byte, size+align)
	}
	a := uint64(uintptr(unsafe.Pointer(&b[0])))
	skip := roundUp(a, align) - a
	b = b[skip : skip+size : skip+size]
	s := span{a + skip, size}
	p.sys.mu.Lock()
	defer p.sys.mu.Unlock()
	if s.end() > windows || p.sys.identity.overlaps(s) || p.sys.reserved(s) {
		return nil, 0
	}
	p.sys.identity.add(s)
	return b, s.addr
}

// dropHost replaces the host pages the path mapped at rec's addresses: by
// ordinary zeroed memory where they are Go's heap or memory kept past its
// Free, whose host view Go code may hold; by the reservation otherwise.
func (rec *memRecord) dropHost() error {
	if rec.goMem != nil || rec.kept {
		_, err := mapPrivate(uintptr(rec.va), rec.length)
		return err
	}
	if err := unreserveTo(uintptr(rec.va), rec.length); err != nil {
		return err
	}
	// The view is the reservation's pages now, which fault: Bytes is nil
	// from here on, whatever becomes of the rest of the free.
	rec.hostPtr = nil
	return nil
}

// undo gives back the memory object h of a failed allocation and its host
// pages, once UVM no longer maps it.
func (p *Client) undo(rec *memRecord, h Handle) error {
	var errs []error
	if rec.own {
		errs = append(errs, rec.dropHost())
	}
	errs = append(errs, p.r.free(p.device, h))
	return errors.Join(errs...)
}

// MapHost maps for the GPU the n bytes of host memory at a, which the
// caller keeps mapped until it frees the answer. The GPU addresses the
// whole pages that hold them at their own host addresses where those lie
// below the windows and no other mapping holds them, and at addresses of
// the path's otherwise. It returns an error that wraps device.ErrNoRoom
// where the path lacked the addresses or the RM the resources, and one that
// wraps device.ErrNever where the RM refused the pages. It panics if n is
// below 1.
func (p *Client) MapHost(a uintptr, n int) (*Memory, error) {
	if n < 1 {
		panic(fmt.Sprintf("nvidia: MapHost of %d bytes", n))
	}
	if err := p.begin(); err != nil {
		return nil, err
	}
	m, err := p.mapHost(a, n)
	if eerr := p.end(err == nil); eerr != nil {
		err = errors.Join(err, eerr)
	}
	return m, err
}

func (p *Client) mapHost(a uintptr, n int) (m *Memory, err error) {
	if uint64(a) > math.MaxUint64-pageSize-uint64(n) {
		return nil, fmt.Errorf("nvidia: map_host of %d bytes at 0x%x, whose pages pass 2^64", n, a)
	}
	start := uint64(a) &^ (pageSize - 1)
	size := roundUp(uint64(a)+uint64(n), pageSize) - start
	s := span{start, size}
	rec := &memRecord{va: start, length: size, page: pageSize, path: p}
	p.sys.mu.Lock()
	own := s.end() <= windows && !p.sys.identity.overlaps(s) && !p.sys.reserved(s)
	if own {
		p.sys.identity.add(s)
	}
	p.sys.mu.Unlock()
	if !own {
		va, pl, verr := p.takeVA(true, size, pageSize)
		if verr != nil {
			return nil, &lackError{what: fmt.Sprintf("GPU addresses for %d bytes of host memory", n), room: true, err: verr}
		}
		rec.va, rec.pool = va, pl
	}
	defer func() {
		if err != nil {
			p.giveRange(rec)
		}
	}()
	h, err := p.describeHost(uintptr(start), size)
	if err != nil {
		return nil, mapError(n, err)
	}
	if err = p.mapGPU(rec, h); err != nil {
		return nil, mapError(n, errors.Join(err, p.r.free(p.device, h)))
	}
	return &Memory{Kind: device.PinnedMemory, Borrowed: true, Address: rec.va + (uint64(a) - start), Host: a, Size: n, Handle: h, Data: rec}, nil
}

// giveRange gives back rec's GPU addresses, unless UVM kept its range
// (stays): then they stay out of the pool, and a host range at its own
// address stays among those the GPU maps, its Go memory kept with the
// system, until the system's close ends UVM's space.
func (p *Client) giveRange(rec *memRecord) {
	if rec.stays {
		if rec.goMem != nil {
			p.sys.mu.Lock()
			p.sys.stuck = append(p.sys.stuck, rec.goMem)
			p.sys.mu.Unlock()
		}
		return
	}
	if rec.pool != nil {
		p.giveVA(rec.pool, rec.va, rec.length)
		return
	}
	p.sys.mu.Lock()
	p.sys.identity.remove(span{rec.va, rec.length})
	p.sys.mu.Unlock()
}

// mapError sorts a failed MapHost's error.
func mapError(n int, err error) error {
	what := fmt.Sprintf("mapping %d bytes of host memory", n)
	if errors.Is(err, ErrLacking) {
		return &lackError{what: what, room: true, err: err}
	}
	if _, ok := device.AsFault(err); ok {
		return err
	}
	if e, ok := AsRMError(err); ok && e.Fatal() {
		return &device.Fault{Why: e.Error()}
	}
	return fmt.Errorf("%w: %s: %w", device.ErrNever, what, err)
}

// Free gives back m, which this path's Alloc, AllocHeld, MapHost or
// MapPeer gave (another path's memory is refused with an error): it unmaps
// it for the GPU and the host and frees the RM's object. A free that fails keeps what it
// could not give back, and returns a *device.Fault.
func (p *Client) Free(m *Memory) error {
	rec, ok := m.Data.(*memRecord)
	if !ok || rec.path != p {
		return fmt.Errorf("nvidia: Free of memory this path did not give")
	}
	p.mu.Lock()
	if rec.freed {
		p.mu.Unlock()
		return fmt.Errorf("nvidia: Free of memory already freed")
	}
	rec.freed = true
	p.mu.Unlock()
	if err := p.uvmFree(rec); err != nil {
		return &device.Fault{Why: fmt.Sprintf("free of %v memory at 0x%x: %v", m.Kind, m.Address, err)}
	}
	if m.Kind == device.MappedMemory && rec.own {
		// The BAR mapping goes before the memory does; zeroed memory
		// takes its place, for slices of it that Go code still holds.
		rec.kept = rec.held && rec.goMem == nil
		if err := rec.dropHost(); err != nil {
			return &device.Fault{Why: fmt.Sprintf("free of Mapped memory at 0x%x: unmap: %v", m.Address, err)}
		}
		rec.own = false
		if rec.kept {
			p.sys.mu.Lock()
			p.sys.kept.add(span{rec.va, rec.length})
			p.sys.mu.Unlock()
		}
	}
	if err := p.r.free(p.device, m.Handle); err != nil {
		return &device.Fault{Why: fmt.Sprintf("free of %v memory at 0x%x: %v", m.Kind, m.Address, err)}
	}
	if rec.own {
		// Pinned memory: its pages go once the RM no longer pins them;
		// zeroed memory takes their place where Go code may hold them.
		rec.kept = rec.held
		if err := rec.dropHost(); err != nil {
			return &device.Fault{Why: fmt.Sprintf("free of %v memory at 0x%x: unmap: %v", m.Kind, m.Address, err)}
		}
		if rec.kept {
			p.sys.mu.Lock()
			p.sys.kept.add(span{rec.va, rec.length})
			p.sys.mu.Unlock()
		}
	}
	if !rec.kept {
		p.giveRange(rec)
		if rec.goMem == nil {
			// The host view is the reservation now, which the next
			// allocation may map anew: Bytes of freed memory is nil.
			rec.hostPtr = nil
		}
	}
	// Go code's slices, not the path, hold the pages now.
	rec.goMem = nil
	return p.drop()
}

// Register makes the channel, which the device allocated under Device, ready
// to run: UVM maps the channel's buffers in 64 MiB of the path's addresses
// (UVM_REGISTER_CHANNEL). A refusal is an error; a lost GPU a
// *device.Fault. A Register that Stop or Close overtakes ends the
// registration it made and returns the error of a stopped path. A
// Register of a channel that is registered, or that another Register is
// registering, returns an error.
func (p *Client) Register(channel Handle) (err error) {
	p.mu.Lock()
	_, dup := p.channels[channel]
	dup = dup || p.joining[channel]
	stopped := p.stopped || p.closed
	if !stopped && !dup {
		p.live++ // the path's release waits for the call
		if p.joining == nil {
			p.joining = map[Handle]bool{}
		}
		p.joining[channel] = true
	}
	p.mu.Unlock()
	if stopped {
		return errStopped
	}
	if dup {
		return fmt.Errorf("nvidia: channel 0x%x is registered already", channel)
	}
	defer func() {
		p.mu.Lock()
		delete(p.joining, channel)
		p.mu.Unlock()
		if derr := p.drop(); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	va, pl, err := p.takeVA(true, channelVASize, memHugePage)
	if err != nil {
		return err
	}
	rc := uvmRegisterChannelParams{GPUUUID: p.uuid, RMCtrlFD: int32(p.sys.ctl), Client: p.r.client, Channel: channel, Base: va, Length: channelVASize}
	if err := uvmCall(p.u, "UVM_REGISTER_CHANNEL", uvmRegisterChannel, &rc, &rc.RMStatus); err != nil {
		p.giveVA(pl, va, channelVASize)
		return asFault(err)
	}
	p.mu.Lock()
	stopped = p.stopped || p.closed
	if !stopped {
		p.channels[channel] = span{va, channelVASize}
	}
	p.mu.Unlock()
	if stopped {
		// Stop listed the channels to unregister before this one was
		// recorded: the registration ends here. Where UVM refuses, its
		// addresses stay out of the pool, as in Unregister.
		uc := uvmUnregisterChannelParams{GPUUUID: p.uuid, Client: p.r.client, Channel: channel}
		if err := uvmCall(p.u, "UVM_UNREGISTER_CHANNEL", uvmUnregisterChannel, &uc, &uc.RMStatus); err != nil {
			return asFault(err)
		}
		p.giveVA(pl, va, channelVASize)
		return errStopped
	}
	return nil
}

// drop uncounts a memory or a call that counted itself in live, and
// releases the path where Close waits for it alone.
func (p *Client) drop() error {
	p.mu.Lock()
	p.live--
	last := p.live == 0 && p.closed && !p.released
	p.mu.Unlock()
	if last {
		return p.release()
	}
	return nil
}

// errNotRegistered is the error of an Unregister of a channel that is not
// registered.
var errNotRegistered = errors.New("not registered")

// Unregister gives back what Register took, before the device frees the
// channel. An Unregister of a channel that another is unregistering waits
// for it, and then answers as the channel stands. After Close it returns the error of a closed path: the path's
// release, at the latest the system's close, ends the registrations.
func (p *Client) Unregister(channel Handle) (err error) {
	p.mu.Lock()
	// An Unregister of the channel under way ends first: its answer
	// decides whether the channel is still registered.
	for {
		busy, ok := p.leaving[channel]
		if !ok {
			break
		}
		p.mu.Unlock()
		<-busy
		p.mu.Lock()
	}
	s, ok := p.channels[channel]
	closed := p.closed
	var done chan struct{}
	if ok && !closed {
		p.live++ // the path's release waits for the call
		done = make(chan struct{})
		if p.leaving == nil {
			p.leaving = map[Handle]chan struct{}{}
		}
		p.leaving[channel] = done
	}
	p.mu.Unlock()
	if closed {
		return errStopped
	}
	if !ok {
		return fmt.Errorf("nvidia: channel 0x%x: %w", channel, errNotRegistered)
	}
	defer func() {
		p.mu.Lock()
		delete(p.leaving, channel)
		p.mu.Unlock()
		close(done)
		if derr := p.drop(); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	uc := uvmUnregisterChannelParams{GPUUUID: p.uuid, Client: p.r.client, Channel: channel}
	if err := uvmCall(p.u, "UVM_UNREGISTER_CHANNEL", uvmUnregisterChannel, &uc, &uc.RMStatus); err != nil {
		return asFault(err)
	}
	p.mu.Lock()
	delete(p.channels, channel)
	p.mu.Unlock()
	p.sys.mu.Lock()
	p.sys.host.release(s.addr, s.size)
	p.sys.mu.Unlock()
	return nil
}

// Check returns a *device.Fault with the path's report of a fault of the
// GPU or of its work that the driver sent the path, such as a GPU the
// driver lost, and nil otherwise. It reads what the path recorded and
// waits for nothing.
func (p *Client) Check() error {
	if e := p.sink.load(); e != nil {
		return &device.Fault{Why: e.Error()}
	}
	if e := p.sys.sink.load(); e != nil {
		return &device.Fault{Why: e.Error()}
	}
	return nil
}

// Stop ends the path's hold of the GPU after the device has freed its
// channels: it ends the registrations of channels still registered, frees
// the channel groups and channels the device made through RM and has not
// freed, which makes the RM preempt their work, and unmaps the doorbell and
// the flush word. It returns nil once none of the
// device's work runs, and an error that says why otherwise (Unknown).
// Memory stays until freed; Close gives back the rest.
func (p *Client) Stop() error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	var chans []Handle
	for c := range p.channels {
		chans = append(chans, c)
	}
	p.mu.Unlock()
	var errs []error
	for _, c := range chans {
		// A channel that another call unregistered meanwhile is no
		// longer registered, which is what Stop wants.
		if err := p.Unregister(c); err != nil && !errors.Is(err, errNotRegistered) {
			errs = append(errs, err)
		}
	}
	for _, h := range p.rm.made(ClassChannelGroup, p.gpu.Channel) {
		if err := p.rm.Free(p.rm.parentOf(h), h); err != nil {
			errs = append(errs, err)
		}
	}
	unknown := errors.Join(errs...)
	if p.flush != nil {
		// Devices read the flush word until stop; nothing does after.
		_ = p.Free(p.flush)
		p.flush = nil
	}
	if p.usermodeMap != 0 {
		p.doorbell = nil
		_ = munmap(p.usermodeMap, usermodeSize)
		p.usermodeMap = 0
	}
	if p.usermode != 0 {
		_ = p.r.free(p.subdevice, p.usermode)
		p.usermode = 0
	}
	if unknown != nil {
		return fmt.Errorf("nvidia: the device's work may still run: %w", unknown)
	}
	return nil
}

// Close stops the path if it is not stopped, and gives back everything it
// holds once every Memory it gave is freed and no Register runs: at once if
// none is left, and at the last Free or the end of that Register otherwise.
func (p *Client) Close() error {
	serr := p.Stop()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	now := p.live == 0 && !p.released
	p.mu.Unlock()
	if now {
		return errors.Join(serr, p.release())
	}
	return serr
}

// release gives back the path's own objects, registrations and files.
func (p *Client) release() error {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return nil
	}
	p.released = true
	p.mu.Unlock()
	return p.teardown()
}

// teardown undoes Open, as far as it went.
func (p *Client) teardown() error {
	var errs []error
	if p.flush != nil {
		errs = append(errs, p.Free(p.flush))
		p.flush = nil
	}
	if p.usermodeMap != 0 {
		p.doorbell = nil
		errs = append(errs, munmap(p.usermodeMap, usermodeSize))
		p.usermodeMap = 0
	}
	if p.usermode != 0 {
		errs = append(errs, p.r.free(p.subdevice, p.usermode))
		p.usermode = 0
	}
	if p.gpuState != nil {
		errs = append(errs, p.sys.releaseGPU(p.gpuState))
	}
	errs = append(errs, releaseSystem(p.sys))
	return errors.Join(errs...)
}
