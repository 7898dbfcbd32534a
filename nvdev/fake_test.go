package nvdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// fake is a path and an RM whose GPU is an emulator of the words a device
// writes: it runs each channel's ring entries as the doorbell rings, the
// host semaphores (acquires stall the channel), the copy engine's copies,
// fills and semaphores, and hands each launch's descriptor and constant
// bank 0 to a Go function. Host-visible memory lies for the GPU at addresses of its own below 2^40, Device memory from 2^41 on, both
// backed by Go memory.
type fake struct {
	mu       sync.Mutex
	gpu      nvidia.GPU
	mems     map[nvidia.Handle]*fakeMem
	handle   nvidia.Handle
	devNext  uint64
	hostNext uint64
	objects  map[nvidia.Handle]uint32 // live RM objects and their classes
	parents  map[nvidia.Handle]nvidia.Handle
	chans    []*fakeChan
	flush    uint32
	paused   bool
	stopped  bool
	rings    int
	hangMs   int // the path's hang_ms, 0 unless a test dials the fake with one

	// refuse makes the RM refuse allocations of a class; noRunqueue
	// refuses channels on the second runqueue, and noRunqueueCopy the copy
	// engine on a channel of it.
	refuse                     map[uint32]bool
	noRunqueue, noRunqueueCopy bool
	// noRunqueueCompute refuses the compute engine on a channel of the
	// second runqueue.
	noRunqueueCompute bool
	// lacking makes the RM refuse allocations of a class for want of
	// resources (NV_ERR_INSUFFICIENT_RESOURCES).
	lacking map[uint32]bool
	// onLaunch runs a launch: its descriptor and constant bank 0.
	onLaunch func(q hw.Qmd, bank0 []byte)
	// launches counts the launches run; trace records each channel's
	// method writes when set.
	launches int
	trace    map[string][]hw.Write
	mmu      []nvidia.MMUFaultInfoEntry
	// smCount, where set, is the SMs the GPU has: the RM refuses a read
	// of the SMs' errors past them (-1: every read).
	smCount  int
	checkErr error
	// ownReleases counts the launches that released a word; timerErr
	// fails ReadTimer.
	ownReleases int
	timerErr    error
	noMemory    bool // Alloc answers ErrNoMemory
	linked      int  // launches a descriptor linked to
	// gpuMembars counts the launches that end with the GPU's membar
	// chased task by task, sysMembars those with the system's; bank0Ahead
	// those that prefetch constant bank 0.
	gpuMembars, sysMembars, bank0Ahead int
	// dmas counts the copy engine's launches that move or set bytes.
	dmas int
	// intr receives a token at each NON_STALL_INTERRUPT where set (a
	// fakeEvent's); intrs counts them.
	intr  chan struct{}
	intrs int
	// flip runs the channels from the last to the first at each pass of
	// pump, so that a channel that waits for nothing it should runs before
	// the one it should wait for, whichever of the two it is.
	flip bool
	// barFull, where set, makes Alloc answer ErrNoMemory to Mapped memory
	// of n bytes where it holds: the BAR has no room for it.
	barFull func(n int) bool
	// mappedFault, where set, makes Alloc answer a *device.Fault to
	// Mapped memory of n bytes where it holds: the path failed other than
	// for want of room.
	mappedFault func(n int) bool
	// deviceFault, where set, makes Alloc answer a *device.Fault to
	// Device memory of n bytes where it holds; peerFault and hostFault
	// make MapPeer and MapHost answer one.
	deviceFault          func(n int) bool
	peerFault, hostFault bool
	// refuseFree makes the RM refuse to free objects of a class; stopErr
	// is the path's Stop's answer.
	refuseFree map[uint32]bool
	stopErr    error
}

type fakeMem struct {
	m    *nvidia.Memory
	back []byte // Go memory that holds it, or anonymous memory where mapped
	host uintptr
	// mapped is set where back is anonymous memory, which Free unmaps.
	mapped bool
}

