package nvidia

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testutil"
)

// needGPU skips a test or benchmark unless RIG_GPU=1.
var needGPU = testutil.NeedGPU

// Host methods of a GPFIFO channel (class/clc86f.h), on subchannel 0.
const (
	semAddrLo        = 0x5c     // NVC86F_SEM_ADDR_LO
	semExecRelease   = 1        // NVC86F_SEM_EXECUTE_OPERATION_RELEASE
	semExecWFI       = 1 << 20  // NVC86F_SEM_EXECUTE_RELEASE_WFI_EN
	semExecPayload64 = 1 << 24  // NVC86F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT
	userdGPGet       = 0x88     // Nvc86fControl.GPGet
	userdGPPut       = 0x8c     // Nvc86fControl.GPPut
	methodInc        = 1 << 29  // SEC_OP INC_METHOD
	gpEntryLevelSub  = 1 << 9   // NVC86F_GP_ENTRY1_LEVEL_SUBROUTINE
	ringEntries      = 1024     // the test channel's ring
	userdOffset      = 1024 * 8 // USERD after the ring
	ringBytes        = 64 << 10 // ring and USERD
	semaphoreTimeout = time.Second
	pbWords          = 1024 // where pushbuffers start in Pinned memory, in words
)

// release writes at pb the words of a 64-bit semaphore release of value
// to the GPU address a, and returns their count.
func release(pb []uint32, a, value uint64) int {
	pb[0] = methodInc | 5<<16 | 0<<13 | semAddrLo>>2
	pb[1] = uint32(a)
	pb[2] = uint32(a >> 32)
	pb[3] = uint32(value)
	pb[4] = uint32(value >> 32)
	pb[5] = semExecRelease | semExecWFI | semExecPayload64
	return 6
}

// gpEntry is the GPFIFO entry of n words at the GPU address a, below 2^40.
func gpEntry(a uint64, n int) uint64 {
	return uint64(uint32(a)&^3) | (a>>32&0xff|uint64(n)<<10|gpEntryLevelSub)<<32
}

