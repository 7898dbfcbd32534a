package nvidia

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// The layouts of peer access's blocks against gcc's on the 580 headers
// (ctrl0000system.h, nvos.h, uvm_ioctl.h), and their numbers.
func TestPeerABI580(t *testing.T) {
	var q P2PCapsV2Params
	var d rmDupObjectParams
	var e uvmEnablePeerAccessParams
	for _, c := range []struct {
		c         string
		got, want uintptr
	}{
		{"sizeof NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS", unsafe.Sizeof(q), 8348},
		{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS.gpuCount", unsafe.Offsetof(q.GPUCount), 128},
		{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS.p2pCaps", unsafe.Offsetof(q.P2PCaps), 132},
		{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS.p2pOptimalWriteCEs", unsafe.Offsetof(q.P2POptimalWriteCEs), 140},
		{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS.p2pCapsStatus", unsafe.Offsetof(q.P2PCapsStatus), 144},
		{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS.busPeerIds", unsafe.Offsetof(q.BusPeerIDs), 156},
		{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS.busEgmPeerIds", unsafe.Offsetof(q.BusEGMPeerIDs), 4252},
		{"sizeof NVOS55_PARAMETERS", unsafe.Sizeof(d), 28},
		{"NVOS55_PARAMETERS.hObject", unsafe.Offsetof(d.Object), 8},
		{"NVOS55_PARAMETERS.hObjectSrc", unsafe.Offsetof(d.ObjectSrc), 16},
		{"NVOS55_PARAMETERS.status", unsafe.Offsetof(d.Status), 24},
		{"sizeof UVM_ENABLE_PEER_ACCESS_PARAMS", unsafe.Sizeof(e), 36},
		{"UVM_ENABLE_PEER_ACCESS_PARAMS.gpuUuidB", unsafe.Offsetof(e.GPUUUIDB), 16},
		{"UVM_ENABLE_PEER_ACCESS_PARAMS.rmStatus", unsafe.Offsetof(e.RMStatus), 32},
		{"NV_ESC_RM_DUP_OBJECT", escape(escRMDupObject, unsafe.Sizeof(d)), 0xc01c4634},
		{"UVM_ENABLE_PEER_ACCESS", uvmEnablePeerAccess, 29},
		{"UVM_UNMAP_EXTERNAL", uvmUnmapExternal, 66},
		{"NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2", CtrlSystemGetP2PCapsV2, 0x12b},
		{"NV_ERR_INVALID_DEVICE", uintptr(statusInvalidDevice), 0x26},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d (0x%x), want %d (0x%x)", c.c, c.got, c.got, c.want, c.want)
		}
	}
	if StatusName(statusInvalidDevice) != "NV_ERR_INVALID_DEVICE" {
		t.Errorf("status 0x26 is %s", StatusName(statusInvalidDevice))
	}
}

func TestP2PLink(t *testing.T) {
	for _, c := range []struct {
		caps           uint32
		reaches, nvlnk bool
		text           string
	}{
		{0, false, false, "none"},
		{P2PReads | P2PWrites | P2PAtomics | P2PNVLink, true, true, "reads, writes, atomics, NVLink"},
		{P2PReads | P2PWrites | P2PPCI | P2PPCIBAR1, true, false, "PCIe, PCIe BAR1"},
		{P2PWrites | P2PPCI, false, false, "writes, PCIe"},
		{P2PReads | P2PNVLink, false, true, "reads, NVLink"},
	} {
		l := p2pLink{caps: c.caps}
		if l.reaches() != c.reaches || l.nvlink() != c.nvlnk || !strings.Contains(l.String(), c.text) {
			t.Errorf("caps 0x%x: reaches %v, nvlink %v, %q", c.caps, l.reaches(), l.nvlink(), l.String())
		}
	}
}

// peerFake is a fake of the RM and UVM for peer access: the control file
// is fd 42, UVM's file fd 43, the GPUs' files fd 44. It returns the P2P
// capabilities caps, names the duplicates, and records each call.
type peerFake struct {
	t        *testing.T
	caps     uint32
	next     Handle
	calls    []string
	statuses map[string][]uint32 // what the next calls of a name answer, in turn
	on       map[string]func()   // what runs at the next call of a name, once

	maps    []uvmMapExternalAllocationParams
	enables []uvmEnablePeerAccessParams
	dups    []rmDupObjectParams
	frees   []rmFreeParams
	ranges  []uvmCreateExternalRangeParams
	unmaps  []uvmFreeParams
}

// answer queues the statuses of the next calls of name.
func (f *peerFake) answer(name string, st ...uint32) {
	f.statuses[name] = append(f.statuses[name], st...)
}

func (f *peerFake) status(name string) uint32 {
	f.calls = append(f.calls, name)
	if fn := f.on[name]; fn != nil {
		delete(f.on, name)
		fn()
	}
	q := f.statuses[name]
	if len(q) == 0 {
		return 0
	}
	f.statuses[name] = q[1:]
	return q[0]
}

func (f *peerFake) ioctl(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	if fd == 43 {
		switch req {
		case uvmEnablePeerAccess:
			p := (*uvmEnablePeerAccessParams)(arg)
			p.RMStatus = f.status("UVM_ENABLE_PEER_ACCESS")
			f.enables = append(f.enables, *p)
		case uvmCreateExternalRange:
			p := (*uvmCreateExternalRangeParams)(arg)
			p.RMStatus = f.status("UVM_CREATE_EXTERNAL_RANGE")
			f.ranges = append(f.ranges, *p)
		case uvmMapExternalAlloc:
			p := (*uvmMapExternalAllocationParams)(arg)
			p.RMStatus = f.status("UVM_MAP_EXTERNAL_ALLOCATION")
			f.maps = append(f.maps, *p)
		case uvmFree:
			p := (*uvmFreeParams)(arg)
			p.RMStatus = f.status("UVM_FREE")
			f.unmaps = append(f.unmaps, *p)
		default:
			return syscall.ENOTTY
		}
		return 0
	}
	if fd != 42 && fd != 44 || req>>30 != 3 || (req>>8)&0xff != 'F' {
		return syscall.EBADF
	}
	nr, size := req&0xff, (req>>16)&0x3fff
	switch {
	case nr == escRMControl && size == unsafe.Sizeof(rmControlParams{}):
		c := (*rmControlParams)(arg)
		c.Status = f.status(fmt.Sprintf("RM_CONTROL 0x%x", c.Cmd))
		if c.Cmd != CtrlSystemGetP2PCapsV2 || c.ParamsSize != uint32(unsafe.Sizeof(P2PCapsV2Params{})) {
			c.Status = StatusNotSupported
			return 0
		}
		q := (*P2PCapsV2Params)(unsafe.Pointer(&mem(c.Params, c.ParamsSize)[0]))
		if q.GPUCount != 2 || q.GPUIDs[0] >= q.GPUIDs[1] {
			c.Status = StatusInvalidArgument
			return 0
		}
		if c.Status == 0 {
			q.P2PCaps = f.caps
		}
	case nr == escRMDupObject && size == unsafe.Sizeof(rmDupObjectParams{}) && fd == 42:
		d := (*rmDupObjectParams)(arg)
		if d.Status = f.status("RM_DUP_OBJECT"); d.Status == 0 {
			f.next++
			d.Object = f.next
		}
		f.dups = append(f.dups, *d)
	case nr == escRMFree && size == unsafe.Sizeof(rmFreeParams{}):
		p := (*rmFreeParams)(arg)
		p.Status = f.status("RM_FREE")
		f.frees = append(f.frees, *p)
	case nr == escRMAllocMemory && size == unsafe.Sizeof(rmAllocMemoryWithFD{}) && fd == 44:
		p := (*rmAllocMemoryWithFD)(arg)
		p.Params.Status = f.status("RM_ALLOC_MEMORY")
	default:
		return syscall.ENOTTY
	}
	return 0
}

// peerRig is a process of two GPUs on the fake: paths a (GPU 0) and b
// (GPU 1), whose RM returns caps for the pair.
func peerRig(t *testing.T, caps uint32) (f *peerFake, a, b *Client) {
	f = &peerFake{t: t, caps: caps, next: 0xcaf00100, statuses: map[string][]uint32{}}
	forget := func() {
		p2pLinks.Lock()
		p2pLinks.m = nil
		p2pLinks.Unlock()
		clear(peerPairs)
	}
	forget()
	t.Cleanup(forget) // the GPU tests that follow ask the RM anew
	s := &system{uvmMM: -1, gpus: map[int]*gpuState{}}
	s.rm = rm{conn: conn{ioctl: f.ioctl, sink: &s.sink}, ctl: 42, client: 0xc1d00001}
	s.uvm = uvm{conn: s.rm.conn, fd: 43}
	s.dev = newPool(deviceBase, deviceSize)
	s.cards = []cardInfo{
		{Valid: 1, PCI: pciInfo{Bus: 0x2a}, GPUID: 0xf00d2a00},
		{Valid: 1, PCI: pciInfo{Bus: 0x18}, GPUID: 0xf00d1800},
	}
	s.gpus[0] = &gpuState{index: 0, addr: PCIAddress{Bus: 0x18}, refs: 1, devFD: 44, device: 0xa0, subdevice: 0xa1, uuid: UUID{0xa}}
	s.gpus[1] = &gpuState{index: 1, addr: PCIAddress{Bus: 0x2a}, refs: 1, devFD: 44, device: 0xb0, subdevice: 0xb1, uuid: UUID{0xb}}
	path := func(g *gpuState) *Client {
		p := &Client{gpuState: g, sys: s, channels: map[Handle]span{}}
		p.r = rm{conn: conn{ioctl: f.ioctl, sink: &p.sink}, ctl: 42, client: s.client}
		p.u = uvm{conn: p.r.conn, fd: 43}
		return p
	}
	return f, path(s.gpus[0]), path(s.gpus[1])
}

// peerVidmem is n bytes of memory of kind k of path p, as allocVidmem records
// it, with the RM's handle h.
func peerVidmem(t *testing.T, p *Client, k device.Memory, n int, h Handle) *Memory {
	page := pageFor(uint64(n))
	size := roundUp(uint64(n), page)
	va, pl, err := p.takeVA(false, size, page)
	if err != nil {
		t.Fatal(err)
	}
	p.live++
	return &Memory{Kind: k, Address: va, Size: n, Handle: h,
		Data: &memRecord{va: va, length: size, page: page, pool: pl, gpu: p.gpuState, path: p}}
}

const nvlinkCaps = P2PReads | P2PWrites | P2PAtomics | P2PNVLink

// TestMapPeerNVLink maps Device memory of GPU 1 for GPU 0, which NVLink
// joins: the RM's capabilities, asked once; no UVM_ENABLE_PEER_ACCESS; a
// duplicate under GPU 0's device, mapped for GPU 0 alone at addresses of its
// own; Free undoes it and leaves GPU 1's memory.
func TestMapPeerNVLink(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	a.learnPeers()
	if !a.Reaches(0) || !a.Reaches(1) || !b.Reaches(0) || a.Reaches(2) || a.Reaches(-1) {
		t.Errorf("reaches: 0 %v, 1 %v, back %v, 2 %v", a.Reaches(0), a.Reaches(1), b.Reaches(0), a.Reaches(2))
	}
	if got := strings.Join(f.calls, ","); got != "RM_CONTROL 0x12b" {
		t.Errorf("calls to learn the link: %s", got)
	}
	m := peerVidmem(t, b, device.DeviceMemory, 9<<20, 0xbeef)
	f.calls = nil
	v, err := a.MapPeer(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls, ","); got != "RM_DUP_OBJECT,UVM_CREATE_EXTERNAL_RANGE,UVM_MAP_EXTERNAL_ALLOCATION" {
		t.Errorf("calls: %s", got)
	}
	d := f.dups[0]
	if d.Client != a.r.client || d.Parent != 0xa0 || d.ClientSrc != a.r.client || d.ObjectSrc != 0xbeef || d.Object != v.Handle {
		t.Errorf("dup %+v, view handle 0x%x", d, v.Handle)
	}
	rec := v.Data.(*memRecord)
	me := f.maps[0]
	if me.Base != rec.va || me.Length != 10<<20 || me.Offset != 0 || me.GPUAttributesCount != 1 ||
		me.PerGPUAttributes[0].GPUUUID != a.uuid || me.Client != a.r.client || me.Memory != v.Handle || me.RMCtrlFD != 42 {
		t.Errorf("map %+v (attributes %+v), view at 0x%x", me.Base, me.PerGPUAttributes[0], rec.va)
	}
	if f.ranges[0].Base != rec.va || f.ranges[0].Length != 10<<20 || rec.va%memHugePage != 0 {
		t.Errorf("range %+v", f.ranges[0])
	}
	if v.Kind != device.DeviceMemory || !v.Borrowed || v.Address != rec.va || v.Size != m.Size || v.Host != 0 ||
		v.Address == m.Address || rec.gpu != b.gpuState || a.live != 1 {
		t.Errorf("view %+v, live %d", v, a.live)
	}
	f.calls = nil
	if err := a.Free(v); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls, ","); got != "UVM_FREE,RM_FREE" {
		t.Errorf("free's calls: %s", got)
	}
	if fr := f.frees[0]; fr.ObjectOld != v.Handle || fr.ObjectParent != 0xa0 || f.unmaps[0].Base != rec.va || a.live != 0 {
		t.Errorf("free %+v, unmap %+v, live %d", fr, f.unmaps[0], a.live)
	}
	// The view's addresses went back to the pool: the next view takes them.
	v2, err := a.MapPeer(m)
	if err != nil || v2.Data.(*memRecord).va != rec.va {
		t.Errorf("second view: %v, %v", v2, err)
	}
	if len(f.enables) != 0 {
		t.Errorf("UVM_ENABLE_PEER_ACCESS for NVLink peers: %+v", f.enables)
	}
}

// TestMapPeerPCIe turns UVM's peer access on once for a pair that PCIe
// joins, and asks again once a GPU's state was given back.
func TestMapPeerPCIe(t *testing.T) {
	f, a, b := peerRig(t, P2PReads|P2PWrites|P2PPCI|P2PPCIBAR1)
	m := peerVidmem(t, b, device.MappedMemory, 4096, 0xbeef)
	for range 2 {
		v, err := a.MapPeer(m)
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind != device.MappedMemory || v.Address%4096 != 0 {
			t.Errorf("view %+v", v)
		}
	}
	if len(f.enables) != 1 || f.enables[0].GPUUUIDA != a.uuid || f.enables[0].GPUUUIDB != b.uuid {
		t.Fatalf("enables %+v", f.enables)
	}
	if want := "RM_CONTROL 0x12b,UVM_ENABLE_PEER_ACCESS,RM_DUP_OBJECT"; !strings.HasPrefix(strings.Join(f.calls, ","), want) {
		t.Errorf("calls %v", f.calls)
	}
	// GPU 1's state goes back and comes anew: UVM forgot the pair.
	b.gpuState.refs = 0
	nb := *b.gpuState
	nb.refs = 1
	a.sys.gpus[1] = &nb
	m2 := peerVidmem(t, &Client{gpuState: &nb, sys: a.sys}, device.DeviceMemory, 4096, 0xbee2)
	if _, err := a.MapPeer(m2); err != nil {
		t.Fatal(err)
	}
	if len(f.enables) != 2 || len(peerPairs) != 1 {
		t.Errorf("enables %d, pairs %d", len(f.enables), len(peerPairs))
	}
	// A refusal of UVM's is the RM's status, and device.ErrNever.
	f.answer("UVM_ENABLE_PEER_ACCESS", statusInvalidDevice)
	clear(peerPairs)
	_, err := a.MapPeer(m2)
	if !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "UVM_ENABLE_PEER_ACCESS: NV_ERR_INVALID_DEVICE") {
		t.Errorf("a refused enable: %v", err)
	}
}

// TestMapPeerRefusals: no P2P between the GPUs, a duplicate the RM lacks
// the resources for, a map UVM refuses (with the range and the duplicate
// given back), NVLink peers UVM did not enable, a stopped path, memory of
// no path.
func TestMapPeerRefusals(t *testing.T) {
	f, a, b := peerRig(t, P2PPCI)
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xbeef)
	_, err := a.MapPeer(m)
	if !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "does not reach") || len(f.dups) != 0 {
		t.Errorf("no P2P: %v", err)
	}
	if a.Reaches(1) || b.Reaches(0) {
		t.Error("GPUs without P2P reads and writes reach each other")
	}
	f, a, b = peerRig(t, nvlinkCaps)
	m = peerVidmem(t, b, device.DeviceMemory, 4096, 0xbeef)
	free := fmt.Sprint(a.sys.dev.free)
	f.answer("RM_DUP_OBJECT", StatusInsufficientResources)
	if _, err := a.MapPeer(m); !errors.Is(err, device.ErrNoRoom) || errors.Is(err, device.ErrNever) {
		t.Errorf("a dup without resources: %v", err)
	}
	f.answer("UVM_MAP_EXTERNAL_ALLOCATION", StatusNotSupported)
	f.calls = nil
	_, err = a.MapPeer(m)
	if !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "UVM_MAP_EXTERNAL_ALLOCATION: NV_ERR_NOT_SUPPORTED") {
		t.Errorf("a refused map: %v", err)
	}
	if got := strings.Join(f.calls, ","); got != "RM_DUP_OBJECT,UVM_CREATE_EXTERNAL_RANGE,UVM_MAP_EXTERNAL_ALLOCATION,UVM_FREE,RM_FREE" {
		t.Errorf("calls of a refused map: %s", got)
	}
	if got := fmt.Sprint(a.sys.dev.free); got != free || a.live != 0 {
		t.Errorf("addresses %s after refusals, %s before; live %d", got, free, a.live)
	}
	// NVLink peers UVM has no access for: enable, and map again.
	f.answer("UVM_MAP_EXTERNAL_ALLOCATION", statusInvalidDevice)
	f.calls = nil
	if _, err := a.MapPeer(m); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls, ","); got != "RM_DUP_OBJECT,UVM_CREATE_EXTERNAL_RANGE,UVM_MAP_EXTERNAL_ALLOCATION,UVM_ENABLE_PEER_ACCESS,UVM_MAP_EXTERNAL_ALLOCATION" {
		t.Errorf("calls of a map retried: %s", got)
	}
	// A fatal answer for the pair is no fault of this path's GPU.
	f.answer("UVM_MAP_EXTERNAL_ALLOCATION", StatusGPUIsLost)
	if _, err := a.MapPeer(m); !errors.Is(err, device.ErrNever) || isFault(err) || a.Check() != nil {
		t.Errorf("a lost peer: %v; check %v", err, a.Check())
	}
	if _, err := a.MapPeer(nil); !errors.Is(err, device.ErrNever) {
		t.Errorf("no memory: %v", err)
	}
	if _, err := a.MapPeer(&Memory{Kind: device.DeviceMemory, Data: "x"}); !errors.Is(err, device.ErrNever) {
		t.Errorf("memory of no path: %v", err)
	}
	a.stopped = true
	if _, err := a.MapPeer(m); !errors.Is(err, errStopped) {
		t.Errorf("after stop: %v", err)
	}
}

