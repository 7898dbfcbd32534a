package nvidia

import "structs"

// Classes the path and its devices allocate (class/cl*.h). The classes that
// differ between generations are in classes.go.
const (
	ClassRootClient         = 0x0041 // NV01_ROOT_CLIENT
	ClassDevice             = 0x0080 // NV01_DEVICE_0
	ClassSubdevice          = 0x2080 // NV20_SUBDEVICE_0
	ClassMemorySystem       = 0x003e // NV01_MEMORY_SYSTEM
	ClassMemoryLocalUser    = 0x0040 // NV01_MEMORY_LOCAL_USER
	ClassMemoryVirtual      = 0x0070 // NV01_MEMORY_VIRTUAL
	ClassMemoryOSDescriptor = 0x0071 // NV01_MEMORY_SYSTEM_OS_DESCRIPTOR
	ClassEventOSEvent       = 0x0079 // NV01_EVENT_OS_EVENT
	ClassMemoryVirtual50    = 0x50a0 // NV50_MEMORY_VIRTUAL
	ClassContextShare       = 0x9067 // FERMI_CONTEXT_SHARE_A
	ClassVASpace            = 0x90f1 // FERMI_VASPACE_A
	ClassChannelGroup       = 0xa06c // KEPLER_CHANNEL_GROUP_A
	ClassDebugger           = 0x83de // GT200_DEBUGGER
	ClassConfidentialComp   = 0xcb33 // NV_CONFIDENTIAL_COMPUTE
)

// Engine types (NV2080_ENGINE_TYPE_*, cl2080_notification.h).
const (
	EngineGraphics = 0x01 // NV2080_ENGINE_TYPE_GRAPHICS (GR0)
	EngineCopy0    = 0x09 // NV2080_ENGINE_TYPE_COPY0; COPYn is EngineCopy0 + n
)

// DeviceAllocParams mirrors NV0080_ALLOC_PARAMETERS (class/cl0080.h), the
// parameters of NV01_DEVICE_0.
type DeviceAllocParams struct {
	_               structs.HostLayout
	DeviceID        uint32 // the GPU's deviceInstance (NV0000_CTRL_GPU_GET_ID_INFO_V2)
	ClientShare     Handle // hClientShare
	TargetClient    Handle // hTargetClient
	TargetDevice    Handle // hTargetDevice
	Flags           uint32
	_               [4]byte
	VASpaceSize     uint64
	VAStartInternal uint64
	VALimitInternal uint64
	VAMode          uint32 // NV_DEVICE_ALLOCATION_VAMODE_*
	_               [4]byte
}

// VA modes of a device (NV_DEVICE_ALLOCATION_VAMODE_*, nvos.h).
const (
	VAModeOptionalMultiple = 0 // NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES
	VAModeSingle           = 1 // NV_DEVICE_ALLOCATION_VAMODE_SINGLE_VASPACE
	VAModeMultiple         = 2 // NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES
)

// SubdeviceAllocParams mirrors NV2080_ALLOC_PARAMETERS (class/cl2080.h).
type SubdeviceAllocParams struct {
	_           structs.HostLayout
	SubDeviceID uint32
}

// MemoryVirtualAllocParams mirrors NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS
// (class/cl0070.h), the parameters of NV01_MEMORY_VIRTUAL.
type MemoryVirtualAllocParams struct {
	_       structs.HostLayout
	Offset  uint64
	Limit   uint64
	VASpace Handle // hVASpace: 0 for the device's default space
	_       [4]byte
}

// MemoryAllocParams mirrors NV_MEMORY_ALLOCATION_PARAMS (nvos.h), 128
// bytes: the parameters of NV01_MEMORY_LOCAL_USER and NV01_MEMORY_SYSTEM.
type MemoryAllocParams struct {
	_             structs.HostLayout
	Owner         uint32
	Type          uint32 // NVOS32_TYPE_*
	Flags         uint32 // NVOS32_ALLOC_FLAGS_*
	Width         uint32
	Height        uint32
	Pitch         int32
	Attr          uint32 // NVOS32_ATTR_*
	Attr2         uint32 // NVOS32_ATTR2_*
	Format        uint32
	ComprCovg     uint32
	ZcullCovg     uint32
	_             [4]byte
	RangeLo       uint64
	RangeHi       uint64
	Size          uint64
	Alignment     uint64
	Offset        uint64
	Limit         uint64
	Address       uint64 // P64
	CtagOffset    uint32
	VASpace       Handle // hVASpace
	InternalFlags uint32
	Tag           uint32
	NumaNode      int32
	_             [4]byte
}