type fakeChan struct {
	busy     bool // a pump runs a launch of the channel (under mu)
	name     string
	h        nvidia.Handle
	ring     uint64
	entries  uint64
	gpPut    *uint32
	notifier *fakeMem
	get      uint64
	base     uint64
	pending  []hw.Write
	pi       int
	sem      [5]uint32
	copyRegs map[uint32]uint32
	compRegs map[uint32]uint32
	objects  map[hw.Subchannel]uint32
	flags    uint32 // the NVOS04 flags it was allocated with
}

func newFake() *fake {
	return &fake{
		gpu: nvidia.GPU{
			Generation: nvidia.Generation{Name: "Hopper", Compute: hw.HopperComputeA, Copy: hw.HopperDmaCopyA,
				Channel: hw.HopperChannelGpfifoA, Usermode: hw.HopperUsermodeA},
			SMVersion: 0x900, GPCs: 8, TPCsPerGPC: 9, SMsPerTPC: 2, WarpsPerSM: 64,
		},
		mems: map[nvidia.Handle]*fakeMem{}, handle: 0x1000, devNext: 1 << 41, hostNext: 64 << 30,
		objects: map[nvidia.Handle]uint32{}, parents: map[nvidia.Handle]nvidia.Handle{},
		refuse: map[uint32]bool{},
	}
}

// open makes a device on the fake with the word w.
func (f *fake) open(w *uint64, c Config) (*gpu, error) { return makeDevice(w, f, fakeRM{f}, c) }

// opener is an opener of devices on the fake.
func (f *fake) opener(c Config) device.Opener {
	return device.Opener{Name: fmt.Sprintf("NV-fake-%p", f), Make: func(w *uint64) (device.Driver, error) {
		d, err := f.open(w, c)
		if err != nil {
			return nil, err
		}
		return d, nil
	}}
}

// live is the number of memories given and not freed.
func (f *fake) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mems)
}

func (f *fake) Index() int                     { return 0 }
func (f *fake) Key() any                       { return "fake" }
func (f *fake) Device() nvidia.Handle          { return 0x100 }
func (f *fake) Subdevice() nvidia.Handle       { return 0x101 }
func (f *fake) VASpace() nvidia.Handle         { return 0x102 }
func (f *fake) GPU() nvidia.GPU                { return f.gpu }
func (f *fake) Budget() int64                  { return 1 << 34 }
func (f *fake) CacheBytes() int64              { return 50 << 20 }
func (f *fake) Bus() string                    { return "0000:00:06.0" }
func (f *fake) HangMs() int                    { return f.hangMs }
func (f *fake) MapsHost() bool                 { return true }
func (f *fake) Reaches(i int) bool             { return i == 0 }
func (f *fake) Flush() *uint32                 { return &f.flush }
func (f *fake) Register(nvidia.Handle) error   { return nil }
func (f *fake) Unregister(nvidia.Handle) error { return nil }
func (f *fake) Close() error                   { return nil }
func (f *fake) MapPeer(*nvidia.Memory) (*nvidia.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.peerFault {
		return nil, &device.Fault{Why: "fake: map_peer: the RM failed"}
	}
	return nil, device.ErrNever
}

// SharesSpace is true for the fake itself: its devices share its memory.
func (f *fake) SharesSpace(other any) bool { return other == f }
func (f *fake) DMA(*nvidia.Memory, string) (device.DMA, error) {
	return device.DMA{}, errors.New("fake: no DMA")
}
func (f *fake) ReadTimer() (nvidia.Timer, error) {
	f.mu.Lock()
	err := f.timerErr
	f.mu.Unlock()
	if err != nil {
		return nvidia.Timer{}, err
	}
	now := device.Now()
	return nvidia.Timer{GPU: f.timer(), Host: now, Width: 100}, nil
}

// timer is the fake GPU's timer: the host's clock, 2^40 ns ahead.
func (f *fake) timer() uint64 { return 1<<40 + uint64(device.Now()) }
func (f *fake) Stop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	return f.stopErr
}

func (f *fake) Check() error {
	f.pump()
	return f.checkErr
}