// TestMapPeerEndsPath closes path a while its MapPeer runs, and the RM
// refuses the duplicate: the view was the last memory Close waited for, so
// that MapPeer's end gives back the path's own objects, and MapPeer
// returns the RM's refusal to free them with its own.
func TestMapPeerEndsPath(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xbeef)
	a.rm = newRM(a.r, 580, nil)
	a.gpuState.devFD = -1 // the fake's files are no files
	f.on = map[string]func(){"RM_DUP_OBJECT": func() {
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}}
	f.answer("RM_DUP_OBJECT", StatusInsufficientResources)
	f.answer("RM_FREE", StatusInvalidArgument)
	_, err := a.MapPeer(m)
	if !a.released {
		t.Fatal("the path was not given back at the end of its last memory's MapPeer")
	}
	if !errors.Is(err, device.ErrNoRoom) || !strings.Contains(err.Error(), "NV_ERR_INVALID_ARGUMENT") {
		t.Errorf("a MapPeer whose end failed to give back the path: %v, want the duplicate's refusal and the free's", err)
	}
}

// TestMapPeerPinned maps Pinned memory of GPU 1 for GPU 0 as MapHost maps
// host pages, whatever the link.
func TestMapPeerPinned(t *testing.T) {
	f, a, b := peerRig(t, 0)
	host := uintptr(0x20_0000_1000)
	m := &Memory{Kind: device.PinnedMemory, Address: 0x10_0000_0000, Host: host, Size: 100, Handle: 0xb1,
		Data: &memRecord{va: 0x10_0000_0000, length: 4096, page: 4096, own: true, path: b}}
	v, err := a.MapPeer(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls, ","); got != "RM_ALLOC_MEMORY,UVM_CREATE_EXTERNAL_RANGE,UVM_MAP_EXTERNAL_ALLOCATION" {
		t.Errorf("calls: %s", got)
	}
	if v.Kind != device.PinnedMemory || !v.Borrowed || v.Host != host || v.Address != uint64(host) || f.maps[0].PerGPUAttributes[0].GPUUUID != a.uuid {
		t.Errorf("view %+v", v)
	}
	if err := a.Free(v); err != nil {
		t.Fatal(err)
	}
}

