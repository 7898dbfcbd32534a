package nvidia

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

// VA modes of a device (NV_DEVICE_ALLOCATION_VAMODE_*, nvos.h).
const (
	VAModeOptionalMultiple = 0 // NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES
	VAModeSingle           = 1 // NV_DEVICE_ALLOCATION_VAMODE_SINGLE_VASPACE
	VAModeMultiple         = 2 // NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES
)

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

// NV_VASPACE_ALLOCATION_FLAGS (nvos.h).
const (
	VASpaceExternallyOwned = 1 << 3 // NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED
	VASpacePageFaulting    = 1 << 6 // NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING
)

// CtxShareAsync is NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC.
const CtxShareAsync = 1

// ChannelRunqueueOne is NVOS04_FLAGS_GROUP_CHANNEL_RUNQUEUE_ONE
// (alloc/alloc_channel.h, bit 4 of ChannelAllocParams.Flags): the channel
// of a group runs on the second runqueue of the group's runlist, the
// runlist's second PBDMA, where channels of the default runqueue share the
// first. Channels on different runqueues of a group feed their engines at
// once; GR's copy engines run on either.
const ChannelRunqueueOne = 1 << 4
