package nvidia

// The parameters of the UVM ioctls on /dev/nvidia-uvm, release 580
// (kernel-open/nvidia-uvm/uvm_ioctl.h and uvm_linux_ioctl.h), are in
// zz_rm_generated.go. Each ends in the RM status the UVM driver returns.

// UUID is a GPU's UUID (NvProcessorUuid), as NV2080_CTRL_CMD_GPU_GET_GID_INFO
// returns it in binary form.
type UUID [16]byte

// UvmGpuMappingType and UvmGpuCachingType values (uvm_types.h).
const (
	uvmMappingReadWriteAtomic = 1 // UvmGpuMappingTypeReadWriteAtomic
	uvmCachingDefault         = 0 // UvmGpuCachingTypeDefault
)