// Alloc panics if n is below 1, as the nvidia path's does.
func (f *fake) Alloc(k device.Memory, n int) (*nvidia.Memory, error) {
	if n < 1 {
		panic(fmt.Sprintf("fake: Alloc of %d bytes", n))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n > 1<<32 || f.noMemory || k == device.MappedMemory && f.barFull != nil && f.barFull(n) {
		return nil, fmt.Errorf("fake: %d bytes: %w", n, device.ErrNoMemory)
	}
	if k == device.MappedMemory && f.mappedFault != nil && f.mappedFault(n) {
		return nil, &device.Fault{Why: fmt.Sprintf("fake: alloc of %d bytes of Mapped memory: the RM failed", n)}
	}
	if k == device.DeviceMemory && f.deviceFault != nil && f.deviceFault(n) {
		return nil, &device.Fault{Why: fmt.Sprintf("fake: alloc of %d bytes of Device memory: the RM failed", n)}
	}
	size := (n + 4095) &^ 4095
	var back []byte
	mapped := false
	if k == device.DeviceMemory && size >= 1<<20 {
		// Large Device memory (the local memory is 162 MiB) is anonymous
		// memory, whose pages cost nothing until the fake touches them:
		// Go memory is cleared at each allocation.
		b, err := syscall.Mmap(-1, 0, size+4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err == nil {
			back, mapped = b, true
		}
	}
	if back == nil {
		back = make([]byte, size+4096)
	}
	host := (uintptr(unsafe.Pointer(&back[0])) + 4095) &^ 4095
	f.handle++
	m := &nvidia.Memory{Kind: k, Size: n, Handle: f.handle, Address: f.hostNext, Host: host}
	f.hostNext += uint64(size) + 1<<20
	if k == device.DeviceMemory {
		m.Address, m.Host = f.devNext, 0
		f.devNext += uint64(size) + 1<<20
	}
	f.mems[f.handle] = &fakeMem{m: m, back: back, host: host, mapped: mapped}
	return m, nil
}

func (f *fake) MapHost(a uintptr, n int) (*nvidia.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hostFault {
		return nil, &device.Fault{Why: fmt.Sprintf("fake: mapping %d bytes of host memory: the RM failed", n)}
	}
	f.handle++
	m := &nvidia.Memory{Kind: device.PinnedMemory, Borrowed: true, Size: n, Handle: f.handle, Address: f.hostNext + uint64(a&4095), Host: a}
	// The next memory starts at a page, as every memory of the GPU does.
	f.hostNext += uint64(n+4095)&^4095 + 1<<20 + 4096
	f.mems[f.handle] = &fakeMem{m: m, host: a}
	return m, nil
}

func (f *fake) Free(m *nvidia.Memory) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fm := f.mems[m.Handle]
	if fm == nil || fm.m != m {
		return errors.New("fake: free of memory not given")
	}
	delete(f.mems, m.Handle)
	if fm.mapped {
		_ = syscall.Munmap(fm.back)
	}
	return nil
}

// bytesAt is the n bytes at GPU address a, or nil where nothing maps them.
// The caller holds mu.
func (f *fake) bytesAt(a, n uint64) []byte {
	for _, fm := range f.mems {
		m := fm.m
		if a >= m.Address && a+n <= m.Address+uint64((m.Size+4095)&^4095) {
			return unsafe.Slice((*byte)(ptrAt(fm.host+uintptr(a-m.Address))), n)
		}
	}
	return nil
}

// The RM.

// fakeRM is the fake's RM.
type fakeRM struct{ f *fake }

func (r fakeRM) Client() nvidia.Handle     { return 1 }
func (r fakeRM) Boost(nvidia.Handle) error { return nil }

func (f *fake) rmAlloc(parent nvidia.Handle, class uint32, params []byte) (nvidia.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse[class] {
		return 0, &nvidia.RMError{Call: fmt.Sprintf("RM_ALLOC 0x%x", class), Status: nvidia.StatusInvalidArgument}
	}
	if f.lacking[class] {
		return 0, &nvidia.RMError{Call: fmt.Sprintf("RM_ALLOC 0x%x", class), Status: nvidia.StatusInsufficientResources}
	}
	if class == f.gpu.Channel && f.noRunqueue && (*nvidia.ChannelAllocParams)(unsafe.Pointer(&params[0])).Flags&nvidia.ChannelRunqueueOne != 0 {
		return 0, &nvidia.RMError{Call: fmt.Sprintf("RM_ALLOC 0x%x", class), Status: nvidia.StatusInvalidArgument}
	}
	if (class == f.gpu.Copy && f.noRunqueueCopy) || (class == f.gpu.Compute && f.noRunqueueCompute) {
		for _, c := range f.chans {
			if c.h == parent && c.flags&nvidia.ChannelRunqueueOne != 0 {
				return 0, &nvidia.RMError{Call: fmt.Sprintf("RM_ALLOC 0x%x", class), Status: nvidia.StatusInvalidArgument}
			}
		}
	}
	f.handle++
	h := f.handle
	f.objects[h], f.parents[h] = class, parent
	if class == f.gpu.Channel {
		p := (*nvidia.ChannelAllocParams)(unsafe.Pointer(&params[0]))
		userd := f.mems[p.UserdMemory[0]]
		c := &fakeChan{name: fmt.Sprintf("channel %d", len(f.chans)), h: h, ring: p.GPFIFOOffset, entries: uint64(p.GPFIFOEntries),
			gpPut:    (*uint32)(ptrAt(userd.host + uintptr(p.UserdOffset[0]) + 0x8c)),
			notifier: f.mems[p.ObjectError], copyRegs: map[uint32]uint32{}, compRegs: map[uint32]uint32{},
			objects: map[hw.Subchannel]uint32{}, flags: p.Flags}
		f.chans = append(f.chans, c)
	}
	return h, nil
}

func (r fakeRM) Alloc(parent nvidia.Handle, class uint32, params []byte) (nvidia.Handle, error) {
	return r.f.rmAlloc(parent, class, params)
}

func (r fakeRM) Free(parent, object nvidia.Handle) error { return r.f.rmFree(parent, object) }

func (f *fake) rmFree(_, object nvidia.Handle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	class, ok := f.objects[object]
	if !ok {
		return &nvidia.RMError{Call: "RM_FREE", Status: nvidia.StatusInvalidObjectHandle}
	}
	if f.refuseFree[class] {
		return &nvidia.RMError{Call: "RM_FREE", Status: nvidia.StatusInvalidArgument}
	}
	var drop func(h nvidia.Handle)
	drop = func(h nvidia.Handle) {
		delete(f.objects, h)
		for c, p := range f.parents {
			if p == h {
				drop(c)
			}
		}
		delete(f.parents, h)
		for i, c := range f.chans {
			if c.h == h {
				f.chans = append(f.chans[:i], f.chans[i+1:]...)
				break
			}
		}
	}
	drop(object)
	return nil
}

func (r fakeRM) Token(ch nvidia.Handle) (uint32, error) { return uint32(ch), nil }

func (r fakeRM) Schedule(nvidia.Handle, *nvidia.ScheduleParams) error { return nil }

// SMErrors reports an error on SM 3 and, where smCount is set, on the
// last SM, and refuses a read past smCount SMs.
func (r fakeRM) SMErrors(_ nvidia.Handle, p *nvidia.SMErrorStatesParams) error {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	start, n := int(p.StartingSM), int(p.NumSMsToRead)
	if n > nvidia.MaxSMsPerCall || f.smCount != 0 && start+n > f.smCount {
		return fmt.Errorf("fake RM: a read of SMs %d to %d", start, start+n-1)
	}
	for i := range n {
		if sm := start + i; sm == 3 || sm == f.smCount-1 {
			p.SMErrorStates[i].HwwGlobalEsr = 0x10
		}
	}
	return nil
}

func (r fakeRM) MMUFaults(_ nvidia.Handle, p *nvidia.MMUFaultInfoParams) error {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	p.Count = uint32(copy(p.Entries[:], f.mmu))
	return nil
}

// objectsOf lists the live objects of a class.
func (f *fake) objectsOf(class uint32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.objects {
		if c == class {
			n++
		}
	}
	return n
}

// Ring runs the channels, unless the fake is paused.
func (f *fake) Ring(uint32) {
	f.mu.Lock()
	f.rings++
	f.mu.Unlock()
	f.pump()
}

// pause stops the emulator running the channels; resume runs them again.
func (f *fake) pause() { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fake) resume() {
	f.mu.Lock()
	f.paused = false
	f.mu.Unlock()
	f.pump()
}

// pump runs every channel until none progresses.
func (f *fake) pump() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paused {
		return
	}
	for progress := true; progress; {
		progress = false
		chans := f.chans
		for i := range chans {
			if f.flip {
				i = len(chans) - 1 - i
			}
			if f.run(chans[i]) {
				progress = true
			}
		}
	}
}

