package main

// The table: which C struct of the headers becomes which Go type of
// package nvidia, under which names. A C member the table does not name
// gets goName's spelling and its type's Go spelling (scalars, layout.go);
// the doc texts are the package's own.

// supportedRelease is the driver release the package speaks to.
const supportedRelease = "580"

// macroHeaders are read for the macros and types the table's headers use.
var macroHeaders = []string{"nvlimits.h", "ctrl/ctrlxxxx.h", "ctrl/ctrl0080/ctrl0080gr.h"}

// statusHeader holds the NV_STATUS_CODE lines.
const statusHeader = "nvstatuscodes.h"

// structSpec maps one C struct to a Go type.
type structSpec struct {
	Go     string      // the Go type's name
	C      string      // the C typedef (or "struct tag")
	Header string      // the header, relative to its include directory
	Size   int         // the size the package expects, checked where not 0
	Doc    string      // the Go doc after its first sentence
	Fields []fieldSpec // members whose Go name, type or comment the table sets
}

// fieldSpec sets one member's Go name, type and line comment.
type fieldSpec struct {
	C    string // the C member's name
	Go   string // the Go field's name, or "" for goName's
	Type string // the Go element type, or "" for the C type's
	Doc  string // a line comment
}

func (s *structSpec) field(c string) (fieldSpec, bool) {
	for _, f := range s.Fields {
		if f.C == c {
			return f, true
		}
	}
	return fieldSpec{}, false
}

// constSpec is a Go constant whose value is a macro's.
type constSpec struct {
	Go     string
	Macro  string
	Header string
	Want   int64 // the value the package expects, checked where not 0
	Doc    string
}

// statusSpec is a Go constant for one NV_STATUS value.
type statusSpec struct{ Go, C string }

func f(c, goName string) fieldSpec { return fieldSpec{C: c, Go: goName} }

func fd(c, goName, doc string) fieldSpec { return fieldSpec{C: c, Go: goName, Doc: doc} }

func ft(c, goName, typ, doc string) fieldSpec {
	return fieldSpec{C: c, Go: goName, Type: typ, Doc: doc}
}

