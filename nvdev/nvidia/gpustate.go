package nvidia

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// gpuState is what the paths of one GPU in a process share: the GPU's
// file, its RM device, subdevice and address space, their registration with
// UVM, and what the path read of the GPU. UVM takes one registration of a
// GPU and one address space for it in a process's UVM space, so a second
// path of the GPU, such as the next device's while the last one's memory
// awaits its free, must use the first's. The system keeps it while a path
// of the GPU holds it.
type gpuState struct {
	index int
	addr  PCIAddress
	minor uint32
	refs  int // paths that hold it; guarded by system.gpuLock

	devFD     int    // /dev/nvidia<minor>, registered with the control file
	device    Handle // NV01_DEVICE_0
	subdevice Handle // NV20_SUBDEVICE_0
	vaspace   Handle // FERMI_VASPACE_A, owned by UVM
	virtmem   Handle // NV01_MEMORY_VIRTUAL over the default space, with defaultMap
	uuid      UUID
	gpu       GPU
	budget    int64
	cache     int64
	bar1      int64

	uvmGPU, uvmVASpace bool // registered with UVM
}

// acquireGPU is the state of GPU index, made by its first path.
func (s *system) acquireGPU(index int, opts *Options) (*gpuState, error) {
	s.gpuLock.Lock()
	defer s.gpuLock.Unlock()
	if g := s.gpus[index]; g != nil {
		g.refs++
		return g, nil
	}
	g, err := s.openGPU(index, opts)
	if err != nil {
		return nil, err
	}
	g.refs = 1
	s.gpus[index] = g
	return g, nil
}

// releaseGPU drops a path's hold of g, and gives g back with the last.
func (s *system) releaseGPU(g *gpuState) error {
	s.gpuLock.Lock()
	defer s.gpuLock.Unlock()
	if g.refs--; g.refs > 0 {
		return nil
	}
	delete(s.gpus, g.index)
	return g.close(s)
}

// openGPU finds GPU index and makes its RM objects.
func (s *system) openGPU(index int, opts *Options) (_ *gpuState, err error) {
	g := &gpuState{index: index, devFD: -1}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.close(s))
		}
	}()
	var card cardInfo
	if gpus, lerr := ListGPUs(sysfsPCI); lerr == nil {
		if index >= len(gpus) {
			return nil, fmt.Errorf("nvidia: no GPU %d: the machine has %d NVIDIA GPUs", index, len(gpus))
		}
		g.addr = gpus[index]
		var ok bool
		if card, ok = s.card(g.addr); !ok {
			return nil, fmt.Errorf("nvidia: GPU %d (%s) is not held by NVIDIA's kernel driver", index, g.addr)
		}
	} else {
		// Without sysfs, number the driver's own GPUs in bus order.
		cards := slices.Clone(s.cards)
		slices.SortFunc(cards, func(a, b cardInfo) int { return cardAddr(a).compare(cardAddr(b)) })
		if index >= len(cards) {
			return nil, fmt.Errorf("nvidia: no GPU %d: the driver holds %d (%v)", index, len(cards), lerr)
		}
		card = cards[index]
		g.addr = cardAddr(card)
	}
	g.minor = card.MinorNumber
	r, u := s.gpuCalls()
	if g.devFD, err = g.openDevFD(r, s.ctl); err != nil {
		return nil, err
	}
	id := GPUIDInfoV2Params{GPUID: card.GPUID}
	if err = controlOf(r, s.client, CtrlGPUGetIDInfoV2, &id); err != nil {
		return nil, err
	}
	dp := DeviceAllocParams{DeviceID: id.DeviceInstance, ClientShare: s.client, VAMode: VAModeOptionalMultiple}
	if g.device, err = allocOf(r, s.client, ClassDevice, &dp); err != nil {
		return nil, err
	}
	var sp SubdeviceAllocParams
	if g.subdevice, err = allocOf(r, g.device, ClassSubdevice, &sp); err != nil {
		return nil, err
	}
	if err = g.readGPU(r); err != nil {
		return nil, err
	}
	if opts.defaultMap {
		vp := MemoryVirtualAllocParams{Limit: memVirtualLimitFullSpace}
		if g.virtmem, err = allocOf(r, g.device, ClassMemoryVirtual, &vp); err != nil {
			return nil, err
		}
	}
	// The address space of the device's channels, which UVM manages: the
	// GPU faults into UVM, and UVM maps what the path asks it to.
	vas := VASpaceAllocParams{
		VABase: 0x1000,
		VASize: 0x1fffffb000000,
		Flags:  VASpacePageFaulting | VASpaceExternallyOwned,
	}
	if g.vaspace, err = allocOf(r, g.device, ClassVASpace, &vas); err != nil {
		return nil, err
	}
	gid := GIDInfoParams{Flags: gidFormatBinary, Length: uint32(len(g.uuid))}
	if err = controlOf(r, g.subdevice, CtrlGPUGetGIDInfo, &gid); err != nil {
		return nil, err
	}
	copy(g.uuid[:], gid.Data[:])
	rg := uvmRegisterGPUParams{GPUUUID: g.uuid, RMCtrlFD: -1}
	if err = uvmCall(u, "UVM_REGISTER_GPU", uvmRegisterGPU, &rg, &rg.RMStatus); err != nil {
		return nil, err
	}
	g.uvmGPU = true
	rv := uvmRegisterGPUVASpaceParams{GPUUUID: g.uuid, RMCtrlFD: int32(s.ctl), Client: s.client, VASpace: g.vaspace}
	if err = uvmCall(u, "UVM_REGISTER_GPU_VASPACE", uvmRegisterGPUVASpace, &rv, &rv.RMStatus); err != nil {
		return nil, err
	}
	g.uvmVASpace = true
	return g, nil
}

