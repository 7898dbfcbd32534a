package nvidia

// RM control commands (ctrl/ctrl*.h), release 580; their parameters are in
// zz_rm_generated.go. A control's parameter size must match the RM's
// exactly, else the RM returns NV_ERR_INVALID_PARAM_STRUCT.
const (
	CtrlSystemGetBuildVersionV2 = 0x0000013e // NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2
	CtrlGPUGetIDInfoV2          = 0x00000205 // NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2
	CtrlGPUGetClassList         = 0x00800201 // NV0080_CTRL_CMD_GPU_GET_CLASSLIST
	CtrlGPUGetClassListV2       = 0x00800292 // NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2
	CtrlGPUGetGIDInfo           = 0x2080014a // NV2080_CTRL_CMD_GPU_GET_GID_INFO
	CtrlPerfBoost               = 0x2080200a // NV2080_CTRL_CMD_PERF_BOOST
	CtrlGRGetInfo               = 0x20801201 // NV2080_CTRL_CMD_GR_GET_INFO
	CtrlFBGetInfoV2             = 0x20801303 // NV2080_CTRL_CMD_FB_GET_INFO_V2
	CtrlTimerGetTime            = 0x20800403 // NV2080_CTRL_CMD_TIMER_GET_TIME
	CtrlTimerGetGPUCPUTimeCorr  = 0x20800406 // NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO
	CtrlGetWorkSubmitToken      = 0xc36f0108 // NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN
	CtrlChannelGroupSchedule    = 0xa06c0101 // NVA06C_CTRL_CMD_GPFIFO_SCHEDULE
	CtrlChannelSchedule         = 0xa06f0103 // NVA06F_CTRL_CMD_GPFIFO_SCHEDULE
	CtrlChannelBind             = 0xa06f0104 // NVA06F_CTRL_CMD_BIND
	CtrlDebugReadAllSMErrors    = 0x83de030c // NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES
	CtrlDebugReadMMUFaultInfo   = 0x83de0328 // NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO
)

// GR info indices (NV2080_CTRL_GR_INFO_INDEX_* = NV0080_CTRL_GR_INFO_INDEX_*,
// ctrl/ctrl0080/ctrl0080gr.h).
const (
	GRInfoSMVersion         = 0x0c // NV2080_CTRL_GR_INFO_INDEX_SM_VERSION
	GRInfoMaxWarpsPerSM     = 0x0d // NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM
	GRInfoMaxThreadsPerWarp = 0x0e // NV2080_CTRL_GR_INFO_INDEX_MAX_THREADS_PER_WARP
	GRInfoLitterNumGPCs     = 0x14 // NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS
	GRInfoLitterTPCsPerGPC  = 0x17 // NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC
	GRInfoLitterSMsPerTPC   = 0x20 // NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC
	GRInfoShaderPipeCount   = 0x07 // NV2080_CTRL_GR_INFO_INDEX_SHADER_PIPE_COUNT
)

// gidFormatBinary is NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY (the
// flags' FORMAT field, 1:0): the 16 bytes of the GPU's UUID.
const gidFormatBinary = 0x2

// NV2080_CTRL_PERF_BOOST_FLAGS (ctrl/ctrl2080/ctrl2080perf.h).
const (
	PerfBoostToMax        = 0x2    // _CMD 1:0 = _CMD_BOOST_TO_MAX
	PerfBoostCUDA         = 1 << 4 // _CUDA 4:4 = _YES
	PerfBoostCUDAPriority = 1 << 6 // _CUDA_PRIORITY 6:6 = _HIGH
	// PerfBoostInfinite is NV2080_CTRL_PERF_BOOST_DURATION_INFINITE.
	PerfBoostInfinite = 0xffffffff
)

// FB info indices (NV2080_CTRL_FB_INFO_INDEX_*).
const (
	FBInfoBAR1Size      = 0x05 // BAR1_SIZE, KiB
	FBInfoTotalRAMSize  = 0x08 // TOTAL_RAM_SIZE, KiB
	FBInfoHeapSize      = 0x09 // HEAP_SIZE, KiB: what user allocations may take
	FBInfoHeapFree      = 0x16 // HEAP_FREE, KiB
	FBInfoL2CacheSize   = 0x1b // L2CACHE_SIZE, bytes
	FBInfoBAR1AvailSize = 0x1d // BAR1_AVAIL_SIZE, KiB
)

// TimerClockPlatformAPI is NV2080_TIMER_GPU_CPU_TIME_CPU_CLK_ID_PLATFORM_API
// on PROCESSOR_CPU: the kernel reads the timer's registers between reads of
// its raw monotonic clock (CLOCK_MONOTONIC_RAW) and returns one sample.
const TimerClockPlatformAPI = 0x3