var constTable = []constSpec{
	{Go: "maxDevices", Macro: "NV_MAX_DEVICES", Header: "nvlimits.h", Want: 32},
	{Go: "maxSubdevices", Macro: "NV_MAX_SUBDEVICES", Header: "nvlimits.h", Want: 8},
	{Go: "classListMax", Macro: "NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE", Header: "ctrl/ctrl0080/ctrl0080gpu.h", Want: 200},
	{Go: "gidMaxLength", Macro: "NV2080_GPU_MAX_GID_LENGTH", Header: "ctrl/ctrl2080/ctrl2080gpu.h", Want: 256},
	{Go: "fbInfoMax", Macro: "NV2080_CTRL_FB_INFO_MAX_LIST_SIZE", Header: "ctrl/ctrl2080/ctrl2080fb.h", Want: 128},
	{Go: "timerMaxSamples", Macro: "NV2080_CTRL_TIMER_GPU_CPU_TIME_MAX_SAMPLES", Header: "ctrl/ctrl2080/ctrl2080tmr.h", Want: 16},
	{Go: "MaxSMsPerCall", Macro: "NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Want: 100},
	{Go: "MaxMMUFaultEntries", Macro: "NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_MAX_ENTRIES", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Want: 4},
	{Go: "p2pMaxGPUs", Macro: "NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS", Header: "ctrl/ctrl0000/ctrl0000system.h", Want: 32},
	{Go: "p2pMaxGPUPairs", Macro: "NV0000_CTRL_SYSTEM_MAX_ATTACHED_GPUS_SQUARED", Header: "ctrl/ctrl0000/ctrl0000system.h", Want: 1024},
	{Go: "p2pCapsIndexes", Macro: "NV0000_CTRL_P2P_CAPS_INDEX_TABLE_SIZE", Header: "ctrl/ctrl0000/ctrl0000system.h", Want: 9},
	{Go: "uvmMaxGPUs", Macro: "UVM_MAX_GPUS", Header: "uvm_types.h", Want: 256,
		Doc: "It is NV_MAX_DEVICES times UVM_PARENT_ID_MAX_SUB_PROCESSORS."},
	{Go: "dmabufMaxHandles", Macro: "NV_DMABUF_EXPORT_MAX_HANDLES", Header: "nv-ioctl.h", Want: 128,
		Doc: "One NV_ESC_EXPORT_TO_DMABUF_FD call names at most that many memory objects."},
}

var statusTable = []statusSpec{
	{"StatusOK", "NV_OK"},
	{"StatusGPUIsLost", "NV_ERR_GPU_IS_LOST"},
	{"StatusGPUInFullchipReset", "NV_ERR_GPU_IN_FULLCHIP_RESET"},
	{"StatusInsufficientResources", "NV_ERR_INSUFFICIENT_RESOURCES"},
	{"StatusInvalidArgument", "NV_ERR_INVALID_ARGUMENT"},
	{"StatusInvalidObjectHandle", "NV_ERR_INVALID_OBJECT_HANDLE"},
	{"StatusInvalidObjectParent", "NV_ERR_INVALID_OBJECT_PARENT"},
	{"StatusInvalidParamStruct", "NV_ERR_INVALID_PARAM_STRUCT"},
	{"StatusNoMemory", "NV_ERR_NO_MEMORY"},
	{"StatusNotSupported", "NV_ERR_NOT_SUPPORTED"},
	{"StatusRCError", "NV_ERR_RC_ERROR"},
	{"StatusResetRequired", "NV_ERR_RESET_REQUIRED"},
	{"StatusGPUNotFullPower", "NV_ERR_GPU_NOT_FULL_POWER"},
	{"StatusGPUInDebugMode", "NV_ERR_GPU_IN_DEBUG_MODE"},
	{"StatusObjectNotFound", "NV_ERR_OBJECT_NOT_FOUND"},
	{"StatusInsufficientPerms", "NV_ERR_INSUFFICIENT_PERMISSIONS"},
	{"statusInvalidDevice", "NV_ERR_INVALID_DEVICE"},
}

// The escapes' own blocks and the wrappers around them.
var frameStructs = []*structSpec{
	{Go: "rmFreeParams", C: "NVOS00_PARAMETERS", Header: "nvos.h", Size: 16,
		Doc: "It is NV_ESC_RM_FREE's block.",
		Fields: []fieldSpec{
			fd("hRoot", "Root", "hRoot: the client"),
			fd("hObjectParent", "ObjectParent", "hObjectParent"),
			fd("hObjectOld", "ObjectOld", "hObjectOld: the object to free, with its children"),
		}},
	{Go: "rmAllocMemoryParams", C: "NVOS02_PARAMETERS", Header: "nvos.h", Size: 48,
		Fields: []fieldSpec{
			fd("hRoot", "Root", "hRoot"),
			fd("hObjectParent", "ObjectParent", "hObjectParent"),
			fd("hObjectNew", "ObjectNew", "hObjectNew: the caller names the new object"),
			fd("hClass", "Class", "hClass"),
			fd("flags", "Flags", "NVOS02_FLAGS_*"),
			fd("pMemory", "Memory", "pMemory: the host address of the memory described"),
			fd("limit", "Limit", "limit: size - 1"),
		}},
	{Go: "rmAllocMemoryWithFD", C: "nv_ioctl_nvos02_parameters_with_fd", Header: "nv-unix-nvos-params-wrappers.h", Size: 56,
		Doc: "It is NV_ESC_RM_ALLOC_MEMORY's block."},
	{Go: "rmAllocParams21", C: "NVOS21_PARAMETERS", Header: "nvos.h", Size: 32,
		Doc: "It is the short form of NV_ESC_RM_ALLOC's block. The path sends the long form (rmAllocParams).",
		Fields: []fieldSpec{
			f("hClass", "Class"),
			fd("pAllocParms", "AllocParms", "pAllocParms"),
		}},
	{Go: "rmAllocParams", C: "NVOS64_PARAMETERS", Header: "nvos.h", Size: 48,
		Doc: "It is the long form of NV_ESC_RM_ALLOC's block, as libcuda sends it.",
		Fields: []fieldSpec{
			fd("hRoot", "Root", "hRoot: the client (0 to make a client)"),
			fd("hObjectParent", "ObjectParent", "hObjectParent"),
			fd("hObjectNew", "ObjectNew", "hObjectNew: 0 lets the RM name the object"),
			fd("hClass", "Class", "hClass"),
			fd("pAllocParms", "AllocParms", "pAllocParms: the class's parameters"),
			fd("pRightsRequested", "RightsRequested", "pRightsRequested: RS_ACCESS_MASK, or 0"),
		}},
	{Go: "rmControlParams", C: "NVOS54_PARAMETERS", Header: "nvos.h", Size: 32,
		Doc: "It is NV_ESC_RM_CONTROL's block.",
		Fields: []fieldSpec{
			fd("hClient", "Client", "hClient"),
			fd("hObject", "Object", "hObject"),
			fd("params", "Params", "params"),
			fd("paramsSize", "ParamsSize", "must equal the command's parameter size"),
		}},
	{Go: "rmMapMemoryParams", C: "NVOS33_PARAMETERS", Header: "nvos.h", Size: 48,
		Fields: []fieldSpec{
			fd("pLinearAddress", "LinearAddress", "pLinearAddress: the RM's cookie for the mapping"),
			fd("flags", "Flags", "NVOS33_FLAGS_*"),
		}},
	{Go: "rmMapMemoryWithFD", C: "nv_ioctl_nvos33_parameters_with_fd", Header: "nv-unix-nvos-params-wrappers.h", Size: 56,
		Doc: "It is NV_ESC_RM_MAP_MEMORY's block: FD is the /dev/nvidia<minor> file that the mapping's mmap goes through."},
	{Go: "rmUnmapMemoryParams", C: "NVOS34_PARAMETERS", Header: "nvos.h", Size: 32},
	{Go: "rmMapMemoryDMAParams", C: "NVOS46_PARAMETERS", Header: "nvos.h", Size: 64,
		Doc: "Release 580 added flags2 and kindOverride.",
		Fields: []fieldSpec{
			fd("hDma", "DMA", "hDma: the virtual memory object to map into"),
			fd("flags", "Flags", "NVOS46_FLAGS_*"),
			fd("dmaOffset", "DMAOffset", "in with DMA_OFFSET_FIXED, out otherwise"),
		}},
	{Go: "rmUnmapMemoryDMAParams", C: "NVOS47_PARAMETERS", Header: "nvos.h", Size: 48,
		Fields: []fieldSpec{f("hDma", "DMA")}},
	{Go: "pciInfo", C: "nv_pci_info_t", Header: "nv-ioctl.h", Size: 12},
	{Go: "cardInfo", C: "nv_ioctl_card_info_t", Header: "nv-ioctl.h", Size: 72,
		Doc: "NV_ESC_CARD_INFO fills an array of them, one for each GPU the driver holds.",
		Fields: []fieldSpec{
			f("pci_info", "PCI"),
			f("gpu_id", "GPUID"),
			f("interrupt_line", "InterruptLine"),
			f("reg_address", "RegAddress"),
			f("reg_size", "RegSize"),
			f("fb_address", "FBAddress"),
			f("fb_size", "FBSize"),
			f("minor_number", "MinorNumber"),
			f("dev_name", "DevName"),
		}},
	{Go: "registerFDParams", C: "nv_ioctl_register_fd_t", Header: "nv-ioctl.h", Size: 4,
		Fields: []fieldSpec{f("ctl_fd", "CtlFD")}},
	{Go: "waitOpenCompleteParams", C: "nv_ioctl_wait_open_complete_t", Header: "nv-ioctl.h", Size: 8,
		Fields: []fieldSpec{f("rc", "RC"), f("adapterStatus", "AdapterStatus")}},
	{Go: "rmAPIVersionParams", C: "nv_ioctl_rm_api_version_t", Header: "nv-ioctl.h", Size: 72,
		Doc:    "It is NV_ESC_CHECK_VERSION_STR's block. The path does not send it.",
		Fields: []fieldSpec{f("cmd", "Cmd"), f("reply", "Reply"), f("versionString", "VersionString")}},
	{Go: "allocOSEventParams", C: "nv_ioctl_alloc_os_event_t", Header: "nv-ioctl.h", Size: 16,
		Doc: "nv_ioctl_free_os_event_t has the same layout."},
	{Go: "exportDMABufParams", C: "nv_ioctl_export_to_dma_buf_fd_t", Header: "nv-ioctl.h", Size: 2608,
		Doc: "It is NV_ESC_EXPORT_TO_DMABUF_FD's block. The call makes one dma-buf of TotalSize bytes from TotalObjects pieces, each Sizes[i] bytes of the memory object Handles[i] from Offsets[i]; a call with FD -1 makes the dma-buf and places NumObjects pieces from Index, and later calls with its FD place the rest.",
		Fields: []fieldSpec{
			fd("fd", "FD", "fd: -1 to make the dma-buf; its descriptor on return"),
			fd("hClient", "Client", "hClient: the client of the handles"),
			fd("totalObjects", "TotalObjects", "totalObjects: the pieces of the dma-buf"),
			fd("numObjects", "NumObjects", "numObjects: the pieces this call places"),
			fd("index", "Index", "index: the first piece this call places"),
			fd("totalSize", "TotalSize", "totalSize: the dma-buf's bytes, the sum of all Sizes"),
			fd("mappingType", "MappingType", "mappingType: NV_DMABUF_EXPORT_MAPPING_TYPE_*"),
			fd("bAllowMmap", "AllowMmap", "bAllowMmap: NV_TRUE only where the GPU has no FB of its own"),
			fd("handles", "Handles", "handles: the memory objects"),
			fd("offsets", "Offsets", "offsets: host-page aligned"),
			fd("sizes", "Sizes", "sizes: whole host pages"),
		}},
	{Go: "EventAllocParams", C: "NV0005_ALLOC_PARAMETERS", Header: "class/cl0005.h", Size: 24,
		Doc: "It holds the parameters of an event object (NV01_EVENT_OS_EVENT and its kin).",
		Fields: []fieldSpec{
			fd("hParentClient", "ParentClient", "hParentClient: 0 for the allocating client"),
			fd("hSrcResource", "SrcResource", "hSrcResource: the object whose notifier fires it"),
			fd("hClass", "Class", "hClass: the event's class again"),
			fd("notifyIndex", "NotifyIndex", "index 15:0, subdevice 23:16, NV01_EVENT_* flags"),
			fd("data", "Data", "for NV01_EVENT_OS_EVENT, the OS event's file number"),
		}},
}

// The parameters of the classes the path allocates.
var allocStructs = []*structSpec{
	{Go: "DeviceAllocParams", C: "NV0080_ALLOC_PARAMETERS", Header: "class/cl0080.h", Size: 56,
		Doc: "It holds the parameters of NV01_DEVICE_0.",
		Fields: []fieldSpec{
			fd("deviceId", "DeviceID", "the GPU's deviceInstance (NV0000_CTRL_GPU_GET_ID_INFO_V2)"),
			fd("hClientShare", "ClientShare", "hClientShare"),
			fd("hTargetClient", "TargetClient", "hTargetClient"),
			fd("hTargetDevice", "TargetDevice", "hTargetDevice"),
			f("vaSpaceSize", "VASpaceSize"),
			f("vaStartInternal", "VAStartInternal"),
			f("vaLimitInternal", "VALimitInternal"),
			fd("vaMode", "VAMode", "NV_DEVICE_ALLOCATION_VAMODE_*"),
		}},
	{Go: "SubdeviceAllocParams", C: "NV2080_ALLOC_PARAMETERS", Header: "class/cl2080.h", Size: 4},
	{Go: "MemoryVirtualAllocParams", C: "NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS", Header: "class/cl0070.h", Size: 24,
		Doc:    "It holds the parameters of NV01_MEMORY_VIRTUAL.",
		Fields: []fieldSpec{fd("hVASpace", "VASpace", "hVASpace: 0 for the device's default space")}},
	{Go: "MemoryAllocParams", C: "NV_MEMORY_ALLOCATION_PARAMS", Header: "nvos.h", Size: 128,
		Doc: "It holds the parameters of NV01_MEMORY_LOCAL_USER and NV01_MEMORY_SYSTEM.",
		Fields: []fieldSpec{
			fd("type", "Type", "NVOS32_TYPE_*"),
			fd("flags", "Flags", "NVOS32_ALLOC_FLAGS_*"),
			fd("attr", "Attr", "NVOS32_ATTR_*"),
			fd("attr2", "Attr2", "NVOS32_ATTR2_*"),
			f("comprCovg", "ComprCovg"),
			f("zcullCovg", "ZcullCovg"),
			fd("address", "Address", "P64"),
			fd("hVASpace", "VASpace", "hVASpace"),
			f("internalflags", "InternalFlags"),
		}},
	{Go: "VASpaceAllocParams", C: "NV_VASPACE_ALLOCATION_PARAMETERS", Header: "nvos.h", Size: 56,
		Doc: "It holds the parameters of FERMI_VASPACE_A; release 580 added pasid.",
		Fields: []fieldSpec{
			fd("flags", "Flags", "NV_VASPACE_ALLOCATION_FLAGS_*"),
			f("vaSize", "VASize"),
			f("vaStartInternal", "VAStartInternal"),
			f("vaLimitInternal", "VALimitInternal"),
			f("vaBase", "VABase"),
		}},
	{Go: "CtxShareAllocParams", C: "NV_CTXSHARE_ALLOCATION_PARAMETERS", Header: "nvos.h", Size: 12,
		Doc: "It holds the parameters of FERMI_CONTEXT_SHARE_A.",
		Fields: []fieldSpec{
			fd("hVASpace", "VASpace", "hVASpace"),
			fd("flags", "Flags", "NV_CTXSHARE_ALLOCATION_FLAGS_*"),
			f("subctxId", "SubctxID"),
		}},
	{Go: "ChannelGroupAllocParams", C: "NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS", Header: "nvos.h", Size: 20,
		Doc: "It holds the parameters of KEPLER_CHANNEL_GROUP_A.",
		Fields: []fieldSpec{
			fd("hObjectError", "ObjectError", "hObjectError"),
			fd("hObjectEccError", "ObjectEccError", "hObjectEccError"),
			fd("hVASpace", "VASpace", "hVASpace"),
			fd("engineType", "EngineType", "NV2080_ENGINE_TYPE_*"),
			fd("bIsCallingContextVgpuPlugin", "IsCallingContextVgpuPlugin", "bIsCallingContextVgpuPlugin"),
		}},
	{Go: "MemoryDescParams", C: "NV_MEMORY_DESC_PARAMS", Header: "alloc/alloc_channel.h", Size: 24},
	{Go: "ChannelAllocParams", C: "NV_CHANNEL_ALLOC_PARAMS", Header: "alloc/alloc_channel.h", Size: 368,
		Doc: "It holds the parameters of a GPFIFO channel class such as HOPPER_CHANNEL_GPFIFO_A.",
		Fields: []fieldSpec{
			fd("hObjectError", "ObjectError", "hObjectError: the error notifier's memory"),
			fd("hObjectBuffer", "ObjectBuffer", "hObjectBuffer"),
			fd("gpFifoOffset", "GPFIFOOffset", "gpFifoOffset: the ring's GPU address"),
			f("gpFifoEntries", "GPFIFOEntries"),
			fd("flags", "Flags", "NVOS04_FLAGS_*"),
			fd("hContextShare", "ContextShare", "hContextShare"),
			fd("hVASpace", "VASpace", "hVASpace: 0 for a channel of a group"),
			f("hUserdMemory", "UserdMemory"),
			f("cid", "CID"),
			f("subDeviceId", "SubDeviceID"),
			f("hPhysChannelGroup", "PhysChannelGroup"),
			f("ProcessID", "ProcessID"),
			f("SubProcessID", "SubProcessID"),
			fd("encryptIv", "EncryptIV", "CC_CHAN_ALLOC_IV_SIZE_DWORD"),
			f("decryptIv", "DecryptIV"),
			fd("hmacNonce", "HMACNonce", "CC_CHAN_ALLOC_NONCE_SIZE_DWORD"),
			f("tpcConfigID", "TPCConfigID"),
		}},
	{Go: "HopperUsermodeAllocParams", C: "NV_HOPPER_USERMODE_A_PARAMS", Header: "nvos.h", Size: 2,
		Fields: []fieldSpec{
			fd("bBar1Mapping", "Bar1Mapping", "bBar1Mapping: map through BAR1 rather than BAR0"),
			fd("bPriv", "Priv", "bPriv"),
		}},
	{Go: "GRAllocParams", C: "NV_GR_ALLOCATION_PARAMETERS", Header: "nvos.h", Size: 16,
		Doc: "It holds the optional parameters of a compute class."},
	{Go: "CopyAllocParams", C: "NVB0B5_ALLOCATION_PARAMETERS", Header: "class/clb0b5sw.h", Size: 8,
		Doc: "It holds the optional parameters of a copy class."},
	{Go: "DebuggerAllocParams", C: "NV83DE_ALLOC_PARAMETERS", Header: "class/cl83de.h", Size: 12,
		Doc: "It holds the parameters of GT200_DEBUGGER.",
		Fields: []fieldSpec{
			fd("hDebuggerClient_Obsolete", "DebuggerClientObsolete", "hDebuggerClient_Obsolete"),
			fd("hAppClient", "AppClient", "hAppClient"),
			fd("hClass3dObject", "Class3DObject", "hClass3dObject: the compute object"),
		}},
}

// The parameters of the controls the path sends.
var ctrlStructs = []*structSpec{
	{Go: "BuildVersionV2Params", C: "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS", Header: "ctrl/ctrl0000/ctrl0000system.h", Size: 1032,
		Fields: []fieldSpec{
			ft("driverVersionBuffer", "DriverVersion", "byte", `driverVersionBuffer, such as "580.159.04"`),
			ft("versionBuffer", "Version", "byte", "versionBuffer"),
			ft("driverBranch", "DriverBranch", "byte", ""),
			ft("titleBuffer", "Title", "byte", "titleBuffer"),
			f("changelistNumber", "Changelist"),
			f("officialChangelistNumber", "OfficialChangelist"),
		}},
	{Go: "GPUIDInfoV2Params", C: "NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", Header: "ctrl/ctrl0000/ctrl0000gpu.h", Size: 32,
		Fields: []fieldSpec{
			fd("gpuId", "GPUID", "in: the card's gpu_id"),
			f("gpuFlags", "GPUFlags"),
			fd("deviceInstance", "DeviceInstance", "the deviceId NV01_DEVICE_0 takes"),
			f("subDeviceInstance", "SubDeviceInstance"),
			f("sliStatus", "SLIStatus"),
			f("boardId", "BoardID"),
			f("gpuInstance", "GPUInstance"),
			f("numaId", "NumaID"),
		}},
	{Go: "ClassListParams", C: "NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS", Header: "ctrl/ctrl0080/ctrl0080gpu.h", Size: 16,
		Doc: "It holds a count, then the list's user address.",
		Fields: []fieldSpec{
			f("numClasses", "NumClasses"),
			fd("classList", "ClassList", "P64 to NumClasses uint32s"),
		}},
	{Go: "ClassListV2Params", C: "NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS", Header: "ctrl/ctrl0080/ctrl0080gpu.h", Size: 804,
		Doc: "It holds the list in line."},
	{Go: "GRInfo", C: "NV2080_CTRL_GR_INFO", Header: "ctrl/ctrl2080/ctrl2080gr.h", Size: 8,
		Fields: []fieldSpec{fd("index", "Index", "NV2080_CTRL_GR_INFO_INDEX_*")}},
	{Go: "GRRouteInfo", C: "NV2080_CTRL_GR_ROUTE_INFO", Header: "ctrl/ctrl2080/ctrl2080gr.h", Size: 16,
		Doc: "It is NV0080_CTRL_GR_ROUTE_INFO (ctrl/ctrl0080/ctrl0080gr.h)."},
	{Go: "GRInfoParams", C: "NV2080_CTRL_GR_GET_INFO_PARAMS", Header: "ctrl/ctrl2080/ctrl2080gr.h", Size: 32,
		Fields: []fieldSpec{
			f("grInfoListSize", "GRInfoListSize"),
			fd("grInfoList", "GRInfoList", "P64 to GRInfoListSize GRInfos"),
			f("grRouteInfo", "GRRouteInfo"),
		}},
	{Go: "GIDInfoParams", C: "NV2080_CTRL_GPU_GET_GID_INFO_PARAMS", Header: "ctrl/ctrl2080/ctrl2080gpu.h", Size: 268,
		Fields: []fieldSpec{
			fd("flags", "Flags", "NV2080_GPU_CMD_GPU_GET_GID_FLAGS_*"),
			ft("data", "Data", "byte", ""),
		}},
	{Go: "PerfBoostParams", C: "NV2080_CTRL_PERF_BOOST_PARAMS", Header: "ctrl/ctrl2080/ctrl2080perf.h", Size: 8,
		Fields: []fieldSpec{
			fd("flags", "Flags", "NV2080_CTRL_PERF_BOOST_FLAGS_*"),
			fd("duration", "Duration", "seconds, or PerfBoostInfinite"),
		}},
	{Go: "FBInfo", C: "NV2080_CTRL_FB_INFO", Header: "ctrl/ctrl2080/ctrl2080fb.h", Size: 8,
		Fields: []fieldSpec{fd("index", "Index", "NV2080_CTRL_FB_INFO_INDEX_*")}},
	{Go: "FBInfoV2Params", C: "NV2080_CTRL_FB_GET_INFO_V2_PARAMS", Header: "ctrl/ctrl2080/ctrl2080fb.h", Size: 1028,
		Fields: []fieldSpec{f("fbInfoListSize", "FBInfoListSize"), f("fbInfoList", "FBInfoList")}},
	{Go: "TimerGetTimeParams", C: "NV2080_CTRL_TIMER_GET_TIME_PARAMS", Header: "ctrl/ctrl2080/ctrl2080tmr.h", Size: 8},
	{Go: "TimerSample", C: "NV2080_CTRL_TIMER_GPU_CPU_TIME_SAMPLE", Header: "ctrl/ctrl2080/ctrl2080tmr.h", Size: 16},
	{Go: "TimerCorrelationParams", C: "NV2080_CTRL_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO_PARAMS", Header: "ctrl/ctrl2080/ctrl2080tmr.h", Size: 264,
		Fields: []fieldSpec{
			fd("cpuClkId", "CPUClkID", "NV2080_TIMER_GPU_CPU_TIME_CPU_CLK_ID_*"),
			f("sampleCount", "SampleCount"),
			f("samples", "Samples"),
		}},
	{Go: "WorkSubmitTokenParams", C: "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS", Header: "ctrl/ctrlc36f.h", Size: 4},
	{Go: "ScheduleParams", C: "NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS", Header: "ctrl/ctrla06f/ctrla06fgpfifo.h", Size: 3,
		Doc: "NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS is the same struct.",
		Fields: []fieldSpec{
			fd("bEnable", "Enable", "bEnable"),
			fd("bSkipSubmit", "SkipSubmit", "bSkipSubmit"),
			fd("bSkipEnable", "SkipEnable", "bSkipEnable"),
		}},
	{Go: "BindParams", C: "NVA06F_CTRL_BIND_PARAMS", Header: "ctrl/ctrla06f/ctrla06fgpfifo.h", Size: 4,
		Doc: "It binds a channel outside a group."},
	{Go: "SMErrorStateRegisters", C: "NV83DE_SM_ERROR_STATE_REGISTERS", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Size: 48,
		Fields: []fieldSpec{f("hwwWarpEsrPc64", "HwwWarpEsrPC64")}},
	{Go: "MMUFaultInfo", C: "NV83DE_MMU_FAULT_INFO", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Size: 8},
	{Go: "SMErrorStatesParams", C: "NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Size: 4824,
		Fields: []fieldSpec{
			fd("hTargetChannel", "TargetChannel", "hTargetChannel"),
			f("numSMsToRead", "NumSMsToRead"),
			f("smErrorStateArray", "SMErrorStates"),
			fd("mmuFaultInfo", "MMUFaultInfoV1", "mmuFaultInfo, deprecated in favour of MMUFault"),
			f("mmuFault", "MMUFault"),
			f("startingSM", "StartingSM"),
		}},
	{Go: "MMUFaultInfoEntry", C: "NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Size: 16},
	{Go: "MMUFaultInfoParams", C: "NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS", Header: "ctrl/ctrl83de/ctrl83dedebug.h", Size: 72,
		Fields: []fieldSpec{f("mmuFaultInfoList", "Entries"), f("count", "Count")}},
}

// What peer access takes of the RM and UVM.
var peerStructs = []*structSpec{
	{Go: "P2PCapsV2Params", C: "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_V2_PARAMS", Header: "ctrl/ctrl0000/ctrl0000system.h", Size: 8348,
		Fields: []fieldSpec{
			fd("gpuIds", "GPUIDs", "in: the cards' gpu_ids, the first the local GPU's"),
			fd("gpuCount", "GPUCount", "in"),
			fd("p2pCaps", "P2PCaps", "out: NV0000_CTRL_SYSTEM_GET_P2P_CAPS_* bits"),
			f("p2pOptimalReadCEs", "P2POptimalReadCEs"),
			f("p2pOptimalWriteCEs", "P2POptimalWriteCEs"),
			fd("p2pCapsStatus", "P2PCapsStatus", "NV0000_P2P_CAPS_STATUS_* by NV0000_CTRL_P2P_CAPS_INDEX_*"),
			fd("busPeerIds", "BusPeerIDs", "[x*GPUCount+y]: GPU x's peer ID of GPU y"),
			f("busEgmPeerIds", "BusEGMPeerIDs"),
		}},
	{Go: "rmDupObjectParams", C: "NVOS55_PARAMETERS", Header: "nvos.h", Size: 28,
		Doc: "It makes a new object under Parent that names the object ObjectSrc of ClientSrc.",
		Fields: []fieldSpec{
			fd("hClient", "Client", "hClient: the new object's client"),
			fd("hParent", "Parent", "hParent: its parent"),
			fd("hObject", "Object", "hObject: its handle, 0 for the RM to name it; out: the handle"),
			fd("hClientSrc", "ClientSrc", "hClientSrc"),
			fd("hObjectSrc", "ObjectSrc", "hObjectSrc"),
			fd("flags", "Flags", "NV04_DUP_HANDLE_FLAGS_*"),
		}},
	{Go: "uvmEnablePeerAccessParams", C: "UVM_ENABLE_PEER_ACCESS_PARAMS", Header: "uvm_ioctl.h", Size: 36,
		Fields: []fieldSpec{f("gpuUuidA", "GPUUUIDA"), f("gpuUuidB", "GPUUUIDB")}},
}

// The parameters of the UVM ioctls; each ends in the RM status the UVM
// driver returns.
var uvmStructs = []*structSpec{
	{Go: "uvmInitializeParams", C: "UVM_INITIALIZE_PARAMS", Header: "uvm_linux_ioctl.h", Size: 16},
	{Go: "uvmMMInitializeParams", C: "UVM_MM_INITIALIZE_PARAMS", Header: "uvm_ioctl.h", Size: 8},
	{Go: "uvmRegisterGPUParams", C: "UVM_REGISTER_GPU_PARAMS", Header: "uvm_ioctl.h", Size: 40,
		Fields: []fieldSpec{fd("rmCtrlFd", "RMCtrlFD", "-1: UVM opens its own client")}},
	{Go: "uvmUnregisterGPUParams", C: "UVM_UNREGISTER_GPU_PARAMS", Header: "uvm_ioctl.h", Size: 20},
	{Go: "uvmRegisterGPUVASpaceParams", C: "UVM_REGISTER_GPU_VASPACE_PARAMS", Header: "uvm_ioctl.h", Size: 32},
	{Go: "uvmUnregisterGPUVASpaceParams", C: "UVM_UNREGISTER_GPU_VASPACE_PARAMS", Header: "uvm_ioctl.h", Size: 20},
	{Go: "uvmRegisterChannelParams", C: "UVM_REGISTER_CHANNEL_PARAMS", Header: "uvm_ioctl.h", Size: 56,
		Fields: []fieldSpec{fd("base", "Base", "the GPU addresses UVM maps the channel's buffers at")}},
	{Go: "uvmUnregisterChannelParams", C: "UVM_UNREGISTER_CHANNEL_PARAMS", Header: "uvm_ioctl.h", Size: 28},
	{Go: "uvmCreateExternalRangeParams", C: "UVM_CREATE_EXTERNAL_RANGE_PARAMS", Header: "uvm_ioctl.h", Size: 24},
	{Go: "uvmGPUMappingAttributes", C: "UvmGpuMappingAttributes", Header: "uvm_types.h", Size: 36,
		Fields: []fieldSpec{
			fd("gpuMappingType", "MappingType", "UvmGpuMappingType"),
			fd("gpuCachingType", "CachingType", "UvmGpuCachingType"),
			f("gpuFormatType", "FormatType"),
			f("gpuElementBits", "ElementBits"),
			f("gpuCompressionType", "CompressionType"),
		}},
	{Go: "uvmMapExternalAllocationParams", C: "UVM_MAP_EXTERNAL_ALLOCATION_PARAMS", Header: "uvm_ioctl.h", Size: 9264,
		Fields: []fieldSpec{
			ft("hClient", "Client", "Handle", ""),
			ft("hMemory", "Memory", "Handle", ""),
		}},
	{Go: "uvmFreeParams", C: "UVM_FREE_PARAMS", Header: "uvm_ioctl.h", Size: 24,
		Doc: "Release 590 removes length."},
	{Go: "uvmUnmapExternalParams", C: "UVM_UNMAP_EXTERNAL_PARAMS", Header: "uvm_ioctl.h", Size: 40},
}

// structTable is every struct the generator writes, in the order it writes them.
var structTable = concat(frameStructs, allocStructs, ctrlStructs, peerStructs, uvmStructs)

func concat(ss ...[]*structSpec) []*structSpec {
	var out []*structSpec
	for _, s := range ss {
		out = append(out, s...)
	}
	return out
}

// checkHeaders are read for the macros and enums of checkTable.
var checkHeaders = []string{
	"class/cl0000.h", "class/cl0080.h", "class/cl2080.h", "class/cl003e.h", "class/cl0040.h",
	"class/cl0070.h", "class/cl0071.h", "class/cl2080_notification.h", "class/cl50a0.h",
	"class/cl83de.h", "class/cl9067.h", "class/cla06c.h", "class/clc661.h", "class/clcb33.h",
	"class/cl0005.h", "class/cl90f1.h",
	"ctrl/ctrl0000/ctrl0000gpu.h", "ctrl/ctrl0000/ctrl0000system.h", "ctrl/ctrl0080/ctrl0080gpu.h",
	"ctrl/ctrl2080/ctrl2080fb.h", "ctrl/ctrl2080/ctrl2080gpu.h", "ctrl/ctrl2080/ctrl2080gr.h",
	"ctrl/ctrl2080/ctrl2080perf.h", "ctrl/ctrl2080/ctrl2080tmr.h", "ctrl/ctrl83de/ctrl83dedebug.h",
	"ctrl/ctrla06c.h", "ctrl/ctrla06f/ctrla06fgpfifo.h", "ctrl/ctrlc36f.h",
	"nvmisc.h", "nvos.h", "alloc/alloc_channel.h", "nv-ioctl-numbers.h", "nv-ioctl.h", "nv_escape.h",
	"nv_uvm_user_types.h", "uvm_ioctl.h", "uvm_linux_ioctl.h",
}

// checkSpec is a hand-written constant of package nvidia and the C
// expression, over the headers' macros, whose value it must have. lo(F) is
// the low bit of the bit field macro F ("hi:lo").
type checkSpec struct{ Go, Expr string }

// checkTable lists the hand-written constants that zz_rm_generated_test.go
// checks against the headers: the numbers the generator does not write
// because the package spells them in its own groups and words.
var checkTable = []checkSpec{
	// Escapes and ioctls.
	{"escRMAllocMemory", "NV_ESC_RM_ALLOC_MEMORY"},
	{"escRMFree", "NV_ESC_RM_FREE"},
	{"escRMControl", "NV_ESC_RM_CONTROL"},
	{"escRMAlloc", "NV_ESC_RM_ALLOC"},
	{"escRMMapMemory", "NV_ESC_RM_MAP_MEMORY"},
	{"escRMUnmapMemory", "NV_ESC_RM_UNMAP_MEMORY"},
	{"escRMMapMemoryDMA", "NV_ESC_RM_MAP_MEMORY_DMA"},
	{"escRMUnmapDMA", "NV_ESC_RM_UNMAP_MEMORY_DMA"},
	{"escRMDupObject", "NV_ESC_RM_DUP_OBJECT"},
	{"nvIoctlMagic", "NV_IOCTL_MAGIC"},
	{"nvIoctlBase", "NV_IOCTL_BASE"},
	{"escCardInfo", "NV_ESC_CARD_INFO"},
	{"escRegisterFD", "NV_ESC_REGISTER_FD"},
	{"escAllocOSEvent", "NV_ESC_ALLOC_OS_EVENT"},
	{"escFreeOSEvent", "NV_ESC_FREE_OS_EVENT"},
	{"escExportToDMABufFD", "NV_ESC_EXPORT_TO_DMABUF_FD"},
	{"escWaitOpenComplete", "NV_ESC_WAIT_OPEN_COMPLETE"},
	{"uvmInitialize", "UVM_INITIALIZE"},
	{"uvmDeinitialize", "UVM_DEINITIALIZE"},
	{"uvmRegisterGPUVASpace", "UVM_REGISTER_GPU_VASPACE"},
	{"uvmUnregisterGPUVASpace", "UVM_UNREGISTER_GPU_VASPACE"},
	{"uvmRegisterChannel", "UVM_REGISTER_CHANNEL"},
	{"uvmUnregisterChannel", "UVM_UNREGISTER_CHANNEL"},
	{"uvmMapExternalAlloc", "UVM_MAP_EXTERNAL_ALLOCATION"},
	{"uvmFree", "UVM_FREE"},
	{"uvmRegisterGPU", "UVM_REGISTER_GPU"},
	{"uvmUnregisterGPU", "UVM_UNREGISTER_GPU"},
	{"uvmUnmapExternal", "UVM_UNMAP_EXTERNAL"},
	{"uvmCreateExternalRange", "UVM_CREATE_EXTERNAL_RANGE"},
	{"uvmMMInitialize", "UVM_MM_INITIALIZE"},
	{"uvmEnablePeerAccess", "UVM_ENABLE_PEER_ACCESS"},

	// Classes.
	{"ClassRootClient", "NV01_ROOT_CLIENT"},
	{"ClassDevice", "NV01_DEVICE_0"},
	{"ClassSubdevice", "NV20_SUBDEVICE_0"},
	{"ClassMemorySystem", "NV01_MEMORY_SYSTEM"},
	{"ClassMemoryLocalUser", "NV01_MEMORY_LOCAL_USER"},
	{"ClassMemoryVirtual", "NV01_MEMORY_VIRTUAL"},
	{"ClassMemoryOSDescriptor", "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR"},
	{"ClassEventOSEvent", "NV01_EVENT_OS_EVENT"},
	{"ClassMemoryVirtual50", "NV50_MEMORY_VIRTUAL"},
	{"ClassContextShare", "FERMI_CONTEXT_SHARE_A"},
	{"ClassVASpace", "FERMI_VASPACE_A"},
	{"ClassChannelGroup", "KEPLER_CHANNEL_GROUP_A"},
	{"ClassDebugger", "GT200_DEBUGGER"},
	{"ClassConfidentialComp", "NV_CONFIDENTIAL_COMPUTE"},
	{"classHopperUsermode", "HOPPER_USERMODE_A"},

	// Controls.
	{"CtrlSystemGetBuildVersionV2", "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2"},
	{"CtrlGPUGetIDInfoV2", "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2"},
	{"CtrlGPUGetClassList", "NV0080_CTRL_CMD_GPU_GET_CLASSLIST"},
	{"CtrlGPUGetClassListV2", "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2"},
	{"CtrlGPUGetGIDInfo", "NV2080_CTRL_CMD_GPU_GET_GID_INFO"},
	{"CtrlPerfBoost", "NV2080_CTRL_CMD_PERF_BOOST"},
	{"CtrlGRGetInfo", "NV2080_CTRL_CMD_GR_GET_INFO"},
	{"CtrlFBGetInfoV2", "NV2080_CTRL_CMD_FB_GET_INFO_V2"},
	{"CtrlTimerGetTime", "NV2080_CTRL_CMD_TIMER_GET_TIME"},
	{"CtrlTimerGetGPUCPUTimeCorr", "NV2080_CTRL_CMD_TIMER_GET_GPU_CPU_TIME_CORRELATION_INFO"},
	{"CtrlGetWorkSubmitToken", "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN"},
	{"CtrlChannelGroupSchedule", "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE"},
	{"CtrlChannelSchedule", "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE"},
	{"CtrlChannelBind", "NVA06F_CTRL_CMD_BIND"},
	{"CtrlDebugReadAllSMErrors", "NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES"},
	{"CtrlDebugReadMMUFaultInfo", "NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO"},
	{"CtrlSystemGetP2PCapsV2", "NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2"},

	// Indices and values of the controls.
	{"GRInfoSMVersion", "NV2080_CTRL_GR_INFO_INDEX_SM_VERSION"},
	{"GRInfoMaxWarpsPerSM", "NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM"},
	{"GRInfoMaxThreadsPerWarp", "NV2080_CTRL_GR_INFO_INDEX_MAX_THREADS_PER_WARP"},
	{"GRInfoLitterNumGPCs", "NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS"},
	{"GRInfoLitterTPCsPerGPC", "NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC"},
	{"GRInfoLitterSMsPerTPC", "NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC"},
	{"GRInfoShaderPipeCount", "NV2080_CTRL_GR_INFO_INDEX_SHADER_PIPE_COUNT"},
	{"gidFormatBinary", "NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY << lo(NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT)"},
	{"PerfBoostToMax", "NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_TO_MAX << lo(NV2080_CTRL_PERF_BOOST_FLAGS_CMD)"},
	{"PerfBoostCUDA", "NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_YES << lo(NV2080_CTRL_PERF_BOOST_FLAGS_CUDA)"},
	{"PerfBoostCUDAPriority", "NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_PRIORITY_HIGH << lo(NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_PRIORITY)"},
	{"PerfBoostInfinite", "NV2080_CTRL_PERF_BOOST_DURATION_INFINITE"},
	{"FBInfoBAR1Size", "NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE"},
	{"FBInfoTotalRAMSize", "NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE"},
	{"FBInfoHeapSize", "NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE"},
	{"FBInfoHeapFree", "NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE"},
	{"FBInfoL2CacheSize", "NV2080_CTRL_FB_INFO_INDEX_L2CACHE_SIZE"},
	{"FBInfoBAR1AvailSize", "NV2080_CTRL_FB_INFO_INDEX_BAR1_AVAIL_SIZE"},
	{"TimerClockPlatformAPI", "NV2080_TIMER_GPU_CPU_TIME_CPU_CLK_ID_PLATFORM_API"},
	{"P2PWrites", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_WRITES_SUPPORTED)"},
	{"P2PReads", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_READS_SUPPORTED)"},
	{"P2PProp", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PROP_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PROP_SUPPORTED)"},
	{"P2PNVLink", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NVLINK_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_NVLINK_SUPPORTED)"},
	{"P2PAtomics", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_ATOMICS_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_ATOMICS_SUPPORTED)"},
	{"P2PLoopback", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_LOOPBACK_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_LOOPBACK_SUPPORTED)"},
	{"P2PPCI", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_SUPPORTED)"},
	{"P2PC2C", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_C2C_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_C2C_SUPPORTED)"},
	{"P2PPCIBAR1", "NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_BAR1_SUPPORTED_TRUE << lo(NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PCI_BAR1_SUPPORTED)"},
	{"p2pCapsStatusOK", "NV0000_P2P_CAPS_STATUS_OK"},
	{"p2pCapsIndexNVLink", "NV0000_CTRL_P2P_CAPS_INDEX_NVLINK"},
	{"p2pCapsIndexPCI", "NV0000_CTRL_P2P_CAPS_INDEX_PCI"},

	// Engines, notifiers and events.
	{"EngineGraphics", "NV2080_ENGINE_TYPE_GRAPHICS"},
	{"EngineCopy0", "NV2080_ENGINE_TYPE_COPY0"},
	{"NotifierGraphics", "NV2080_NOTIFIERS_GRAPHICS"},
	{"NotifierHost", "NV2080_NOTIFIERS_FIFO_EVENT_MTHD"},
	{"eventWithoutData", "NV01_EVENT_WITHOUT_EVENT_DATA"},
	{"eventNonStall", "NV01_EVENT_NONSTALL_INTR"},

	// Allocation parameters' values and fields.
	{"VAModeOptionalMultiple", "NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES"},
	{"VAModeSingle", "NV_DEVICE_ALLOCATION_VAMODE_SINGLE_VASPACE"},
	{"VAModeMultiple", "NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES"},
	{"memTypeImage", "NVOS32_TYPE_IMAGE"},
	{"memTypeNotifier", "NVOS32_TYPE_NOTIFIER"},
	{"memFlagIgnoreBankPlacement", "NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT"},
	{"memFlagAlignmentForce", "NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE"},
	{"memFlagHandleProvided", "NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED"},
	{"memFlagMapNotRequired", "NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED"},
	{"memFlagPersistentVidmem", "NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM"},
	{"memFlagVirtual", "NVOS32_ALLOC_FLAGS_VIRTUAL"},
	{"attrPageSizeShift", "lo(NVOS32_ATTR_PAGE_SIZE)"},
	{"attrPageSize4KB", "NVOS32_ATTR_PAGE_SIZE_4KB"},
	{"attrPageSizeHuge", "NVOS32_ATTR_PAGE_SIZE_HUGE"},
	{"attrLocationShift", "lo(NVOS32_ATTR_LOCATION)"},
	{"attrLocationVidmem", "NVOS32_ATTR_LOCATION_VIDMEM"},
	{"attrLocationPCI", "NVOS32_ATTR_LOCATION_PCI"},
	{"attrPhysicalityShift", "lo(NVOS32_ATTR_PHYSICALITY)"},
	{"attrContiguous", "NVOS32_ATTR_PHYSICALITY_CONTIGUOUS"},
	{"attrAllowNoncontig", "NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS"},
	{"attrCoherencyShift", "lo(NVOS32_ATTR_COHERENCY)"},
	{"attrCoherencyUncached", "NVOS32_ATTR_COHERENCY_UNCACHED"},
	{"attrCoherencyCached", "NVOS32_ATTR_COHERENCY_CACHED"},
	{"attr2ZBCPreferNoZBC", "NVOS32_ATTR2_ZBC_PREFER_NO_ZBC << lo(NVOS32_ATTR2_ZBC)"},
	{"attr2GPUCacheableShift", "lo(NVOS32_ATTR2_GPU_CACHEABLE)"},
	{"attr2GPUCacheableYes", "NVOS32_ATTR2_GPU_CACHEABLE_YES"},
	{"attr2GPUCacheableNo", "NVOS32_ATTR2_GPU_CACHEABLE_NO"},
	{"attr2PageSizeHugeShift", "lo(NVOS32_ATTR2_PAGE_SIZE_HUGE)"},
	{"attr2PageSizeHuge2MB", "NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB"},
	{"os02PhysicalityShift", "lo(NVOS02_FLAGS_PHYSICALITY)"},
	{"os02Noncontiguous", "NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS"},
	{"os02CoherencyShift", "lo(NVOS02_FLAGS_COHERENCY)"},
	{"os02CoherencyCached", "NVOS02_FLAGS_COHERENCY_CACHED"},
	{"os02MappingShift", "lo(NVOS02_FLAGS_MAPPING)"},
	{"os02MappingNoMap", "NVOS02_FLAGS_MAPPING_NO_MAP"},
	{"os46CacheSnoopShift", "lo(NVOS46_FLAGS_CACHE_SNOOP)"},
	{"os46PageSizeShift", "lo(NVOS46_FLAGS_PAGE_SIZE)"},
	{"os46PageSize4KB", "NVOS46_FLAGS_PAGE_SIZE_4KB"},
	{"os46DMAOffsetFixedShift", "lo(NVOS46_FLAGS_DMA_OFFSET_FIXED)"},
	{"VASpaceExternallyOwned", "NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED"},
	{"VASpacePageFaulting", "NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING"},
	{"CtxShareAsync", "NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC << lo(NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT)"},
	{"ChannelRunqueueOne", "NVOS04_FLAGS_GROUP_CHANNEL_RUNQUEUE_ONE << lo(NVOS04_FLAGS_GROUP_CHANNEL_RUNQUEUE)"},
	{"dmabufMappingDefault", "NV_DMABUF_EXPORT_MAPPING_TYPE_DEFAULT"},
	{"uvmMappingReadWriteAtomic", "UvmGpuMappingTypeReadWriteAtomic"},
	{"uvmCachingDefault", "UvmGpuCachingTypeDefault"},
}
