package cudadev

// The structs of cuda.h (CUDA 12.4 and later) that the driver hands to
// libcuda, with their C names. The tests check sizes and offsets against
// cuda.h's layout on 64-bit Linux.

// CUmemorytype.
const memoryTypeUnified = 4

// memcpy2D is CUDA_MEMCPY2D (CUDA_MEMCPY2D_v2_st): 128 bytes.
type memcpy2D struct {
	srcXInBytes, srcY uint64
	srcMemoryType     uint32
	_                 uint32
	srcHost           uintptr
	srcDevice         uint64
	srcArray          uintptr
	srcPitch          uint64

	dstXInBytes, dstY uint64
	dstMemoryType     uint32
	_                 uint32
	dstHost           uintptr
	dstDevice         uint64
	dstArray          uintptr
	dstPitch          uint64

	widthInBytes, height uint64
}

// memcpy3D is CUDA_MEMCPY3D (CUDA_MEMCPY3D_v2_st): 200 bytes.
type memcpy3D struct {
	srcXInBytes, srcY, srcZ, srcLOD uint64
	srcMemoryType                   uint32
	_                               uint32
	srcHost                         uintptr
	srcDevice                       uint64
	srcArray                        uintptr
	reserved0                       uintptr
	srcPitch, srcHeight             uint64

	dstXInBytes, dstY, dstZ, dstLOD uint64
	dstMemoryType                   uint32
	_                               uint32
	dstHost                         uintptr
	dstDevice                       uint64
	dstArray                        uintptr
	reserved1                       uintptr
	dstPitch, dstHeight             uint64

	widthInBytes, height, depth uint64
}

// memsetParams is CUDA_MEMSET_NODE_PARAMS (CUDA_MEMSET_NODE_PARAMS_v1): 40
// bytes.
type memsetParams struct {
	dst         uint64
	pitch       uint64
	value       uint32
	elementSize uint32
	width       uint64
	height      uint64
}

// kernelNodeParams is CUDA_KERNEL_NODE_PARAMS_v2: 72 bytes.
type kernelNodeParams struct {
	fn                                 uintptr
	gridDimX, gridDimY, gridDimZ       uint32
	blockDimX, blockDimY, blockDimZ    uint32
	sharedMemBytes                     uint32
	_                                  uint32
	kernelParams, extra, kern, kernCtx uintptr
}

// CUstreamBatchMemOpType and CUstreamWaitValue_flags.
const (
	memOpWaitValue64 = 4
	// waitValueGEQ is CU_STREAM_WAIT_VALUE_GEQ: cuda.h states "Wait until
	// (int32_t)(*addr - value) >= 0 (or int64_t for 64 bit values). Note
	// this is a cyclic comparison which ignores wraparound." That is rig's
	// circular order (device.AtLeast) for 64-bit words.
	waitValueGEQ = 0
)

// batchOp is CUstreamBatchMemOpParams as its waitValue member: 48 bytes.
type batchOp struct {
	operation uint32
	_         uint32
	address   uint64
	value64   uint64
	flags     uint32
	_         uint32
	alias     uint64
	_         uint64
}

// maxBatch is the most operations one cuStreamBatchMemOp takes: CUDA's
// reference asks for fewer than 256.
const maxBatch = 255

// setWait makes op the wait of the device address addr for value, in
// circular order.
func (op *batchOp) setWait(addr, value uint64) {
	*op = batchOp{operation: memOpWaitValue64, address: addr, value64: value, flags: waitValueGEQ}
}

// CU_LAUNCH_PARAM_* markers of cuLaunchKernel's extra.
const (
	launchParamEnd           = 0
	launchParamBufferPointer = 1
	launchParamBufferSize    = 2
)
