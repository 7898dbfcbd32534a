package nvidia

import (
	"testing"
	"unsafe"
)

// The sizes of the C structs of release 580 on x86-64, as gcc lays them out
// from the 580 headers (open-gpu-kernel-modules, branch 580).
func TestSizes580(t *testing.T) {
	for _, c := range []struct {
		c    string
		got  uintptr
		want uintptr
	}{
		{"NVOS00_PARAMETERS", unsafe.Sizeof(rmFreeParams{}), 16},
		{"NVOS02_PARAMETERS", unsafe.Sizeof(rmAllocMemoryParams{}), 48},
		{"nv_ioctl_nvos02_parameters_with_fd", unsafe.Sizeof(rmAllocMemoryWithFD{}), 56},
		{"NVOS21_PARAMETERS", unsafe.Sizeof(rmAllocParams21{}), 32},
		{"NVOS33_PARAMETERS", unsafe.Sizeof(rmMapMemoryParams{}), 48},
		{"nv_ioctl_nvos33_parameters_with_fd", unsafe.Sizeof(rmMapMemoryWithFD{}), 56},
		{"NVOS34_PARAMETERS", unsafe.Sizeof(rmUnmapMemoryParams{}), 32},
		{"NVOS46_PARAMETERS", unsafe.Sizeof(rmMapMemoryDMAParams{}), 64},
		{"NVOS47_PARAMETERS", unsafe.Sizeof(rmUnmapMemoryDMAParams{}), 48},
		{"NVOS54_PARAMETERS", unsafe.Sizeof(rmControlParams{}), 32},
		{"NVOS64_PARAMETERS", unsafe.Sizeof(rmAllocParams{}), 48},
		{"nv_pci_info_t", unsafe.Sizeof(pciInfo{}), 12},
		{"nv_ioctl_card_info_t", unsafe.Sizeof(cardInfo{}), 72},
		{"nv_ioctl_register_fd_t", unsafe.Sizeof(registerFDParams{}), 4},
		{"nv_ioctl_wait_open_complete_t", unsafe.Sizeof(waitOpenCompleteParams{}), 8},
		{"nv_ioctl_rm_api_version_t", unsafe.Sizeof(rmAPIVersionParams{}), 72},
		{"nv_ioctl_alloc_os_event_t", unsafe.Sizeof(allocOSEventParams{}), 16},
		{"NV0005_ALLOC_PARAMETERS", unsafe.Sizeof(EventAllocParams{}), 24},
		{"nv_ioctl_export_to_dma_buf_fd_t", unsafe.Sizeof(exportDMABufParams{}), 2608},

		{"NV0080_ALLOC_PARAMETERS", unsafe.Sizeof(DeviceAllocParams{}), 56},
		{"NV2080_ALLOC_PARAMETERS", unsafe.Sizeof(SubdeviceAllocParams{}), 4},
		{"NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS", unsafe.Sizeof(MemoryVirtualAllocParams{}), 24},
		{"NV_MEMORY_ALLOCATION_PARAMS", unsafe.Sizeof(MemoryAllocParams{}), 128},
		{"NV_VASPACE_ALLOCATION_PARAMETERS", unsafe.Sizeof(VASpaceAllocParams{}), 56},
		{"NV_CTXSHARE_ALLOCATION_PARAMETERS", unsafe.Sizeof(CtxShareAllocParams{}), 12},
		{"NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS", unsafe.Sizeof(ChannelGroupAllocParams{}), 20},
		{"NV_MEMORY_DESC_PARAMS", unsafe.Sizeof(MemoryDescParams{}), 24},
		{"NV_CHANNEL_ALLOC_PARAMS", unsafe.Sizeof(ChannelAllocParams{}), 368},
		{"NV_HOPPER_USERMODE_A_PARAMS", unsafe.Sizeof(HopperUsermodeAllocParams{}), 2},
		{"NV_GR_ALLOCATION_PARAMETERS", unsafe.Sizeof(GRAllocParams{}), 16},
		{"NVB0B5_ALLOCATION_PARAMETERS", unsafe.Sizeof(CopyAllocParams{}), 8},
		{"NV83DE_ALLOC_PARAMETERS", unsafe.Sizeof(DebuggerAllocParams{}), 12},

		{"NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS", unsafe.Sizeof(BuildVersionV2Params{}), 1032},
		{"NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", unsafe.Sizeof(GPUIDInfoV2Params{}), 32},
		{"NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS", unsafe.Sizeof(ClassListParams{}), 16},
		{"NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS", unsafe.Sizeof(ClassListV2Params{}), 804},
		{"NV2080_CTRL_GR_INFO", unsafe.Sizeof(GRInfo{}), 8},
		{"NV2080_CTRL_GR_ROUTE_INFO", unsafe.Sizeof(GRRouteInfo{}), 16},
		{"NV2080_CTRL_GR_GET_INFO_PARAMS", unsafe.Sizeof(GRInfoParams{}), 32},
		{"NV2080_CTRL_GPU_GET_GID_INFO_PARAMS", unsafe.Sizeof(GIDInfoParams{}), 268},
		{"NV2080_CTRL_PERF_BOOST_PARAMS", unsafe.Sizeof(PerfBoostParams{}), 8},
		{"NV2080_CTRL_FB_INFO", unsafe.Sizeof(FBInfo{}), 8},
		{"NV2080_CTRL_FB_GET_INFO_V2_PARAMS", unsafe.Sizeof(FBInfoV2Params{}), 1028},
		{"NV2080_CTRL_TIMER_GET_TIME_PARAMS", unsafe.Sizeof(TimerGetTimeParams{}), 8},
		{"NV2080_CTRL_TIMER_GPU_CPU_TIME_SAMPLE", unsafe.Sizeof(TimerSample{}), 16},
		{"NV2080_CTRL_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO_PARAMS", unsafe.Sizeof(TimerCorrelationParams{}), 264},
		{"NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS", unsafe.Sizeof(WorkSubmitTokenParams{}), 4},
		{"NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS", unsafe.Sizeof(ScheduleParams{}), 3},
		{"NVA06F_CTRL_BIND_PARAMS", unsafe.Sizeof(BindParams{}), 4},
		{"NV83DE_SM_ERROR_STATE_REGISTERS", unsafe.Sizeof(SMErrorStateRegisters{}), 48},
		{"NV83DE_MMU_FAULT_INFO", unsafe.Sizeof(MMUFaultInfo{}), 8},
		{"NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS", unsafe.Sizeof(SMErrorStatesParams{}), 4824},
		{"NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY", unsafe.Sizeof(MMUFaultInfoEntry{}), 16},
		{"NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS", unsafe.Sizeof(MMUFaultInfoParams{}), 72},

		{"UVM_INITIALIZE_PARAMS", unsafe.Sizeof(uvmInitializeParams{}), 16},
		{"UVM_MM_INITIALIZE_PARAMS", unsafe.Sizeof(uvmMMInitializeParams{}), 8},
		{"UVM_REGISTER_GPU_PARAMS", unsafe.Sizeof(uvmRegisterGPUParams{}), 40},
		{"UVM_UNREGISTER_GPU_PARAMS", unsafe.Sizeof(uvmUnregisterGPUParams{}), 20},
		{"UVM_REGISTER_GPU_VASPACE_PARAMS", unsafe.Sizeof(uvmRegisterGPUVASpaceParams{}), 32},
		{"UVM_UNREGISTER_GPU_VASPACE_PARAMS", unsafe.Sizeof(uvmUnregisterGPUVASpaceParams{}), 20},
		{"UVM_REGISTER_CHANNEL_PARAMS", unsafe.Sizeof(uvmRegisterChannelParams{}), 56},
		{"UVM_UNREGISTER_CHANNEL_PARAMS", unsafe.Sizeof(uvmUnregisterChannelParams{}), 28},
		{"UVM_CREATE_EXTERNAL_RANGE_PARAMS", unsafe.Sizeof(uvmCreateExternalRangeParams{}), 24},
		{"UvmGpuMappingAttributes", unsafe.Sizeof(uvmGPUMappingAttributes{}), 36},
		{"UVM_MAP_EXTERNAL_ALLOCATION_PARAMS", unsafe.Sizeof(uvmMapExternalAllocationParams{}), 9264},
		{"UVM_FREE_PARAMS", unsafe.Sizeof(uvmFreeParams{}), 24},
		{"UVM_UNMAP_EXTERNAL_PARAMS", unsafe.Sizeof(uvmUnmapExternalParams{}), 40},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.c, c.got, c.want)
		}
	}
}

