package nvidia

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
)

// needGPU skips a test unless RIG_GPU=1.
func needGPU(t *testing.T) {
	t.Helper()
	if os.Getenv("RIG_GPU") != "1" {
		t.Skip("RIG_GPU unset: needs an NVIDIA GPU")
	}
}

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
)

// release writes at pb the words of a 64-bit semaphore release of value
// to the GPU address a, and answers their count.
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

// TestGPUPath brings a path up on GPU 0, allocates each kind of memory,
// makes a channel group with a GPFIFO channel, and has the channel release
// semaphores into Pinned and Mapped memory through the doorbell, then frees
// everything. Run it with RIG_GPU=1.
func TestGPUPath(t *testing.T) {
	needGPU(t)
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"uvm", Options{}},
		{"uvm+defaultmap", Options{defaultMap: true}},
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
	hostMem := unsafe.Slice((*byte)(ptrAt(ha)), hostLen)

	rm := p.RM()
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

	pinned := alloc(device.Pinned, 64<<10)
	mapped := alloc(device.Mapped, 64<<10)
	ring := alloc(device.Mapped, ringBytes)
	if full {
		alloc(device.Device, 1<<20)
		alloc(device.Device, 16<<20)
		alloc(device.Pinned, 3<<20)
		big := alloc(device.Mapped, 8<<20)
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
	mw, pw := words(mapped), words(pinned)
	mw[8], pw[8] = 0xfeedface, 0xcafef00d
	if mw[8] != 0xfeedface || pw[8] != 0xcafef00d {
		t.Fatal("host memory does not read back")
	}

	// Host memory of the caller's, mapped at its own address.
	hm, err := p.MapHost(uintptr(unsafe.Pointer(&hostMem[0])), len(hostMem))
	if err != nil {
		t.Fatalf("MapHost: %v", err)
	}
	mems = append(mems, hm)
	t.Logf("MapHost(0x%x) at GPU 0x%x (identity %v)", hm.Host, hm.Address, uint64(hm.Host) == hm.Address)

	if full {
		t1, err1 := p.ReadTimer()
		time.Sleep(10 * time.Millisecond)
		t2, err2 := p.ReadTimer()
		r1, err3 := p.ReadTimerRM()
		if err1 != nil || err2 != nil || err3 != nil {
			t.Errorf("timers: %v %v %v", err1, err2, err3)
		} else {
			rate := float64(t2.GPU-t1.GPU) / float64(t2.Host-t1.Host)
			// The GPU time each reading predicts at the RM's reading.
			skew := int64(r1.GPU) - (int64(t2.GPU) + (r1.Host - t2.Host))
			t.Logf("timer: GPU %d ns at host %d ns (width %d ns), rate %.6f; RM reading %d at %d (width %d), skew against registers %d ns",
				t2.GPU, t2.Host, t2.Width, rate, r1.GPU, r1.Host, r1.Width, skew)
		}
		if err := rm.Boost(p.Subdevice()); err != nil {
			t.Errorf("Boost: %v", err)
		} else {
			t.Log("boost: clocks to max, CUDA priority, no end")
		}
	}

	// A channel group with one GPFIFO channel on GR.
	tsg, err := rm.Alloc(p.Device(), ClassChannelGroup, Bytes(&ChannelGroupAllocParams{EngineType: EngineGraphics}))
	if err != nil {
		t.Fatalf("channel group: %v", err)
	}
	defer func() {
		if len(rm.made(ClassChannelGroup)) == 0 {
			return // Stop freed it
		}
		if err := rm.Free(p.Device(), tsg); err != nil {
			t.Errorf("free of the channel group: %v", err)
		}
	}()
	ctx, err := rm.Alloc(tsg, ClassContextShare, Bytes(&CtxShareAllocParams{VASpace: p.VASpace(), Flags: CtxShareAsync}))
	if err != nil {
		t.Fatalf("context share: %v", err)
	}
	notifier := pinned // the error notifier: 16 bytes at the start of Pinned memory
	cp := ChannelAllocParams{
		ObjectError:   notifier.Handle,
		ObjectBuffer:  ring.Handle,
		GPFIFOOffset:  ring.Address,
		GPFIFOEntries: ringEntries,
		ContextShare:  ctx,
	}
	cp.UserdMemory[0] = ring.Handle
	cp.UserdOffset[0] = userdOffset
	ch, err := rm.Alloc(tsg, g.Channel, Bytes(&cp))
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	compute, err := rm.Alloc(ch, g.Compute, nil)
	if err != nil {
		t.Fatalf("compute object: %v", err)
	}
	token, err := rm.Token(ch)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if err := p.Register(ch); err != nil {
		t.Fatalf("Register: %v", err)
	}
	registered := true
	defer func() {
		if registered {
			if err := p.Unregister(ch); err != nil {
				t.Errorf("Unregister: %v", err)
			}
		}
	}()
	if err := rm.Schedule(tsg, &ScheduleParams{Enable: 1}); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	t.Logf("channel group 0x%x, context share 0x%x, channel 0x%x, compute 0x%x, token 0x%x, registered and scheduled", tsg, ctx, ch, compute, token)

	// Releases through the doorbell: into Pinned memory from a pushbuffer
	// in Pinned memory, then into Mapped memory and the caller's host
	// memory.
	rw := words(ring)
	put := uint32(0)
	submit := func(pb *Memory, off int, n int) {
		e := gpEntry(pb.Address+uint64(off)*4, n)
		rw[put*2] = uint32(e)
		rw[put*2+1] = uint32(e >> 32)
		put = (put + 1) % ringEntries
		atomic.StoreUint32(&rw[userdOffset/4+userdGPPut/4], put)
		if f := p.Flush(); f != nil {
			_ = atomic.LoadUint32(f)
		}
		atomic.StoreUint32(p.Doorbell(), token)
	}
	wait := func(what string, word *uint64, want uint64) {
		t0 := time.Now()
		for atomic.LoadUint64(word) != want {
			if time.Since(t0) > semaphoreTimeout {
				t.Fatalf("%s: the semaphore reads 0x%x after %v, not 0x%x; GPGet %d GPPut %d; notifier %x; check %v",
					what, atomic.LoadUint64(word), semaphoreTimeout, want,
					atomic.LoadUint32(&rw[userdOffset/4+userdGPGet/4]), put, pw[:4], p.Check())
			}
		}
		t.Logf("%s: released 0x%x in %v", what, want, time.Since(t0))
	}
	pbOff := 1024 // words: the pushbuffer sits past the notifier and semaphores
	n := release(pw[pbOff:], pinned.Address+64, 0x1_0000_0001)
	submit(pinned, pbOff, n)
	wait("Pinned <- Pinned pushbuffer", (*uint64)(unsafe.Pointer(&pw[16])), 0x1_0000_0001)

	n = release(mw[pbOff:], mapped.Address+64, 0x2_0000_0002)
	submit(mapped, pbOff, n)
	mword := (*uint64)(unsafe.Pointer(&mw[16]))
	wait("Mapped <- Mapped pushbuffer", mword, 0x2_0000_0002)

	hw := unsafe.Slice((*uint32)(unsafe.Pointer(&hostMem[0])), len(hostMem)/4)
	n = release(pw[pbOff+16:], hm.Address+128, 0x3_0000_0003)
	submit(pinned, pbOff+16, n)
	wait("MapHost memory <- Pinned pushbuffer", (*uint64)(unsafe.Pointer(&hw[32])), 0x3_0000_0003)
	t.Logf("GPGet %d after %d entries; notifier %x", atomic.LoadUint32(&rw[userdOffset/4+userdGPGet/4]), put, pw[:4])

	if full {
		// A burst, to see what a round trip costs.
		t0 := time.Now()
		const rounds = 100
		for i := uint64(1); i <= rounds; i++ {
			n := release(pw[pbOff+32:], pinned.Address+64, 0x10_0000_0000+i)
			submit(pinned, pbOff+32, n)
			for atomic.LoadUint64((*uint64)(unsafe.Pointer(&pw[16]))) != 0x10_0000_0000+i {
				if time.Since(t0) > semaphoreTimeout {
					t.Fatalf("round %d did not complete", i)
				}
			}
		}
		t.Logf("%d submit-release-poll round trips: %v each", rounds, time.Since(t0)/rounds)

		// The debugger object and what it reads.
		dbg, err := rm.Alloc(p.Device(), ClassDebugger, Bytes(&DebuggerAllocParams{AppClient: rm.Client(), Class3DObject: compute}))
		if err != nil {
			t.Errorf("debugger: %v", err)
		} else {
			sm := &SMErrorStatesParams{TargetChannel: ch, NumSMsToRead: 4}
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

	// Give back the channel as a device's stop does.
	if err := p.Unregister(ch); err != nil {
		t.Errorf("Unregister: %v", err)
	}
	registered = false
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if p.Doorbell() != nil {
		t.Error("the doorbell is mapped after Stop")
	}
	if _, err := p.Alloc(device.Pinned, 4); !errors.Is(err, errStopped) {
		t.Errorf("Alloc after Stop: %v", err)
	}
	if got := rm.made(ClassChannelGroup, g.Channel); len(got) != 0 {
		t.Errorf("Stop left channel objects %x", got)
	}
}

// Open refuses GPUs the machine lacks.
func TestGPUOpenMissing(t *testing.T) {
	needGPU(t)
	if _, err := Open(99, nil); err == nil {
		t.Error("Open(99) succeeded")
	} else {
		t.Log(err)
	}
	systemLock.Lock()
	left := theSystem
	systemLock.Unlock()
	if left != nil {
		t.Error("a failed Open left the system open")
	}
}