// words is the memory as 32-bit words.
func words(m *Memory) []uint32 {
	b := m.Bytes()
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// testChannel is a channel group with one GPFIFO channel on GR, as a
// device makes it: its ring and USERD in Mapped memory, its error notifier
// at the start of Pinned memory, which also holds semaphores (from byte 64)
// and pushbuffers (from word pbWords).
type testChannel struct {
	t                  testing.TB
	p                  *Client
	pinned, ring       *Memory
	pw, rw             []uint32
	tsg, ctx, ch, comp Handle
	token              uint32
	put                uint32
	registered         bool
}

// newChannel makes a test channel on p, registered and scheduled.
func newChannel(t testing.TB, p *Client) *testChannel {
	t.Helper()
	c := &testChannel{t: t, p: p}
	var err error
	if c.pinned, err = p.Alloc(device.PinnedMemory, 64<<10); err != nil {
		t.Fatalf("Alloc(Pinned): %v", err)
	}
	if c.ring, err = p.Alloc(device.MappedMemory, ringBytes); err != nil {
		t.Fatalf("Alloc(Mapped): %v", err)
	}
	c.pw, c.rw = words(c.pinned), words(c.ring)
	rm := p.RM()
	if c.tsg, err = rm.Alloc(p.Device(), ClassChannelGroup, Bytes(&ChannelGroupAllocParams{EngineType: EngineGraphics})); err != nil {
		t.Fatalf("channel group: %v", err)
	}
	if c.ctx, err = rm.Alloc(c.tsg, ClassContextShare, Bytes(&CtxShareAllocParams{VASpace: p.VASpace(), Flags: CtxShareAsync})); err != nil {
		t.Fatalf("context share: %v", err)
	}
	cp := ChannelAllocParams{
		ObjectError:   c.pinned.Handle,
		ObjectBuffer:  c.ring.Handle,
		GPFIFOOffset:  c.ring.Address,
		GPFIFOEntries: ringEntries,
		ContextShare:  c.ctx,
	}
	cp.UserdMemory[0] = c.ring.Handle
	cp.UserdOffset[0] = userdOffset
	if c.ch, err = rm.Alloc(c.tsg, p.GPU().Channel, Bytes(&cp)); err != nil {
		t.Fatalf("channel: %v", err)
	}
	if c.comp, err = rm.Alloc(c.ch, p.GPU().Compute, nil); err != nil {
		t.Fatalf("compute object: %v", err)
	}
	if c.token, err = rm.Token(c.ch); err != nil {
		t.Fatalf("token: %v", err)
	}
	if err := p.Register(c.ch); err != nil {
		t.Fatalf("Register: %v", err)
	}
	c.registered = true
	if err := rm.Schedule(c.tsg, &ScheduleParams{Enable: 1}); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	return c
}

// close unregisters and frees the channel and its memory.
func (c *testChannel) close() {
	if c.registered {
		if err := c.p.Unregister(c.ch); err != nil {
			c.t.Errorf("Unregister: %v", err)
		}
	}
	if len(c.p.RM().made(ClassChannelGroup)) > 0 {
		if err := c.p.RM().Free(c.p.Device(), c.tsg); err != nil {
			c.t.Errorf("free of the channel group: %v", err)
		}
	}
	for _, m := range []*Memory{c.ring, c.pinned} {
		if err := c.p.Free(m); err != nil {
			c.t.Errorf("Free: %v", err)
		}
	}
}

// submit hands the channel the n words at word off of pb, and rings.
func (c *testChannel) submit(pb *Memory, off, n int) {
	e := gpEntry(pb.Address+uint64(off)*4, n)
	c.rw[c.put*2] = uint32(e)
	c.rw[c.put*2+1] = uint32(e >> 32)
	c.put = (c.put + 1) % ringEntries
	c.rw[userdOffset/4+userdGPPut/4] = c.put // plain: Ring orders it
	if f := c.p.Flush(); f != nil {
		_ = atomic.LoadUint32(f)
	}
	c.p.Ring(c.token)
}

// gpGet is the channel's GPGet.
func (c *testChannel) gpGet() uint32 { return atomic.LoadUint32(&c.rw[userdOffset/4+userdGPGet/4]) }

// wait polls word until it holds want, for at most semaphoreTimeout.
func (c *testChannel) wait(what string, word *uint64, want uint64) {
	c.t.Helper()
	t0 := time.Now()
	for atomic.LoadUint64(word) != want {
		if time.Since(t0) > semaphoreTimeout {
			c.t.Fatalf("%s: the semaphore reads 0x%x after %v, not 0x%x; GPGet %d GPPut %d; notifier %x; check %v",
				what, atomic.LoadUint64(word), semaphoreTimeout, want, c.gpGet(), c.put, c.pw[:8], c.p.Check())
		}
	}
	c.t.Logf("%s: released 0x%x, seen %v after the doorbell", what, want, time.Since(t0))
}

// TestGPUPath brings a path up on GPU 0, allocates each kind of memory,
// makes a channel group with a GPFIFO channel, has the channel release
// semaphores into Pinned, Mapped and the caller's host memory through the
// doorbell, stops the path and frees everything. Run it with RIG_GPU=1.
func TestGPUPath(t *testing.T) {
	needGPU(t)
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"uvm", Options{}},
		{"uvm+defaultmap", Options{defaultMap: true}},
		{"uvm+bar1doorbell", Options{bar1Doorbell: true}},
	} {
		t.Run(c.name, func(t *testing.T) { gpuPath(t, &c.opts, c.name == "uvm") })
	}
}