// Offsets of the fields the brief and the RM's changes between releases
// single out, against gcc's offsetof on the 580 headers.
func TestOffsets580(t *testing.T) {
	var os46 rmMapMemoryDMAParams
	var os64 rmAllocParams
	var card cardInfo
	var dev DeviceAllocParams
	var mem MemoryAllocParams
	var vas VASpaceAllocParams
	var ch ChannelAllocParams
	var bv BuildVersionV2Params
	var sm SMErrorStatesParams
	var me uvmMapExternalAllocationParams
	var rg uvmRegisterGPUParams
	var rc uvmRegisterChannelParams
	var a2 rmAllocMemoryWithFD
	var m33 rmMapMemoryWithFD
	var dmabuf exportDMABufParams
	for _, c := range []struct {
		c    string
		got  uintptr
		want uintptr
	}{
		{"NVOS46_PARAMETERS.flags2", unsafe.Offsetof(os46.Flags2), 36},
		{"NVOS46_PARAMETERS.kindOverride", unsafe.Offsetof(os46.KindOverride), 40},
		{"NVOS46_PARAMETERS.dmaOffset", unsafe.Offsetof(os46.DMAOffset), 48},
		{"NVOS46_PARAMETERS.status", unsafe.Offsetof(os46.Status), 56},
		{"NVOS64_PARAMETERS.paramsSize", unsafe.Offsetof(os64.ParamsSize), 32},
		{"NVOS64_PARAMETERS.status", unsafe.Offsetof(os64.Status), 40},
		{"nv_ioctl_card_info_t.pci_info", unsafe.Offsetof(card.PCI), 4},
		{"nv_ioctl_card_info_t.gpu_id", unsafe.Offsetof(card.GPUID), 16},
		{"nv_ioctl_card_info_t.reg_address", unsafe.Offsetof(card.RegAddress), 24},
		{"nv_ioctl_card_info_t.minor_number", unsafe.Offsetof(card.MinorNumber), 56},
		{"nv_ioctl_card_info_t.dev_name", unsafe.Offsetof(card.DevName), 60},
		{"nv_ioctl_nvos02_parameters_with_fd.fd", unsafe.Offsetof(a2.FD), 48},
		{"nv_ioctl_nvos33_parameters_with_fd.fd", unsafe.Offsetof(m33.FD), 48},
		{"NV0080_ALLOC_PARAMETERS.vaSpaceSize", unsafe.Offsetof(dev.VASpaceSize), 24},
		{"NV0080_ALLOC_PARAMETERS.vaMode", unsafe.Offsetof(dev.VAMode), 48},
		{"NV_MEMORY_ALLOCATION_PARAMS.rangeLo", unsafe.Offsetof(mem.RangeLo), 48},
		{"NV_MEMORY_ALLOCATION_PARAMS.address", unsafe.Offsetof(mem.Address), 96},
		{"NV_MEMORY_ALLOCATION_PARAMS.ctagOffset", unsafe.Offsetof(mem.CtagOffset), 104},
		{"NV_MEMORY_ALLOCATION_PARAMS.numaNode", unsafe.Offsetof(mem.NumaNode), 120},
		{"NV_VASPACE_ALLOCATION_PARAMETERS.vaSize", unsafe.Offsetof(vas.VASize), 8},
		{"NV_VASPACE_ALLOCATION_PARAMETERS.bigPageSize", unsafe.Offsetof(vas.BigPageSize), 32},
		{"NV_VASPACE_ALLOCATION_PARAMETERS.vaBase", unsafe.Offsetof(vas.VABase), 40},
		{"NV_VASPACE_ALLOCATION_PARAMETERS.pasid", unsafe.Offsetof(vas.PASID), 48},
		{"NV_CHANNEL_ALLOC_PARAMS.gpFifoOffset", unsafe.Offsetof(ch.GPFIFOOffset), 8},
		{"NV_CHANNEL_ALLOC_PARAMS.hUserdMemory", unsafe.Offsetof(ch.UserdMemory), 32},
		{"NV_CHANNEL_ALLOC_PARAMS.userdOffset", unsafe.Offsetof(ch.UserdOffset), 64},
		{"NV_CHANNEL_ALLOC_PARAMS.engineType", unsafe.Offsetof(ch.EngineType), 128},
		{"NV_CHANNEL_ALLOC_PARAMS.hObjectEccError", unsafe.Offsetof(ch.ObjectEccError), 140},
		{"NV_CHANNEL_ALLOC_PARAMS.instanceMem", unsafe.Offsetof(ch.InstanceMem), 144},
		{"NV_CHANNEL_ALLOC_PARAMS.hPhysChannelGroup", unsafe.Offsetof(ch.PhysChannelGroup), 240},
		{"NV_CHANNEL_ALLOC_PARAMS.errorNotifierMem", unsafe.Offsetof(ch.ErrorNotifierMem), 248},
		{"NV_CHANNEL_ALLOC_PARAMS.ProcessID", unsafe.Offsetof(ch.ProcessID), 296},
		{"NV_CHANNEL_ALLOC_PARAMS.encryptIv", unsafe.Offsetof(ch.EncryptIV), 304},
		{"NV_CHANNEL_ALLOC_PARAMS.decryptIv", unsafe.Offsetof(ch.DecryptIV), 316},
		{"NV_CHANNEL_ALLOC_PARAMS.hmacNonce", unsafe.Offsetof(ch.HMACNonce), 328},
		{"NV_CHANNEL_ALLOC_PARAMS.tpcConfigID", unsafe.Offsetof(ch.TPCConfigID), 360},
		{"NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS.versionBuffer", unsafe.Offsetof(bv.Version), 256},
		{"NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS.titleBuffer", unsafe.Offsetof(bv.Title), 768},
		{"NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS.changelistNumber", unsafe.Offsetof(bv.Changelist), 1024},
		{"NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS.numSMsToRead", unsafe.Offsetof(sm.NumSMsToRead), 4},
		{"NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS.smErrorStateArray", unsafe.Offsetof(sm.SMErrorStates), 8},
		{"NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS.mmuFault", unsafe.Offsetof(sm.MMUFault), 4812},
		{"NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS.startingSM", unsafe.Offsetof(sm.StartingSM), 4820},
		{"UVM_MAP_EXTERNAL_ALLOCATION_PARAMS.perGpuAttributes", unsafe.Offsetof(me.PerGPUAttributes), 24},
		{"UVM_MAP_EXTERNAL_ALLOCATION_PARAMS.gpuAttributesCount", unsafe.Offsetof(me.GPUAttributesCount), 9240},
		{"UVM_MAP_EXTERNAL_ALLOCATION_PARAMS.rmCtrlFd", unsafe.Offsetof(me.RMCtrlFD), 9248},
		{"UVM_MAP_EXTERNAL_ALLOCATION_PARAMS.rmStatus", unsafe.Offsetof(me.RMStatus), 9260},
		{"UVM_REGISTER_GPU_PARAMS.rmCtrlFd", unsafe.Offsetof(rg.RMCtrlFD), 24},
		{"UVM_REGISTER_GPU_PARAMS.rmStatus", unsafe.Offsetof(rg.RMStatus), 36},
		{"UVM_REGISTER_CHANNEL_PARAMS.base", unsafe.Offsetof(rc.Base), 32},
		{"UVM_REGISTER_CHANNEL_PARAMS.rmStatus", unsafe.Offsetof(rc.RMStatus), 48},
		{"nv_ioctl_export_to_dma_buf_fd_t.fd", unsafe.Offsetof(dmabuf.FD), 0},
		{"nv_ioctl_export_to_dma_buf_fd_t.hClient", unsafe.Offsetof(dmabuf.Client), 4},
		{"nv_ioctl_export_to_dma_buf_fd_t.totalObjects", unsafe.Offsetof(dmabuf.TotalObjects), 8},
		{"nv_ioctl_export_to_dma_buf_fd_t.numObjects", unsafe.Offsetof(dmabuf.NumObjects), 12},
		{"nv_ioctl_export_to_dma_buf_fd_t.index", unsafe.Offsetof(dmabuf.Index), 16},
		{"nv_ioctl_export_to_dma_buf_fd_t.totalSize", unsafe.Offsetof(dmabuf.TotalSize), 24},
		{"nv_ioctl_export_to_dma_buf_fd_t.mappingType", unsafe.Offsetof(dmabuf.MappingType), 32},
		{"nv_ioctl_export_to_dma_buf_fd_t.bAllowMmap", unsafe.Offsetof(dmabuf.AllowMmap), 33},
		{"nv_ioctl_export_to_dma_buf_fd_t.handles", unsafe.Offsetof(dmabuf.Handles), 36},
		{"nv_ioctl_export_to_dma_buf_fd_t.offsets", unsafe.Offsetof(dmabuf.Offsets), 552},
		{"nv_ioctl_export_to_dma_buf_fd_t.sizes", unsafe.Offsetof(dmabuf.Sizes), 1576},
		{"nv_ioctl_export_to_dma_buf_fd_t.status", unsafe.Offsetof(dmabuf.Status), 2600},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.c, c.got, c.want)
		}
	}
}