// TestOtherGPUFaultSparesPath gives back the state of GPU 1, whose RM
// answers that the GPU is lost: that is no fault of GPU 0's path, whose
// Check stays nil.
func TestOtherGPUFaultSparesPath(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	b.gpuState.devFD = -1 // the fake's files are no files
	f.answer("RM_FREE", StatusGPUIsLost)
	if err := a.sys.releaseGPU(b.gpuState); err == nil {
		t.Fatal("the free of a lost GPU's device passed")
	}
	if err := a.Check(); err != nil {
		t.Errorf("GPU 0's path after GPU 1's state went back lost: %v", err)
	}
}

// TestFreeOtherPath frees memory of path b through path a: a refuses it,
// and b's count of its memories and the memory stay as they were. A
// MapPeer of memory its path freed is refused without a call of the RM's.
func TestFreeOtherPath(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xb1)
	liveA, liveB := a.live, b.live
	if err := a.Free(m); err == nil || !strings.Contains(err.Error(), "did not give") {
		t.Fatalf("a Free of another path's memory answered %v", err)
	}
	if a.live != liveA || b.live != liveB || m.Data.(*memRecord).freed || len(f.frees) != 0 {
		t.Fatalf("after the refused Free: live %d and %d (were %d and %d), freed %v, %d frees of the RM's",
			a.live, b.live, liveA, liveB, m.Data.(*memRecord).freed, len(f.frees))
	}
	if err := b.Free(m); err != nil {
		t.Fatal(err)
	}
	calls := len(f.calls)
	if _, err := a.MapPeer(m); !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "freed") {
		t.Fatalf("a MapPeer of freed memory answered %v", err)
	}
	if len(f.calls) != calls {
		t.Fatalf("a MapPeer of freed memory called the RM: %v", f.calls[calls:])
	}
}

