package nvidia

import "structs"

// The parameter blocks of the RM escapes themselves, release 580. Sizes are
// those of the C structs on x86-64 (sizes_test.go checks each). A P64 field
// (NvP64) holds a user address as a uint64.

// Handle is an RM object's name within its client (NvHandle).
type Handle uint32

// rmFreeParams mirrors NVOS00_PARAMETERS (nvos.h), NV_ESC_RM_FREE's block.
type rmFreeParams struct {
	_            structs.HostLayout
	Root         Handle // hRoot: the client
	ObjectParent Handle // hObjectParent
	ObjectOld    Handle // hObjectOld: the object to free, with its children
	Status       uint32
}

// rmAllocMemoryParams mirrors NVOS02_PARAMETERS (nvos.h).
type rmAllocMemoryParams struct {
	_            structs.HostLayout
	Root         Handle // hRoot
	ObjectParent Handle // hObjectParent
	ObjectNew    Handle // hObjectNew: the caller names the new object
	Class        uint32 // hClass
	Flags        uint32 // NVOS02_FLAGS_*
	_            [4]byte
	Memory       uint64 // pMemory: the host address of the memory described
	Limit        uint64 // limit: size - 1
	Status       uint32
	_            [4]byte
}

// rmAllocMemoryWithFD mirrors nv_ioctl_nvos02_parameters_with_fd
// (nv-unix-nvos-params-wrappers.h), NV_ESC_RM_ALLOC_MEMORY's block.
type rmAllocMemoryWithFD struct {
	_      structs.HostLayout
	Params rmAllocMemoryParams
	FD     int32
	_      [4]byte
}

// rmAllocParams21 mirrors NVOS21_PARAMETERS (nvos.h), the short form of
// NV_ESC_RM_ALLOC's block. The path sends the long form (rmAllocParams).
type rmAllocParams21 struct {
	_            structs.HostLayout
	Root         Handle
	ObjectParent Handle
	ObjectNew    Handle
	Class        uint32
	AllocParms   uint64 // pAllocParms
	ParamsSize   uint32
	Status       uint32
}

// rmAllocParams mirrors NVOS64_PARAMETERS (nvos.h), the long form of
// NV_ESC_RM_ALLOC's block, as libcuda sends it.
type rmAllocParams struct {
	_               structs.HostLayout
	Root            Handle // hRoot: the client (0 to make a client)
	ObjectParent    Handle // hObjectParent
	ObjectNew       Handle // hObjectNew: 0 lets the RM name the object
	Class           uint32 // hClass
	AllocParms      uint64 // pAllocParms: the class's parameters
	RightsRequested uint64 // pRightsRequested: RS_ACCESS_MASK, or 0
	ParamsSize      uint32
	Flags           uint32
	Status          uint32
	_               [4]byte
}

// rmControlParams mirrors NVOS54_PARAMETERS (nvos.h), NV_ESC_RM_CONTROL's
// block.
type rmControlParams struct {
	_          structs.HostLayout
	Client     Handle // hClient
	Object     Handle // hObject
	Cmd        uint32
	Flags      uint32
	Params     uint64 // params
	ParamsSize uint32 // must equal the command's parameter size
	Status     uint32
}

// rmMapMemoryParams mirrors NVOS33_PARAMETERS (nvos.h).
type rmMapMemoryParams struct {
	_             structs.HostLayout
	Client        Handle
	Device        Handle
	Memory        Handle
	_             [4]byte
	Offset        uint64
	Length        uint64
	LinearAddress uint64 // pLinearAddress: the RM's cookie for the mapping
	Status        uint32
	Flags         uint32 // NVOS33_FLAGS_*
}

// rmMapMemoryWithFD mirrors nv_ioctl_nvos33_parameters_with_fd
// (nv-unix-nvos-params-wrappers.h), NV_ESC_RM_MAP_MEMORY's block: FD is the
// /dev/nvidia<minor> file that the mapping's mmap goes through.
type rmMapMemoryWithFD struct {
	_      structs.HostLayout
	Params rmMapMemoryParams
	FD     int32
	_      [4]byte
}

// rmUnmapMemoryParams mirrors NVOS34_PARAMETERS (nvos.h).
type rmUnmapMemoryParams struct {
	_             structs.HostLayout
	Client        Handle
	Device        Handle
	Memory        Handle
	_             [4]byte
	LinearAddress uint64
	Status        uint32
	Flags         uint32
}

// rmMapMemoryDMAParams mirrors NVOS46_PARAMETERS (nvos.h), 64 bytes on
// release 580, which added flags2 and kindOverride.
type rmMapMemoryDMAParams struct {
	_            structs.HostLayout
	Client       Handle
	Device       Handle
	DMA          Handle // hDma: the virtual memory object to map into
	Memory       Handle
	Offset       uint64
	Length       uint64
	Flags        uint32 // NVOS46_FLAGS_*
	Flags2       uint32
	KindOverride uint32
	_            [4]byte
	DMAOffset    uint64 // in with DMA_OFFSET_FIXED, out otherwise
	Status       uint32
	_            [4]byte
}

// rmUnmapMemoryDMAParams mirrors NVOS47_PARAMETERS (nvos.h).
type rmUnmapMemoryDMAParams struct {
	_         structs.HostLayout
	Client    Handle
	Device    Handle
	DMA       Handle
	Memory    Handle
	Flags     uint32
	_         [4]byte
	DMAOffset uint64
	Size      uint64
	Status    uint32
	_         [4]byte
}

// pciInfo mirrors nv_pci_info_t (nv-ioctl.h).
type pciInfo struct {
	_        structs.HostLayout
	Domain   uint32
	Bus      uint8
	Slot     uint8
	Function uint8
	_        uint8
	VendorID uint16
	DeviceID uint16
}

// cardInfo mirrors nv_ioctl_card_info_t (nv-ioctl.h); NV_ESC_CARD_INFO
// fills an array of them, one for each GPU the driver holds.
type cardInfo struct {
	_             structs.HostLayout
	Valid         uint8
	_             [3]byte
	PCI           pciInfo
	GPUID         uint32
	InterruptLine uint16
	_             [2]byte
	RegAddress    uint64
	RegSize       uint64
	FBAddress     uint64
	FBSize        uint64
	MinorNumber   uint32
	DevName       [10]byte
	_             [2]byte
}

// maxDevices is NV_MAX_DEVICES (nvlimits.h).
const maxDevices = 32

// registerFDParams mirrors nv_ioctl_register_fd_t (nv-ioctl.h).
type registerFDParams struct {
	_     structs.HostLayout
	CtlFD int32
}

// waitOpenCompleteParams mirrors nv_ioctl_wait_open_complete_t
// (nv-ioctl.h).
type waitOpenCompleteParams struct {
	_             structs.HostLayout
	RC            int32
	AdapterStatus uint32
}

// rmAPIVersionParams mirrors nv_ioctl_rm_api_version_t (nv-ioctl.h),
// NV_ESC_CHECK_VERSION_STR's block. The path does not send it.
type rmAPIVersionParams struct {
	_             structs.HostLayout
	Cmd           uint32
	Reply         uint32
	VersionString [64]byte
}

// allocOSEventParams mirrors nv_ioctl_alloc_os_event_t (nv-ioctl.h), and
// nv_ioctl_free_os_event_t, of the same layout.
type allocOSEventParams struct {
	_      structs.HostLayout
	Client Handle
	Device Handle
	FD     uint32
	Status uint32
}
