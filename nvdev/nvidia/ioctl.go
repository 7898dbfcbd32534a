package nvidia

// Ioctl numbers of NVIDIA's kernel driver, release 580.
//
// The RM's escapes on /dev/nvidiactl and /dev/nvidia<minor> are Linux
// _IOWR('F', nr, size) numbers: the size of the parameter block is part of
// the number, and the driver refuses a block of another size. The UVM
// driver's ioctls on /dev/nvidia-uvm are plain numbers.

// Linux's ioctl number layout (asm-generic/ioctl.h).
const (
	iocNRBits   = 8
	iocTypeBits = 8
	iocSizeBits = 14

	iocNRShift   = 0
	iocTypeShift = iocNRShift + iocNRBits
	iocSizeShift = iocTypeShift + iocTypeBits
	iocDirShift  = iocSizeShift + iocSizeBits

	iocWrite = 1
	iocRead  = 2

	// iocSizeMax is the largest parameter block an ioctl number holds.
	iocSizeMax = 1<<iocSizeBits - 1
)

// nvIoctlMagic is NV_IOCTL_MAGIC (nv-ioctl-numbers.h), the type byte of
// every RM escape.
const nvIoctlMagic = 'F'

// iowr is _IOWR(typ, nr, size): an ioctl that copies size bytes in and out.
// It panics if size does not fit the number, a programming error.
func iowr(typ, nr, size uintptr) uintptr {
	if size > iocSizeMax {
		panic("nvidia: ioctl parameter block too large for its number")
	}
	return (iocRead|iocWrite)<<iocDirShift | size<<iocSizeShift | typ<<iocTypeShift | nr<<iocNRShift
}

// escape is the ioctl number of the RM escape nr with a parameter block of
// size bytes.
func escape(nr, size uintptr) uintptr { return iowr(nvIoctlMagic, nr, size) }

// RM escapes (nv_escape.h; nv-ioctl-numbers.h for those from NV_IOCTL_BASE).
const (
	escRMAllocMemory  = 0x27 // NV_ESC_RM_ALLOC_MEMORY: NVOS02 with fd, on /dev/nvidia<minor>
	escRMFree         = 0x29 // NV_ESC_RM_FREE: NVOS00
	escRMControl      = 0x2a // NV_ESC_RM_CONTROL: NVOS54
	escRMAlloc        = 0x2b // NV_ESC_RM_ALLOC: NVOS21 or NVOS64
	escRMMapMemory    = 0x4e // NV_ESC_RM_MAP_MEMORY: NVOS33 with fd
	escRMUnmapMemory  = 0x4f // NV_ESC_RM_UNMAP_MEMORY: NVOS34
	escRMMapMemoryDMA = 0x57 // NV_ESC_RM_MAP_MEMORY_DMA: NVOS46
	escRMUnmapDMA     = 0x58 // NV_ESC_RM_UNMAP_MEMORY_DMA: NVOS47

	nvIoctlBase         = 200              // NV_IOCTL_BASE
	escCardInfo         = nvIoctlBase + 0  // NV_ESC_CARD_INFO
	escRegisterFD       = nvIoctlBase + 1  // NV_ESC_REGISTER_FD
	escExportToDMABufFD = nvIoctlBase + 17 // NV_ESC_EXPORT_TO_DMABUF_FD, on /dev/nvidia<minor>
	escWaitOpenComplete = nvIoctlBase + 18 // NV_ESC_WAIT_OPEN_COMPLETE
)

// UVM ioctls (uvm_ioctl.h, uvm_linux_ioctl.h): the command is the number
// itself, and the status sits in the parameters' rmStatus.
const (
	uvmInitialize           = 0x30000001 // UVM_INITIALIZE
	uvmDeinitialize         = 0x30000002 // UVM_DEINITIALIZE
	uvmRegisterGPUVASpace   = 25         // UVM_REGISTER_GPU_VASPACE
	uvmUnregisterGPUVASpace = 26         // UVM_UNREGISTER_GPU_VASPACE
	uvmRegisterChannel      = 27         // UVM_REGISTER_CHANNEL
	uvmUnregisterChannel    = 28         // UVM_UNREGISTER_CHANNEL
	uvmMapExternalAlloc     = 33         // UVM_MAP_EXTERNAL_ALLOCATION
	uvmFree                 = 34         // UVM_FREE
	uvmRegisterGPU          = 37         // UVM_REGISTER_GPU
	uvmUnregisterGPU        = 38         // UVM_UNREGISTER_GPU
	uvmUnmapExternal        = 66         // UVM_UNMAP_EXTERNAL
	uvmCreateExternalRange  = 73         // UVM_CREATE_EXTERNAL_RANGE
	uvmMMInitialize         = 75         // UVM_MM_INITIALIZE
)