// statelessOK is a stateless fake of the RM and UVM: every call succeeds, an
// allocation is named 0xcaf00001, a duplicate 0xcaf00002, and the P2P
// capabilities are NVLink's. It keeps no state, so it adds no
// synchronisation of its own between the goroutines that call it.
func statelessOK(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	if fd == 43 {
		switch req {
		case uvmCreateExternalRange, uvmMapExternalAlloc, uvmFree, uvmRegisterChannel, uvmUnregisterChannel, uvmEnablePeerAccess:
			return 0
		}
		return syscall.ENOTTY
	}
	nr := req & 0xff
	switch nr {
	case escRMAlloc:
		a := (*rmAllocParams)(arg)
		if a.ObjectNew == 0 {
			a.ObjectNew = 0xcaf00001
		}
	case escRMFree, escRMAllocMemory:
	case escRMDupObject:
		(*rmDupObjectParams)(arg).Object = 0xcaf00002
	case escRMControl:
		c := (*rmControlParams)(arg)
		if c.Cmd == CtrlSystemGetP2PCapsV2 {
			q := (*P2PCapsV2Params)(unsafe.Pointer(&mem(c.Params, c.ParamsSize)[0]))
			q.P2PCaps = nvlinkCaps
		}
	case escExportToDMABufFD & 0xff:
		(*exportDMABufParams)(arg).FD = 1000
	default:
		return syscall.ENOTTY
	}
	return 0
}