// fail writes error e into the channel's notifier, as the RM does.
func (f *fake) fail(c *fakeChan, e uint32) {
	n := unsafe.Slice((*uint32)(ptrAt(c.notifier.host)), 4)
	atomic.StoreUint32(&n[2], e)
	atomic.StoreUint32(&n[3], 0xffff<<16|nvidia.EngineGraphics)
}

// run runs channel c as far as it goes, and reports whether it progressed.
// The caller holds mu.
func (f *fake) run(c *fakeChan) bool {
	if c.busy {
		return false
	}
	progress := false
	for {
		for c.pi < len(c.pending) {
			if !f.exec(c, c.pending[c.pi]) {
				return progress
			}
			c.pi++
			progress = true
		}
		c.pending, c.pi = nil, 0
		put := uint64(atomic.LoadUint32(c.gpPut))
		if c.get == put {
			return progress
		}
		progress = true
		e := hw.Entry(binary.LittleEndian.Uint64(f.bytesAt(c.ring+8*c.get, 8)))
		c.get = (c.get + 1) % c.entries
		if op, ok := e.Control(); ok {
			if op == hw.EntryOpExtendedBase {
				c.base = e.Base()
			}
			continue
		}
		b := f.bytesAt(c.base|e.Address(), 4*uint64(e.Length()))
		if b == nil {
			f.fail(c, 31)
			c.get = put
			return true
		}
		ws, err := hw.Decode(unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), e.Length()))
		if err != nil {
			f.fail(c, 32)
			c.get = put
			return true
		}
		if f.trace != nil {
			f.trace[c.name] = append(f.trace[c.name], ws...)
		}
		c.pending = ws
	}
}

