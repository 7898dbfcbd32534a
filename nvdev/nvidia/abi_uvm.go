package nvidia

import "structs"

// The parameters of the UVM ioctls on /dev/nvidia-uvm, release 580
// (kernel-open/nvidia-uvm/uvm_ioctl.h and uvm_linux_ioctl.h). Each ends in
// the RM status the UVM driver answers.

// UUID is a GPU's UUID (NvProcessorUuid), as NV2080_CTRL_CMD_GPU_GET_GID_INFO
// answers it in binary form.
type UUID [16]byte

// uvmMaxGPUs is UVM_MAX_GPUS (uvm_types.h): NV_MAX_DEVICES times
// UVM_PARENT_ID_MAX_SUB_PROCESSORS.
const uvmMaxGPUs = 32 * 8

// uvmInitializeParams mirrors UVM_INITIALIZE_PARAMS (uvm_linux_ioctl.h).
type uvmInitializeParams struct {
	_        structs.HostLayout
	Flags    uint64
	RMStatus uint32
	_        [4]byte
}

// uvmMMInitializeParams mirrors UVM_MM_INITIALIZE_PARAMS (uvm_ioctl.h).
type uvmMMInitializeParams struct {
	_        structs.HostLayout
	UVMFD    int32
	RMStatus uint32
}

// uvmRegisterGPUParams mirrors UVM_REGISTER_GPU_PARAMS (uvm_ioctl.h).
type uvmRegisterGPUParams struct {
	_           structs.HostLayout
	GPUUUID     UUID
	NumaEnabled uint8
	_           [3]byte
	NumaNodeID  int32
	RMCtrlFD    int32 // -1: UVM opens its own client
	Client      Handle
	SmcPartRef  Handle
	RMStatus    uint32
}

// uvmUnregisterGPUParams mirrors UVM_UNREGISTER_GPU_PARAMS (uvm_ioctl.h).
type uvmUnregisterGPUParams struct {
	_        structs.HostLayout
	GPUUUID  UUID
	RMStatus uint32
}

// uvmRegisterGPUVASpaceParams mirrors UVM_REGISTER_GPU_VASPACE_PARAMS
// (uvm_ioctl.h).
type uvmRegisterGPUVASpaceParams struct {
	_        structs.HostLayout
	GPUUUID  UUID
	RMCtrlFD int32
	Client   Handle
	VASpace  Handle
	RMStatus uint32
}

// uvmUnregisterGPUVASpaceParams mirrors UVM_UNREGISTER_GPU_VASPACE_PARAMS
// (uvm_ioctl.h).
type uvmUnregisterGPUVASpaceParams struct {
	_        structs.HostLayout
	GPUUUID  UUID
	RMStatus uint32
}

// uvmRegisterChannelParams mirrors UVM_REGISTER_CHANNEL_PARAMS (uvm_ioctl.h).
type uvmRegisterChannelParams struct {
	_        structs.HostLayout
	GPUUUID  UUID
	RMCtrlFD int32
	Client   Handle
	Channel  Handle
	_        [4]byte
	Base     uint64 // the GPU addresses UVM maps the channel's buffers at
	Length   uint64
	RMStatus uint32
	_        [4]byte
}

// uvmUnregisterChannelParams mirrors UVM_UNREGISTER_CHANNEL_PARAMS
// (uvm_ioctl.h).
type uvmUnregisterChannelParams struct {
	_        structs.HostLayout
	GPUUUID  UUID
	Client   Handle
	Channel  Handle
	RMStatus uint32
}

// uvmCreateExternalRangeParams mirrors UVM_CREATE_EXTERNAL_RANGE_PARAMS
// (uvm_ioctl.h).
type uvmCreateExternalRangeParams struct {
	_        structs.HostLayout
	Base     uint64
	Length   uint64
	RMStatus uint32
	_        [4]byte
}

// uvmGPUMappingAttributes mirrors UvmGpuMappingAttributes (uvm_types.h).
type uvmGPUMappingAttributes struct {
	_               structs.HostLayout
	GPUUUID         UUID
	MappingType     uint32 // UvmGpuMappingType
	CachingType     uint32 // UvmGpuCachingType
	FormatType      uint32
	ElementBits     uint32
	CompressionType uint32
}

// UvmGpuMappingType and UvmGpuCachingType values (uvm_types.h).
const (
	uvmMappingReadWriteAtomic = 1 // UvmGpuMappingTypeReadWriteAtomic
	uvmCachingDefault         = 0 // UvmGpuCachingTypeDefault
)

// uvmMapExternalAllocationParams mirrors UVM_MAP_EXTERNAL_ALLOCATION_PARAMS
// (uvm_ioctl.h), 9264 bytes.
type uvmMapExternalAllocationParams struct {
	_                  structs.HostLayout
	Base               uint64
	Length             uint64
	Offset             uint64
	PerGPUAttributes   [uvmMaxGPUs]uvmGPUMappingAttributes
	GPUAttributesCount uint64
	RMCtrlFD           int32
	Client             Handle
	Memory             Handle
	RMStatus           uint32
}

// uvmFreeParams mirrors UVM_FREE_PARAMS (uvm_ioctl.h), 24 bytes on 580;
// release 590 removes length.
type uvmFreeParams struct {
	_        structs.HostLayout
	Base     uint64
	Length   uint64
	RMStatus uint32
	_        [4]byte
}

// uvmUnmapExternalParams mirrors UVM_UNMAP_EXTERNAL_PARAMS (uvm_ioctl.h).
type uvmUnmapExternalParams struct {
	_        structs.HostLayout
	Base     uint64
	Length   uint64
	GPUUUID  UUID
	RMStatus uint32
	_        [4]byte
}
