package nvidia

import (
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// A Pinned Alloc whose UVM map is refused, and whose UVM_FREE of the
// external range is refused too, leaves the range in UVM's space: its
// addresses stay out of the pool (as Free and Unregister keep what UVM
// would not give back), so that the next allocation does not take them and
// meet the range that stays.
func TestAllocKeepsRangeUVMKept(t *testing.T) {
	a := heldRig(t)
	f := &peerFake{t: t, statuses: map[string][]uint32{}}
	a.r.ioctl = f.ioctl
	a.u.conn = a.r.conn
	f.answer("UVM_MAP_EXTERNAL_ALLOCATION", StatusNotSupported)
	f.answer("UVM_FREE", StatusInvalidArgument)
	if _, err := a.Alloc(device.PinnedMemory, pageSize); err == nil {
		t.Fatal("the fake's refused map made the memory")
	}
	if len(f.ranges) != 1 || len(f.unmaps) != 1 {
		t.Fatalf("ranges %+v, unmaps %+v", f.ranges, f.unmaps)
	}
	stale := span{f.ranges[0].Base, f.ranges[0].Length}
	m, err := a.Alloc(device.PinnedMemory, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free(m)
	if (span{m.Address, pageSize}).overlaps(stale) {
		t.Errorf("the next Pinned memory took 0x%x, inside the external range [0x%x, 0x%x) UVM refused to free", m.Address, stale.addr, stale.end())
	}
}

// The same for MapPeer, whose error says "the range stays": its
// addresses stay out of Device memory's pool, and the next view takes
// others.
func TestMapPeerKeepsRangeUVMKept(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xbeef)
	f.answer("UVM_MAP_EXTERNAL_ALLOCATION", StatusNotSupported)
	f.answer("UVM_FREE", StatusInvalidArgument)
	_, err := a.MapPeer(m)
	if err == nil || !strings.Contains(err.Error(), "the range stays") {
		t.Fatalf("MapPeer answered %v", err)
	}
	stale := span{f.ranges[0].Base, f.ranges[0].Length}
	v, err := a.MapPeer(m)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.Data.(*memRecord); (span{r.va, r.length}).overlaps(stale) {
		t.Errorf("the next view took 0x%x, inside the external range [0x%x, 0x%x) that stays in UVM", r.va, stale.addr, stale.end())
	}
}

// A Free of Mapped memory (not held) that puts the reservation back over
// the host view, and then meets the RM's refusal to free the object,
// returns a fault, and Bytes is nil: the view is the reservation's pages,
// whose read would end the process (Go's "unexpected fault address").
func TestFailedFreeDropsHostView(t *testing.T) {
	a := heldRig(t)
	f := &peerFake{t: t, statuses: map[string][]uint32{}}
	a.r.ioctl = f.ioctl
	a.u.conn = a.r.conn
	m := fakeMapped(t, a, 2*pageSize, false)
	f.answer("RM_FREE", StatusInvalidArgument)
	if err := a.Free(m); !isFault(err) {
		t.Fatalf("Free answered %v", err)
	}
	if b := m.Bytes(); b != nil {
		perm, _ := protAt(uintptr(unsafe.Pointer(&b[0])))
		old := debug.SetPanicOnFault(true)
		defer debug.SetPanicOnFault(old)
		faulted := func() (faulted bool) {
			defer func() { faulted = recover() != nil }()
			failedFreeSink = b[0]
			return false
		}()
		t.Errorf("after the failed Free, Bytes is %d bytes over pages %q; a read faults: %v", len(b), perm, faulted)
	}
}

// failedFreeSink takes the byte TestFailedFreeDropsHostView reads.
var failedFreeSink byte

// DMA refuses memory of another path, here of another GPU, as Free does,
// without a call of the driver: the other GPU's memory object is no
// object of this GPU's file, and the memory's free is the other path's
// to order (its freed mark is written under that path's lock).
func TestDMAOtherPath(t *testing.T) {
	_, a, b := peerRig(t, nvlinkCaps)
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xb1)
	var exports int
	a.r.ioctl = func(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
		if req == escape(escExportToDMABufFD, unsafe.Sizeof(exportDMABufParams{})) {
			exports++
			return syscall.EINVAL
		}
		return syscall.ENOTTY
	}
	dir := fakeSysfs(t, "0000:41:00.0")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = b.Free(m)
	}()
	_, err := a.dma(m, "0000:41:00.0", dir, pageSize)
	wg.Wait()
	if exports != 0 || err == nil || !strings.Contains(err.Error(), "not memory this path gave") {
		t.Errorf("DMA through GPU 0's path of GPU 1's memory: %d exports on GPU 0's file, answer %v", exports, err)
	}
}