func (f *fake) load64(a uint64) uint64 {
	b := f.bytesAt(a, 8)
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[0])))
}

func (f *fake) store64(a, v uint64) {
	b := f.bytesAt(a, 8)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&b[0])), v)
}

// exec runs one method write, and reports false where the channel stalls.
func (f *fake) exec(c *fakeChan, w hw.Write) bool {
	if w.Method == 0 {
		c.objects[w.Subchannel] = w.Value
		return true
	}
	switch w.Subchannel {
	case hw.SubHost:
		if w.Method == hw.HostNonStallInterrupt {
			f.intrs++
			if f.intr != nil {
				select {
				case f.intr <- struct{}{}:
				default:
				}
			}
		}
		if w.Method >= hw.HostSemAddrLo && w.Method <= hw.HostSemExecute {
			c.sem[(w.Method-hw.HostSemAddrLo)/4] = w.Value
		}
		if w.Method != hw.HostSemExecute {
			return true
		}
		addr := uint64(c.sem[1])<<32 | uint64(c.sem[0])
		payload := uint64(c.sem[3])<<32 | uint64(c.sem[2])
		switch w.Value & 7 {
		case hw.SemRelease:
			f.store64(addr, payload)
			if w.Value&hw.SemReleaseTimeStmp != 0 {
				f.store64(addr+8, f.timer())
			}
		case hw.SemAcqCircGEQ:
			return device.AtLeast(f.load64(addr), payload)
		}
	case hw.SubCompute:
		c.compRegs[w.Method] = w.Value
		if w.Method == hw.ComputeSendSignalingPcas2B && pcasSchedules(w.Value) {
			// The launch, then each descriptor it links to. Its kernel
			// runs with mu released: meanwhile the channel is busy,
			// and another pump leaves it to this one.
			c.busy = true
			for qa := uint64(c.compRegs[hw.ComputeSendPcasA]) << 8; qa != 0; {
				qa = f.runQmd(qa)
			}
			c.busy = false
		}
	case hw.SubCopy:
		c.copyRegs[w.Method] = w.Value
		if w.Method == hw.CopyLaunchDMA {
			f.copyLaunch(c, w.Value)
		}
	}
	return true
}