func gpuPath(t *testing.T, opts *Options, full bool) {
	start := time.Now()
	p, err := Open(0, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Logf("open in %v: driver %s, GPU 0 at %s, uuid %x", time.Since(start), p.DriverVersion(), p.Bus(), p.UUID())
	g := p.GPU()
	t.Logf("%s %s: compute 0x%x copy 0x%x channel 0x%x usermode 0x%x; SM 0x%x, %d GPCs x %d TPCs x %d SMs, %d warps/SM; %d classes",
		g.Name, g.Arch(), g.Compute, g.Copy, g.Channel, g.Usermode, g.SMVersion, g.GPCs, g.TPCsPerGPC, g.SMsPerTPC, g.WarpsPerSM, len(g.Classes))
	t.Logf("budget %d MiB, L2 %d KiB, BAR1 free %d MiB, doorbell %p, flush %p, device 0x%x subdevice 0x%x vaspace 0x%x",
		p.Budget()>>20, p.CacheBytes()>>10, p.bar1>>20, p.Doorbell(), p.Flush(), p.Device(), p.Subdevice(), p.VASpace())
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("closed; %v in all", time.Since(start))
	}()

	// Host memory of the caller's, which must outlive its mapping: below
	// the windows and outside the reservation, so that the GPU maps it at
	// its own address, where the kernel has room there.
	const hostLen = 64 << 10
	ha, err := mmap(0xd0_0000_0000, hostLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, -1, 0)
	if err != nil {
		ha, err = mmap(0, hostLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS, -1, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer munmap(ha, hostLen)
	hostMem := unsafe.Slice((*uint32)(ptrAt(ha)), hostLen/4)

	var mems []*Memory
	alloc := func(k device.Memory, n int) *Memory {
		t0 := time.Now()
		m, err := p.Alloc(k, n)
		if err != nil {
			t.Fatalf("Alloc(%v, %d): %v", k, n, err)
		}
		t.Logf("Alloc(%v, %d) in %v: GPU 0x%x host 0x%x handle 0x%x", k, n, time.Since(t0), m.Address, m.Host, m.Handle)
		mems = append(mems, m)
		return m
	}
	defer func() {
		for _, m := range mems {
			if err := p.Free(m); err != nil {
				t.Errorf("Free(%v at 0x%x): %v", m.Kind, m.Address, err)
			}
		}
	}()

	mapped := alloc(device.MappedMemory, 64<<10)
	if full {
		alloc(device.DeviceMemory, 1<<20)
		alloc(device.DeviceMemory, 16<<20)
		alloc(device.PinnedMemory, 3<<20)
		big := alloc(device.MappedMemory, 8<<20)
		b := big.Bytes()
		for i := 0; i < len(b); i += 4096 {
			b[i] = byte(i >> 12)
		}
		for i := 0; i < len(b); i += 4096 {
			if b[i] != byte(i>>12) {
				t.Fatalf("Mapped memory at +0x%x reads %d", i, b[i])
			}
		}
		t.Logf("8 MiB of Mapped memory written and read back through BAR1")
	}
	mw := words(mapped)
	mw[8] = 0xfeedface
	if mw[8] != 0xfeedface {
		t.Fatal("Mapped memory does not read back")
	}
	hm, err := p.MapHost(ha, hostLen)
	if err != nil {
		t.Fatalf("MapHost: %v", err)
	}
	mems = append(mems, hm)
	t.Logf("MapHost(0x%x) at GPU 0x%x (same address: %v)", hm.Host, hm.Address, uint64(hm.Host) == hm.Address)

	t1, err1 := p.ReadTimer()
	time.Sleep(10 * time.Millisecond)
	t2, err2 := p.ReadTimer()
	r1, err3 := p.ReadTimerRM()
	if opts.bar1Doorbell {
		t.Logf("timer through the BAR1 usermode page: %v; through the RM: %+v, %v", err1, r1, err3)
	} else if err1 != nil || err2 != nil || err3 != nil {
		t.Errorf("timers: %v %v %v", err1, err2, err3)
	} else {
		rate := float64(t2.GPU-t1.GPU) / float64(t2.Host-t1.Host)
		// The GPU time the register reading predicts at the RM's reading.
		skew := int64(r1.GPU) - (int64(t2.GPU) + (r1.Host - t2.Host))
		t.Logf("timer: GPU %d ns at host %d ns (width %d ns), rate %.6f; RM reading %d at %d (width %d), skew against registers %d ns",
			t2.GPU, t2.Host, t2.Width, rate, r1.GPU, r1.Host, r1.Width, skew)
	}
	rm := p.RM()
	if full {
		if err := rm.Boost(p.Subdevice()); err != nil {
			t.Errorf("Boost: %v", err)
		} else {
			t.Log("boost: clocks to max, CUDA priority, no end")
		}
	}

	c := newChannel(t, p)
	defer c.close()
	t.Logf("channel group 0x%x, context share 0x%x, channel 0x%x, compute 0x%x, token 0x%x, registered and scheduled", c.tsg, c.ctx, c.ch, c.comp, c.token)

	// Releases through the doorbell: into Pinned memory from a pushbuffer
	// in Pinned memory, then into Mapped memory from a pushbuffer there,
	// and into the caller's host memory.
	n := release(c.pw[pbWords:], c.pinned.Address+64, 0x1_0000_0001)
	c.submit(c.pinned, pbWords, n)
	c.wait("Pinned <- Pinned pushbuffer", (*uint64)(unsafe.Pointer(&c.pw[16])), 0x1_0000_0001)
	n = release(mw[pbWords:], mapped.Address+64, 0x2_0000_0002)
	c.submit(mapped, pbWords, n)
	c.wait("Mapped <- Mapped pushbuffer", (*uint64)(unsafe.Pointer(&mw[16])), 0x2_0000_0002)
	n = release(c.pw[pbWords+16:], hm.Address+128, 0x3_0000_0003)
	c.submit(c.pinned, pbWords+16, n)
	c.wait("MapHost memory <- Pinned pushbuffer", (*uint64)(unsafe.Pointer(&hostMem[32])), 0x3_0000_0003)
	t.Logf("GPGet %d after %d entries; notifier %x", c.gpGet(), c.put, c.pw[:8])

	if full {
		dbg, err := rm.Alloc(p.Device(), ClassDebugger, Bytes(&DebuggerAllocParams{AppClient: rm.Client(), Class3DObject: c.comp}))
		if err != nil {
			t.Errorf("debugger: %v", err)
		} else {
			sm := &SMErrorStatesParams{TargetChannel: c.ch, NumSMsToRead: 4}
			err1 := rm.SMErrors(dbg, sm)
			var mf MMUFaultInfoParams
			err2 := rm.MMUFaults(dbg, &mf)
			t.Logf("debugger 0x%x: SM errors %v (SM0 global ESR 0x%x, warp ESR 0x%x, MMU fault valid %d); MMU faults %v (count %d)",
				dbg, err1, sm.SMErrorStates[0].HwwGlobalEsr, sm.SMErrorStates[0].HwwWarpEsr, sm.MMUFault.Valid, err2, mf.Count)
			if err := rm.Free(p.Device(), dbg); err != nil {
				t.Errorf("free of the debugger: %v", err)
			}
		}
	}
	if err := p.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}

	// Stop as a device's stop does, with the channel still registered and
	// allocated: the path ends both.
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	c.registered = false
	if p.Doorbell() != nil || p.Flush() != nil {
		t.Error("the doorbell or the flush word is mapped after Stop")
	}
	if _, err := p.Alloc(device.PinnedMemory, 4); !errors.Is(err, errStopped) {
		t.Errorf("Alloc after Stop: %v", err)
	}
	if got := rm.made(ClassChannelGroup, g.Channel); len(got) != 0 {
		t.Errorf("Stop left channel objects %x", got)
	}
}

// TestGPULifecycle checks the refusals of a path and its give-back: memory
// the GPU lacks, host pages the RM refuses, and a Close with memory left,
// which gives everything back at the last Free.
func TestGPULifecycle(t *testing.T) {
	needGPU(t)
	if _, err := Open(99, nil); err == nil {
		t.Error("Open(99) succeeded")
	} else {
		t.Logf("Open(99): %v", err)
	}
	if s := currentSystem(); s != nil {
		t.Fatal("a failed Open left the system open")
	}
	p, err := Open(0, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := p.Alloc(device.DeviceMemory, 1<<42); !errors.Is(err, device.ErrNoMemory) {
		t.Errorf("Alloc of 4 TiB: %v", err)
	} else {
		t.Logf("Alloc of 4 TiB: %v", err)
	}
	// Host addresses with nothing mapped: reserved, PROT_NONE.
	hole, err := mmap(0, 1<<20, unix.PROT_NONE, reserveFlags, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer munmap(hole, 1<<20)
	if _, err := p.MapHost(hole, 1<<20); !errors.Is(err, device.ErrNever) {
		t.Errorf("MapHost of PROT_NONE pages: %v", err)
	} else {
		t.Logf("MapHost of PROT_NONE pages: %v", err)
	}
	m, err := p.Alloc(device.PinnedMemory, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if currentSystem() == nil {
		t.Error("Close gave the system back with memory left")
	}
	// The next device of the GPU opens while the last one's memory awaits
	// its free: the two paths share the GPU's objects.
	p2, err := Open(0, nil)
	if err != nil {
		t.Fatalf("Open while a closed path holds memory: %v", err)
	}
	if p2.Device() != p.Device() || p2.VASpace() != p.VASpace() {
		t.Errorf("the second path has device 0x%x, vaspace 0x%x; the first 0x%x, 0x%x", p2.Device(), p2.VASpace(), p.Device(), p.VASpace())
	}
	c := newChannel(t, p2)
	n := release(c.pw[pbWords:], c.pinned.Address+64, 7)
	c.submit(c.pinned, pbWords, n)
	c.wait("release on the second path", (*uint64)(unsafe.Pointer(&c.pw[16])), 7)
	if err := p.Free(m); err != nil {
		t.Errorf("the first path's last Free: %v", err)
	}
	n = release(c.pw[pbWords+8:], c.pinned.Address+64, 8)
	c.submit(c.pinned, pbWords+8, n)
	c.wait("release after the first path gave everything back", (*uint64)(unsafe.Pointer(&c.pw[16])), 8)
	c.close()
	if err := p2.Close(); err != nil {
		t.Errorf("Close of the second path: %v", err)
	}
	if currentSystem() != nil {
		t.Error("the last Close left the system open")
	}
}

// TestGPUReopen checks that the last Close keeps the host-visible
// reservation, and that the next Open takes it again and runs a channel
// whose rings and pushbuffer lie in it.
func TestGPUReopen(t *testing.T) {
	needGPU(t)
	if currentSystem() != nil {
		t.Skip("another path holds the system")
	}
	var res uintptr
	for i := range 2 {
		p, err := Open(0, nil)
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		c := newChannel(t, p)
		n := release(c.pw[pbWords:], c.pinned.Address+64, uint64(i+1))
		c.submit(c.pinned, pbWords, n)
		c.wait(fmt.Sprintf("release of open %d", i), (*uint64)(unsafe.Pointer(&c.pw[16])), uint64(i+1))
		p.sys.mu.Lock()
		got := p.sys.hostRes
		p.sys.mu.Unlock()
		c.close()
		if err := p.Close(); err != nil {
			t.Errorf("Close %d: %v", i, err)
		}
		if currentSystem() != nil {
			t.Fatalf("Close %d left the system open", i)
		}
		if i > 0 && got != res {
			t.Errorf("open %d reserved 0x%x, not the reservation at 0x%x the last Close left", i, got, res)
		}
		res = got
		if err := reserve(res, pageSize); !errors.Is(err, unix.EEXIST) {
			if err == nil {
				_ = munmap(res, pageSize)
			}
			t.Errorf("the reservation at 0x%x is given back at Close %d: %v", res, i, err)
		}
	}
	t.Logf("both opens took the host-visible reservation at 0x%x", res)
}

// currentSystem is the process's system, or nil.
func currentSystem() *system {
	systemLock.Lock()
	defer systemLock.Unlock()
	return theSystem
}

// TestGPUFault has a channel release a semaphore to a GPU address nothing
// maps, and reads what the RM reports: the channel's error notifier, the
// debugger's SM and MMU reports, and the path's Check.
func TestGPUFault(t *testing.T) {
	needGPU(t)
	p, err := Open(0, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer p.Close()
	c := newChannel(t, p)
	defer c.close()
	rm := p.RM()
	dbg, err := rm.Alloc(p.Device(), ClassDebugger, Bytes(&DebuggerAllocParams{AppClient: rm.Client(), Class3DObject: c.comp}))
	if err != nil {
		t.Fatalf("debugger: %v", err)
	}
	const nowhere = deviceBase + 1<<44 // in Device memory's pool, never given
	n := release(c.pw[pbWords:], nowhere, 1)
	t0 := time.Now()
	c.submit(c.pinned, pbWords, n)
	// NvNotification[0]: timeStamp@0, info32@8, info16@12, status@14.
	for atomic.LoadUint32(&c.pw[3])>>16 == 0 && time.Since(t0) < 5*time.Second {
		time.Sleep(time.Millisecond)
	}
	info32, status := atomic.LoadUint32(&c.pw[2]), atomic.LoadUint32(&c.pw[3])>>16
	if status == 0 {
		t.Errorf("no error in the notifier after %v; GPGet %d", time.Since(t0), c.gpGet())
	} else {
		t.Logf("notifier after %v: error %d, info16 0x%x, status 0x%x (words %x)", time.Since(t0), info32, c.pw[3]&0xffff, status, c.pw[:4])
	}
	sm := &SMErrorStatesParams{TargetChannel: c.ch, NumSMsToRead: 1}
	err1 := rm.SMErrors(dbg, sm)
	var mf MMUFaultInfoParams
	err2 := rm.MMUFaults(dbg, &mf)
	t.Logf("SM errors: %v, MMU fault valid %d info 0x%x; MMU faults: %v, count %d, first %+v",
		err1, sm.MMUFault.Valid, sm.MMUFault.FaultInfo, err2, mf.Count, mf.Entries[0])
	t.Logf("Check: %v", p.Check())
	if err := rm.Free(p.Device(), dbg); err != nil {
		t.Errorf("free of the debugger: %v", err)
	}
}

// benchChannel opens GPU 0 and a test channel for a benchmark.
func benchChannel(b *testing.B, opts *Options) (*Client, *testChannel) {
	needGPU(b)
	p, err := Open(0, opts)
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { p.Close() })
	c := newChannel(b, p)
	b.Cleanup(c.close)
	return p, c
}

// BenchmarkGPUDoorbell is one store of the token to the doorbell of an idle
// channel, through BAR0 and BAR1: a locked store (atomic.StoreUint32) and
// Ring's fence and plain store.
func BenchmarkGPUDoorbell(b *testing.B) {
	for _, c := range []struct {
		name   string
		opts   Options
		locked bool
	}{
		{"bar0-locked", Options{}, true},
		{"bar0-ring", Options{}, false},
		{"bar1-ring", Options{bar1Doorbell: true}, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, ch := benchChannel(b, &c.opts)
			d := p.Doorbell()
			for b.Loop() {
				if c.locked {
					atomic.StoreUint32(d, ch.token)
				} else {
					p.Ring(ch.token)
				}
			}
		})
	}
}

// BenchmarkGPUMappedStore is one store to Mapped memory, write-combined
// through BAR1, as a device stores GPPut: locked, and plain with a fence.
func BenchmarkGPUMappedStore(b *testing.B) {
	for _, locked := range []bool{true, false} {
		name := "plain-fenced"
		if locked {
			name = "locked"
		}
		b.Run(name, func(b *testing.B) {
			_, ch := benchChannel(b, nil)
			w := &ch.rw[userdOffset/4+64] // past USERD's words
			var f uint32
			for b.Loop() {
				if locked {
					atomic.StoreUint32(w, 1)
				} else {
					*w = 1
					atomic.AddUint32(&f, 0)
				}
			}
		})
	}
}

// BenchmarkGPUFlushRead is one read of the flush word through BAR1.
func BenchmarkGPUFlushRead(b *testing.B) {
	p, _ := benchChannel(b, nil)
	f := p.Flush()
	for b.Loop() {
		atomic.LoadUint32(f)
	}
}

// BenchmarkGPUTimer is one ReadTimer.
func BenchmarkGPUTimer(b *testing.B) {
	p, _ := benchChannel(b, nil)
	for b.Loop() {
		if _, err := p.ReadTimer(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGPURoundTrip is a release submitted through the doorbell and
// polled for in Pinned memory: GPPut stored plainly and Ring, with and
// without the flush read, through BAR0 and BAR1.
func BenchmarkGPURoundTrip(b *testing.B) {
	for _, c := range []struct {
		name  string
		opts  Options
		flush bool
	}{
		{"bar0", Options{}, true},
		{"bar0-noflush", Options{}, false},
		{"bar1", Options{bar1Doorbell: true}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, ch := benchChannel(b, &c.opts)
			word := (*uint64)(unsafe.Pointer(&ch.pw[16]))
			v := uint64(1 << 32)
			t0 := time.Now()
			for b.Loop() {
				v++
				slot := pbWords + int(v%8)*8
				n := release(ch.pw[slot:], ch.pinned.Address+64, v)
				e := gpEntry(ch.pinned.Address+uint64(slot)*4, n)
				ch.rw[ch.put*2] = uint32(e)
				ch.rw[ch.put*2+1] = uint32(e >> 32)
				ch.put = (ch.put + 1) % ringEntries
				ch.rw[userdOffset/4+userdGPPut/4] = ch.put
				if c.flush {
					_ = atomic.LoadUint32(p.Flush())
				}
				p.Ring(ch.token)
				for atomic.LoadUint64(word) != v {
					if time.Since(t0) > 30*time.Second {
						b.Fatalf("release %d did not arrive; GPGet %d", v, ch.gpGet())
					}
				}
			}
		})
	}
}
