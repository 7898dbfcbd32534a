package nvidia

import "structs"

// RM control commands (ctrl/ctrl*.h) and their parameters, release 580. A
// control's parameter size must match the RM's exactly, else it answers
// NV_ERR_INVALID_PARAM_STRUCT.
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

// BuildVersionV2Params mirrors NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS
// (ctrl/ctrl0000/ctrl0000system.h).
type BuildVersionV2Params struct {
	_                  structs.HostLayout
	DriverVersion      [256]byte // driverVersionBuffer, such as "580.159.04"
	Version            [256]byte // versionBuffer
	DriverBranch       [256]byte
	Title              [256]byte // titleBuffer
	Changelist         uint32
	OfficialChangelist uint32
}

// GPUIDInfoV2Params mirrors NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS
// (ctrl/ctrl0000/ctrl0000gpu.h).
type GPUIDInfoV2Params struct {
	_                 structs.HostLayout
	GPUID             uint32 // in: the card's gpu_id
	GPUFlags          uint32
	DeviceInstance    uint32 // the deviceId NV01_DEVICE_0 takes
	SubDeviceInstance uint32
	SLIStatus         uint32
	BoardID           uint32
	GPUInstance       uint32
	NumaID            int32
}

// ClassListParams mirrors NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS
// (ctrl/ctrl0080/ctrl0080gpu.h): a count, then a list at a user address.
type ClassListParams struct {
	_          structs.HostLayout
	NumClasses uint32
	_          [4]byte
	ClassList  uint64 // P64 to NumClasses uint32s
}

// classListMax is NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE.
const classListMax = 200

// ClassListV2Params mirrors NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS
// (ctrl/ctrl0080/ctrl0080gpu.h): the list in line.
type ClassListV2Params struct {
	_          structs.HostLayout
	NumClasses uint32
	ClassList  [classListMax]uint32
}

// GRInfo mirrors NV2080_CTRL_GR_INFO (ctrl/ctrl2080/ctrl2080gr.h).
type GRInfo struct {
	_     structs.HostLayout
	Index uint32 // NV2080_CTRL_GR_INFO_INDEX_*
	Data  uint32
}

// GRRouteInfo mirrors NV2080_CTRL_GR_ROUTE_INFO (= NV0080_CTRL_GR_ROUTE_INFO,
// ctrl/ctrl0080/ctrl0080gr.h).
type GRRouteInfo struct {
	_     structs.HostLayout
	Flags uint32
	_     [4]byte
	Route uint64
}

// GRInfoParams mirrors NV2080_CTRL_GR_GET_INFO_PARAMS
// (ctrl/ctrl2080/ctrl2080gr.h).
type GRInfoParams struct {
	_              structs.HostLayout
	GRInfoListSize uint32
	_              [4]byte
	GRInfoList     uint64 // P64 to GRInfoListSize GRInfos
	GRRouteInfo    GRRouteInfo
}

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

// gidMaxLength is NV2080_GPU_MAX_GID_LENGTH.
const gidMaxLength = 256

// GIDInfoParams mirrors NV2080_CTRL_GPU_GET_GID_INFO_PARAMS
// (ctrl/ctrl2080/ctrl2080gpu.h).
type GIDInfoParams struct {
	_      structs.HostLayout
	Index  uint32
	Flags  uint32 // NV2080_GPU_CMD_GPU_GET_GID_FLAGS_*
	Length uint32
	Data   [gidMaxLength]byte
}

// gidFormatBinary is NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY (the
// flags' FORMAT field, 1:0): the 16 bytes of the GPU's UUID.
const gidFormatBinary = 0x2

// PerfBoostParams mirrors NV2080_CTRL_PERF_BOOST_PARAMS
// (ctrl/ctrl2080/ctrl2080perf.h).
type PerfBoostParams struct {
	_        structs.HostLayout
	Flags    uint32 // NV2080_CTRL_PERF_BOOST_FLAGS_*
	Duration uint32 // seconds, or PerfBoostInfinite
}

// NV2080_CTRL_PERF_BOOST_FLAGS (ctrl/ctrl2080/ctrl2080perf.h).
const (
	PerfBoostToMax        = 0x2    // _CMD 1:0 = _CMD_BOOST_TO_MAX
	PerfBoostCUDA         = 1 << 4 // _CUDA 4:4 = _YES
	PerfBoostCUDAPriority = 1 << 6 // _CUDA_PRIORITY 6:6 = _HIGH
	// PerfBoostInfinite is NV2080_CTRL_PERF_BOOST_DURATION_INFINITE.
	PerfBoostInfinite = 0xffffffff
)

// FBInfo mirrors NV2080_CTRL_FB_INFO (ctrl/ctrl2080/ctrl2080fb.h).
type FBInfo struct {
	_     structs.HostLayout
	Index uint32 // NV2080_CTRL_FB_INFO_INDEX_*
	Data  uint32
}

// fbInfoMax is NV2080_CTRL_FB_INFO_MAX_LIST_SIZE.
const fbInfoMax = 128

// FBInfoV2Params mirrors NV2080_CTRL_FB_GET_INFO_V2_PARAMS
// (ctrl/ctrl2080/ctrl2080fb.h).
type FBInfoV2Params struct {
	_              structs.HostLayout
	FBInfoListSize uint32
	FBInfoList     [fbInfoMax]FBInfo
}