// pcasSchedules reports whether a PCAS action runs the descriptor: the
// actions with SCHEDULE in their names do; NOP, INVALIDATE and PREFETCH do
// not.
func pcasSchedules(v uint32) bool {
	switch v & 0xf {
	case 2, 3, 9, 10, 11:
		return true
	}
	return false
}

// copyLaunch runs a LAUNCH_DMA.
func (f *fake) copyLaunch(c *fakeChan, v uint32) {
	r := c.copyRegs
	if v&3 != hw.DMATransferNone {
		f.dmas++
		src := uint64(r[hw.CopyOffsetInUpper])<<32 | uint64(r[hw.CopyOffsetInUpper+4])
		dst := uint64(r[hw.CopyOffsetOutUpper])<<32 | uint64(r[hw.CopyOffsetOutUpper+4])
		pin, pout := uint64(r[0x410]), uint64(r[0x414])
		n, lines := uint64(r[hw.CopyLineLengthIn]), uint64(1)
		if v&hw.DMAMultiLine != 0 {
			lines = uint64(r[hw.CopyLineCount])
		}
		if v&hw.DMARemap != 0 {
			k := r[hw.CopyRemapComponent]
			size := uint64(1)
			if k>>16&3 == 3 {
				size = 4
			}
			for l := uint64(0); l < lines; l++ {
				b := f.bytesAt(dst+l*pout, n*size)
				for i := uint64(0); i < n; i++ {
					for j := uint64(0); j < size; j++ {
						b[i*size+j] = byte(r[hw.CopyRemapConstA] >> (8 * j))
					}
				}
			}
		} else {
			for l := uint64(0); l < lines; l++ {
				copy(f.bytesAt(dst+l*pout, n), f.bytesAt(src+l*pin, n))
			}
		}
	}
	if v>>3&3 != 0 {
		a := uint64(r[hw.CopySemaphoreA])<<32 | uint64(r[hw.CopySemaphoreB])
		f.store64(a, uint64(r[hw.CopySemaphorePayloadUpper])<<32|uint64(r[hw.CopySemaphorePayload]))
	}
}

// runQmd runs the launch of the descriptor at qa and its release, and
// returns the descriptor it links to, or 0. The caller holds mu.
func (f *fake) runQmd(qa uint64) uint64 {
	// The GPU fetches the descriptor before it runs the launch: once the
	// launch releases its value, the host may write the slot again.
	words := make([]uint32, hw.QmdV04.Words)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 4*len(words)), f.bytesAt(qa, uint64(hw.QmdV04.Bytes())))
	q := hw.QmdOf(hw.QmdV04, words)
	_, ba, bn, _ := q.ConstantBuffer(0)
	bank := append([]byte(nil), f.bytesAt(ba, uint64(bn))...)

	f.launches++
	switch membar, chase := q.L.CwdMembarType.Get(q.W), q.L.CwdMembarTaskChasing.Get(q.W); {
	case membar == hw.CwdMembarL1Membar && chase == 1:
		f.gpuMembars++
	case membar == hw.CwdMembarL1Sysmembar && chase == 0:
		f.sysMembars++
	}
	if on, bound := q.BankPrefetch(0); on && bound >= uint32(bn) {
		f.bank0Ahead++
	}
	if f.onLaunch != nil {
		f.mu.Unlock()
		f.onLaunch(q, bank)
		f.mu.Lock()
	}
	if on, p64, a, v := q.Release(0); on {
		f.ownReleases++
		if !p64 {
			// The low 32 bits alone.
			v = f.load64(a)&^0xffffffff | v&0xffffffff
		}
		f.store64(a, v)
	}
	if next, on := q.Dependent(); on {
		f.linked++
		return next
	}
	return 0
}