// NV_MEMORY_ALLOCATION_PARAMS fields (nvos.h).
const (
	memTypeImage    = 0  // NVOS32_TYPE_IMAGE
	memTypeNotifier = 13 // NVOS32_TYPE_NOTIFIER

	memFlagIgnoreBankPlacement = 0x00000001 // NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT
	memFlagAlignmentForce      = 0x00000100 // NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE
	memFlagHandleProvided      = 0x00004000 // NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED
	memFlagMapNotRequired      = 0x00008000 // NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED
	memFlagPersistentVidmem    = 0x00010000 // NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM
	memFlagVirtual             = 0x00080000 // NVOS32_ALLOC_FLAGS_VIRTUAL

	attrPageSizeShift     = 23 // NVOS32_ATTR_PAGE_SIZE 24:23
	attrPageSize4KB       = 1
	attrPageSizeHuge      = 3
	attrLocationShift     = 25 // NVOS32_ATTR_LOCATION 26:25
	attrLocationVidmem    = 0
	attrLocationPCI       = 1
	attrPhysicalityShift  = 27 // NVOS32_ATTR_PHYSICALITY 28:27
	attrContiguous        = 2
	attrAllowNoncontig    = 3
	attrCoherencyShift    = 29 // NVOS32_ATTR_COHERENCY 31:29
	attrCoherencyUncached = 0
	attrCoherencyCached   = 1

	attr2ZBCPreferNoZBC      = 1 // NVOS32_ATTR2_ZBC 1:0
	attr2GPUCacheableShift   = 2 // NVOS32_ATTR2_GPU_CACHEABLE 3:2
	attr2GPUCacheableYes     = 1
	attr2GPUCacheableNo      = 2
	attr2PageSizeHugeShift   = 20 // NVOS32_ATTR2_PAGE_SIZE_HUGE 21:20
	attr2PageSizeHuge2MB     = 1
	memFormatGenericKind     = 6 // the PTE kind of generic memory, as tinygrad and libcuda pass it
	memHugePageThreshold     = 8 << 20
	memHugePage              = 2 << 20
	memSmallPage             = 4 << 10
	memVirtualLimitFullSpace = 0x1ffffffffffff
)

// NVOS02_FLAGS (nvos.h): RM_ALLOC_MEMORY of host pages.
const (
	os02PhysicalityShift  = 4 // NVOS02_FLAGS_PHYSICALITY 7:4
	os02Noncontiguous     = 1
	os02CoherencyShift    = 12 // NVOS02_FLAGS_COHERENCY 15:12
	os02CoherencyCached   = 1
	os02MappingShift      = 30 // NVOS02_FLAGS_MAPPING 31:30
	os02MappingNoMap      = 1
	os02HostPagesCachedGP = os02Noncontiguous<<os02PhysicalityShift |
		os02CoherencyCached<<os02CoherencyShift |
		os02MappingNoMap<<os02MappingShift
)

// NVOS46_FLAGS (nvos.h): RM_MAP_MEMORY_DMA.
const (
	os46CacheSnoopShift     = 4 // NVOS46_FLAGS_CACHE_SNOOP 4:4
	os46PageSizeShift       = 8 // NVOS46_FLAGS_PAGE_SIZE 11:8
	os46PageSize4KB         = 1
	os46DMAOffsetFixedShift = 15 // NVOS46_FLAGS_DMA_OFFSET_FIXED 15:15
)

// VASpaceAllocParams mirrors NV_VASPACE_ALLOCATION_PARAMETERS (nvos.h), 56
// bytes on release 580, which added pasid: the parameters of
// FERMI_VASPACE_A.
type VASpaceAllocParams struct {
	_               structs.HostLayout
	Index           uint32
	Flags           uint32 // NV_VASPACE_ALLOCATION_FLAGS_*
	VASize          uint64
	VAStartInternal uint64
	VALimitInternal uint64
	BigPageSize     uint32
	_               [4]byte
	VABase          uint64
	PASID           uint32
	_               [4]byte
}

// NV_VASPACE_ALLOCATION_FLAGS (nvos.h).
const (
	VASpaceExternallyOwned = 1 << 3 // NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED
	VASpacePageFaulting    = 1 << 6 // NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING
)

// CtxShareAllocParams mirrors NV_CTXSHARE_ALLOCATION_PARAMETERS (nvos.h),
// the parameters of FERMI_CONTEXT_SHARE_A.
type CtxShareAllocParams struct {
	_        structs.HostLayout
	VASpace  Handle // hVASpace
	Flags    uint32 // NV_CTXSHARE_ALLOCATION_FLAGS_*
	SubctxID uint32
}