// TestMapPeerBesideFree: a MapPeer of memory whose owner path frees it at
// the same time reads the memory's host view under the lock the owner's
// Free writes it under (the race detector sees it otherwise).
func TestMapPeerBesideFree(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	b.r.ioctl = statelessOK // b's calls meet no lock of a's fake
	b.u.conn = b.r.conn
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xbeef)
	done := make(chan error, 1)
	f.on = map[string]func(){"RM_DUP_OBJECT": func() {
		// b frees m while a's MapPeer, past its check of the freed mark,
		// duplicates the object; a continues a moment later.
		go func() { done <- b.Free(m) }()
		time.Sleep(200 * time.Millisecond)
	}}
	v, err := a.MapPeer(m)
	if ferr := <-done; ferr != nil {
		t.Errorf("b's Free: %v", ferr)
	}
	if err == nil {
		_ = a.Free(v)
	}
}

// TestMapPeerAfterFreeMark: a MapPeer that meets the freed mark while the
// owner's Free is still giving the memory back does not read the host view
// that Free clears outside the lock (the race detector sees it otherwise),
// and refuses the memory.
func TestMapPeerAfterFreeMark(t *testing.T) {
	f, a, b := peerRig(t, nvlinkCaps)
	m := peerVidmem(t, b, device.DeviceMemory, 4096, 0xbeef)
	done := make(chan error, 1)
	f.on = map[string]func(){"UVM_FREE": func() {
		// b's Free has marked m freed and goes on to clear its host view
		// once this returns; a's MapPeer runs meanwhile.
		go func() {
			_, err := a.MapPeer(m)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
	}}
	if err := b.Free(m); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, device.ErrNever) || !strings.Contains(err.Error(), "freed") {
		t.Fatalf("a MapPeer of memory being freed answered %v", err)
	}
}