// close gives back what openGPU made, as far as it went.
func (g *gpuState) close(s *system) error {
	r, u := s.gpuCalls()
	var errs []error
	if g.uvmVASpace {
		uv := uvmUnregisterGPUVASpaceParams{GPUUUID: g.uuid}
		errs = append(errs, uvmCall(u, "UVM_UNREGISTER_GPU_VASPACE", uvmUnregisterGPUVASpace, &uv, &uv.RMStatus))
		g.uvmVASpace = false
	}
	if g.uvmGPU {
		ug := uvmUnregisterGPUParams{GPUUUID: g.uuid}
		errs = append(errs, uvmCall(u, "UVM_UNREGISTER_GPU", uvmUnregisterGPU, &ug, &ug.RMStatus))
		g.uvmGPU = false
	}
	if g.device != 0 {
		// Freeing the device frees everything under it.
		errs = append(errs, r.free(s.client, g.device))
		g.device = 0
	}
	if g.devFD >= 0 {
		errs = append(errs, closeFD(g.devFD))
		g.devFD = -1
	}
	return errors.Join(errs...)
}

// gpuCalls is the system's RM and UVM calls with no fault sink, for the
// calls that make and give back one GPU's state: a fatal answer to them
// is that GPU's, and no fault of the paths of the process's other GPUs,
// whose Check reads the system's sink. openGPU and close return such an
// answer to their caller.
func (s *system) gpuCalls() (rm, uvm) {
	r := s.rm
	r.sink = nil
	return r, uvm{conn: r.conn, fd: s.uvm.fd}
}

// cardAddr is the bus address of a card.
func cardAddr(c cardInfo) PCIAddress {
	return PCIAddress{Domain: c.PCI.Domain, Bus: c.PCI.Bus, Slot: c.PCI.Slot, Function: c.PCI.Function}
}

// openDevFD opens /dev/nvidia<minor> and registers it with the control
// file ctl (NV_ESC_REGISTER_FD), as every file of a GPU that RM calls name
// must be.
func (g *gpuState) openDevFD(r rm, ctl int) (int, error) {
	fd, err := openDevice(fmt.Sprintf("/dev/nvidia%d", g.minor))
	if err != nil {
		return -1, err
	}
	rf := registerFDParams{CtlFD: int32(ctl)}
	err = r.invoke(func() string { return "NV_ESC_REGISTER_FD" }, fd,
		escape(escRegisterFD, unsafe.Sizeof(rf)), unsafe.Pointer(&rf), nil)
	if err != nil {
		_ = closeFD(fd)
		return -1, err
	}
	return fd, nil
}

// readGPU reads the GPU's classes, counts and memory.
func (g *gpuState) readGPU(r rm) error {
	var cl ClassListV2Params
	if err := controlOf(r, g.device, CtrlGPUGetClassListV2, &cl); err != nil {
		return err
	}
	classes := slices.Clone(cl.ClassList[:min(cl.NumClasses, classListMax)])
	gen, err := GenerationOf(classes)
	if err != nil {
		return err
	}
	idx := []uint32{GRInfoSMVersion, GRInfoLitterNumGPCs, GRInfoLitterTPCsPerGPC, GRInfoLitterSMsPerTPC, GRInfoMaxWarpsPerSM}
	list := heapBytes(len(idx) * int(unsafe.Sizeof(GRInfo{})))
	infos := unsafe.Slice((*GRInfo)(unsafe.Pointer(&list[0])), len(idx))
	for i, x := range idx {
		infos[i].Index = x
	}
	gr := GRInfoParams{GRInfoListSize: uint32(len(idx)), GRInfoList: addr(list)}
	if err := controlOf(r, g.subdevice, CtrlGRGetInfo, &gr); err != nil {
		return err
	}
	g.gpu = GPU{
		Generation: gen,
		SMVersion:  infos[0].Data,
		GPCs:       int(infos[1].Data),
		TPCsPerGPC: int(infos[2].Data),
		SMsPerTPC:  int(infos[3].Data),
		WarpsPerSM: int(infos[4].Data),
		Classes:    classes,
	}
	fb := FBInfoV2Params{FBInfoListSize: 3}
	fb.FBInfoList[0].Index = FBInfoHeapSize
	fb.FBInfoList[1].Index = FBInfoL2CacheSize
	fb.FBInfoList[2].Index = FBInfoBAR1AvailSize
	if err := controlOf(r, g.subdevice, CtrlFBGetInfoV2, &fb); err != nil {
		return err
	}
	g.budget = int64(fb.FBInfoList[0].Data) << 10
	g.cache = int64(fb.FBInfoList[1].Data)
	g.bar1 = int64(fb.FBInfoList[2].Data) << 10
	return nil
}