// CtxShareAsync is NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC.
const CtxShareAsync = 1

// ChannelGroupAllocParams mirrors NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS
// (nvos.h), the parameters of KEPLER_CHANNEL_GROUP_A.
type ChannelGroupAllocParams struct {
	_                          structs.HostLayout
	ObjectError                Handle // hObjectError
	ObjectEccError             Handle // hObjectEccError
	VASpace                    Handle // hVASpace
	EngineType                 uint32 // NV2080_ENGINE_TYPE_*
	IsCallingContextVgpuPlugin uint8  // bIsCallingContextVgpuPlugin
	_                          [3]byte
}

// MemoryDescParams mirrors NV_MEMORY_DESC_PARAMS (alloc/alloc_channel.h).
type MemoryDescParams struct {
	_            structs.HostLayout
	Base         uint64
	Size         uint64
	AddressSpace uint32
	CacheAttrib  uint32
}

// ChannelRunqueueOne is NVOS04_FLAGS_GROUP_CHANNEL_RUNQUEUE_ONE
// (alloc/alloc_channel.h, bit 4 of ChannelAllocParams.Flags): the channel
// of a group runs on the second runqueue of the group's runlist, the
// runlist's second PBDMA, where channels of the default runqueue share the
// first. Channels on different runqueues of a group feed their engines at
// once; GR's copy engines run on either.
const ChannelRunqueueOne = 1 << 4

// maxSubdevices is NV_MAX_SUBDEVICES (nvlimits.h).
const maxSubdevices = 8

// ChannelAllocParams mirrors NV_CHANNEL_ALLOC_PARAMS
// (alloc/alloc_channel.h), 368 bytes on release 580: the parameters of a
// GPFIFO channel class such as HOPPER_CHANNEL_GPFIFO_A.
type ChannelAllocParams struct {
	_                   structs.HostLayout
	ObjectError         Handle // hObjectError: the error notifier's memory
	ObjectBuffer        Handle // hObjectBuffer
	GPFIFOOffset        uint64 // gpFifoOffset: the ring's GPU address
	GPFIFOEntries       uint32
	Flags               uint32 // NVOS04_FLAGS_*
	ContextShare        Handle // hContextShare
	VASpace             Handle // hVASpace: 0 for a channel of a group
	UserdMemory         [maxSubdevices]Handle
	UserdOffset         [maxSubdevices]uint64
	EngineType          uint32
	CID                 uint32
	SubDeviceID         uint32
	ObjectEccError      Handle
	InstanceMem         MemoryDescParams
	UserdMem            MemoryDescParams
	RamfcMem            MemoryDescParams
	MthdbufMem          MemoryDescParams
	PhysChannelGroup    Handle
	InternalFlags       uint32
	ErrorNotifierMem    MemoryDescParams
	EccErrorNotifierMem MemoryDescParams
	ProcessID           uint32
	SubProcessID        uint32
	EncryptIV           [3]uint32 // CC_CHAN_ALLOC_IV_SIZE_DWORD
	DecryptIV           [3]uint32
	HMACNonce           [8]uint32 // CC_CHAN_ALLOC_NONCE_SIZE_DWORD
	TPCConfigID         uint32
	_                   [4]byte
}

// HopperUsermodeAllocParams mirrors NV_HOPPER_USERMODE_A_PARAMS (nvos.h).
type HopperUsermodeAllocParams struct {
	_           structs.HostLayout
	Bar1Mapping uint8 // bBar1Mapping: map through BAR1 rather than BAR0
	Priv        uint8 // bPriv
}

// GRAllocParams mirrors NV_GR_ALLOCATION_PARAMETERS (nvos.h), the optional
// parameters of a compute class.
type GRAllocParams struct {
	_       structs.HostLayout
	Version uint32
	Flags   uint32
	Size    uint32
	Caps    uint32
}

// CopyAllocParams mirrors NVB0B5_ALLOCATION_PARAMETERS (class/clb0b5sw.h),
// the optional parameters of a copy class.
type CopyAllocParams struct {
	_          structs.HostLayout
	Version    uint32
	EngineType uint32
}

// DebuggerAllocParams mirrors NV83DE_ALLOC_PARAMETERS (class/cl83de.h),
// the parameters of GT200_DEBUGGER.
type DebuggerAllocParams struct {
	_                      structs.HostLayout
	DebuggerClientObsolete Handle // hDebuggerClient_Obsolete
	AppClient              Handle // hAppClient
	Class3DObject          Handle // hClass3dObject: the compute object
}