// FB info indices (NV2080_CTRL_FB_INFO_INDEX_*).
const (
	FBInfoBAR1Size      = 0x05 // BAR1_SIZE, KiB
	FBInfoTotalRAMSize  = 0x08 // TOTAL_RAM_SIZE, KiB
	FBInfoHeapSize      = 0x09 // HEAP_SIZE, KiB: what user allocations may take
	FBInfoHeapFree      = 0x16 // HEAP_FREE, KiB
	FBInfoL2CacheSize   = 0x1b // L2CACHE_SIZE, bytes
	FBInfoBAR1AvailSize = 0x1d // BAR1_AVAIL_SIZE, KiB
)

// TimerGetTimeParams mirrors NV2080_CTRL_TIMER_GET_TIME_PARAMS
// (ctrl/ctrl2080/ctrl2080tmr.h).
type TimerGetTimeParams struct {
	_        structs.HostLayout
	TimeNsec uint64
}

// TimerSample mirrors NV2080_CTRL_TIMER_GPU_CPU_TIME_SAMPLE
// (ctrl/ctrl2080/ctrl2080tmr.h).
type TimerSample struct {
	_       structs.HostLayout
	CPUTime uint64
	GPUTime uint64
}

// timerMaxSamples is NV2080_CTRL_TIMER_GPU_CPU_TIME_MAX_SAMPLES.
const timerMaxSamples = 16

// TimerCorrelationParams mirrors
// NV2080_CTRL_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO_PARAMS
// (ctrl/ctrl2080/ctrl2080tmr.h).
type TimerCorrelationParams struct {
	_           structs.HostLayout
	CPUClkID    uint8 // NV2080_TIMER_GPU_CPU_TIME_CPU_CLK_ID_*
	SampleCount uint8
	_           [6]byte
	Samples     [timerMaxSamples]TimerSample
}

// TimerClockPlatformAPI is NV2080_TIMER_GPU_CPU_TIME_CPU_CLK_ID_PLATFORM_API
// on PROCESSOR_CPU: the kernel reads the timer's registers between reads of
// its raw monotonic clock (CLOCK_MONOTONIC_RAW) and answers one sample.
const TimerClockPlatformAPI = 0x3

// WorkSubmitTokenParams mirrors
// NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS (ctrl/ctrlc36f.h).
type WorkSubmitTokenParams struct {
	_               structs.HostLayout
	WorkSubmitToken uint32
}

// ScheduleParams mirrors NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS (=
// NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS, ctrl/ctrla06f/ctrla06fgpfifo.h).
type ScheduleParams struct {
	_          structs.HostLayout
	Enable     uint8 // bEnable
	SkipSubmit uint8 // bSkipSubmit
	SkipEnable uint8 // bSkipEnable
}

// BindParams mirrors NVA06F_CTRL_BIND_PARAMS
// (ctrl/ctrla06f/ctrla06fgpfifo.h), for a channel outside a group.
type BindParams struct {
	_          structs.HostLayout
	EngineType uint32
}

// SMErrorStateRegisters mirrors NV83DE_SM_ERROR_STATE_REGISTERS
// (ctrl/ctrl83de/ctrl83dedebug.h).
type SMErrorStateRegisters struct {
	_                      structs.HostLayout
	HwwGlobalEsr           uint32
	HwwWarpEsr             uint32
	HwwWarpEsrPC           uint32
	HwwGlobalEsrReportMask uint32
	HwwWarpEsrReportMask   uint32
	_                      [4]byte
	HwwEsrAddr             uint64
	HwwWarpEsrPC64         uint64
	HwwCgaEsr              uint32
	HwwCgaEsrReportMask    uint32
}

// MaxSMsPerCall is NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL.
const MaxSMsPerCall = 100

// MMUFaultInfo mirrors NV83DE_MMU_FAULT_INFO (ctrl/ctrl83de/ctrl83dedebug.h).
type MMUFaultInfo struct {
	_         structs.HostLayout
	Valid     uint8
	_         [3]byte
	FaultInfo uint32
}

// SMErrorStatesParams mirrors
// NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS
// (ctrl/ctrl83de/ctrl83dedebug.h), 4824 bytes.
type SMErrorStatesParams struct {
	_              structs.HostLayout
	TargetChannel  Handle // hTargetChannel
	NumSMsToRead   uint32
	SMErrorStates  [MaxSMsPerCall]SMErrorStateRegisters
	MMUFaultInfoV1 uint32 // mmuFaultInfo, deprecated in favour of MMUFault
	MMUFault       MMUFaultInfo
	StartingSM     uint32
}

// MMUFaultInfoEntry mirrors NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY
// (ctrl/ctrl83de/ctrl83dedebug.h).
type MMUFaultInfoEntry struct {
	_            structs.HostLayout
	FaultAddress uint64
	FaultType    uint32
	AccessType   uint32
}

// MaxMMUFaultEntries is NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_MAX_ENTRIES.
const MaxMMUFaultEntries = 4

// MMUFaultInfoParams mirrors NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS
// (ctrl/ctrl83de/ctrl83dedebug.h).
type MMUFaultInfoParams struct {
	_       structs.HostLayout
	Entries [MaxMMUFaultEntries]MMUFaultInfoEntry
	Count   uint32
	_       [4]byte
}
