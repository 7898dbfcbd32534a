package hw

// Compute-engine methods, mirroring clc6c0.h, clc7c0.h, clc9c0.h and
// clcbc0.h, whose offsets agree for every method here: the windows onto
// shared and local memory, the local memory, the cache invalidations and
// the launch of a descriptor (PCAS).

// Compute-class methods.
const (
	ComputeInvalidateTextureHeaderNoWFI = 0x244  // INVALIDATE_TEXTURE_HEADER_CACHE_NO_WFI
	ComputeInvalidateSkedCaches         = 0x298  // INVALIDATE_SKED_CACHES
	ComputeSharedWindowA                = 0x2a0  // SET_SHADER_SHARED_MEMORY_WINDOW_A, BASE_ADDRESS_UPPER 16:0
	ComputeSharedWindowB                = 0x2a4  // SET_SHADER_SHARED_MEMORY_WINDOW_B
	ComputeSendPcasA                    = 0x2b4  // SEND_PCAS_A, QMD_ADDRESS_SHIFTED8
	ComputeSendSignalingPcas2B          = 0x2c0  // SEND_SIGNALING_PCAS2_B, PCAS_ACTION 3:0
	ComputeLocalNonThrottledA           = 0x2e4  // SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A, SIZE_UPPER 7:0
	ComputeLocalNonThrottledB           = 0x2e8  // SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B, SIZE_LOWER
	ComputeLocalNonThrottledC           = 0x2ec  // SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C, MAX_SM_COUNT 8:0
	ComputeLocalMemoryA                 = 0x790  // SET_SHADER_LOCAL_MEMORY_A, ADDRESS_UPPER
	ComputeLocalMemoryB                 = 0x794  // SET_SHADER_LOCAL_MEMORY_B, ADDRESS_LOWER
	ComputeLocalWindowA                 = 0x7b0  // SET_SHADER_LOCAL_MEMORY_WINDOW_A, BASE_ADDRESS_UPPER 16:0
	ComputeLocalWindowB                 = 0x7b4  // SET_SHADER_LOCAL_MEMORY_WINDOW_B
	ComputeInvalidateTextureDataNoWFI   = 0x1288 // INVALIDATE_TEXTURE_DATA_CACHE_NO_WFI
	ComputeInvalidateSamplerNoWFI       = 0x1424 // INVALIDATE_SAMPLER_CACHE_NO_WFI
	ComputeInvalidateShaderCachesNoWFI  = 0x1698 // INVALIDATE_SHADER_CACHES_NO_WFI
)

// INVALIDATE_SHADER_CACHES_NO_WFI fields.
const (
	InvalidateInstruction = 1 << 0  // INSTRUCTION
	InvalidateGlobalData  = 1 << 4  // GLOBAL_DATA
	InvalidateConstant    = 1 << 12 // CONSTANT
)

// SEND_SIGNALING_PCAS2_B actions.
const (
	PcasInvalidateCopySchedule         = 0x3 // INVALIDATE_COPY_SCHEDULE (NVK)
	PcasPrefetchSchedule               = 0x9 // PREFETCH_SCHEDULE (tinygrad, Ampere and Ada)
	PcasInvalidatePrefetchCopySchedule = 0xa // INVALIDATE_PREFETCH_COPY_SCHEDULE (libcuda on Hopper)
)

// windowBits is the reach of the windows' BASE_ADDRESS_UPPER (16:0).
const windowBits = 49

// WindowWords, LocalMemoryWords and LaunchWords are the words SetWindows,
// LocalMemory and SendPcas append.
const (
	WindowWords      = 6
	LocalMemoryWords = 7
	LaunchWords      = 3
)

// SetWindows sets the compute engine's windows: the generic addresses at
// which kernels see their group's shared memory and their thread's local
// memory. On Hopper the shared window must be 4 GiB-aligned, and no memory
// the kernels address may lie in either window.
func SetWindows(b []uint32, w Windows) []uint32 {
	return append(b,
		Inc(SubCompute, ComputeSharedWindowA, 2), hi32(w.Shared, windowBits), lo32(w.Shared),
		Inc(SubCompute, ComputeLocalWindowA, 2), hi32(w.Local, windowBits), lo32(w.Local))
}

// LocalMemory gives the compute engine its local memory: the perTPC bytes
// of each TPC's share, from addr, for at most maxSMs multiprocessors at
// once (SET_SHADER_LOCAL_MEMORY_A/B, _NON_THROTTLED_A/B/C). Gpu.LocalBytes
// sizes it.
func LocalMemory(b []uint32, g *Generation, addr, perTPC uint64, maxSMs uint32) []uint32 {
	return append(b,
		Inc(SubCompute, ComputeLocalMemoryA, 2), hi32(addr, g.LocalMemoryBits), lo32(addr),
		Inc(SubCompute, ComputeLocalNonThrottledA, 3), uint32(perTPC>>32)&0xff, uint32(perTPC), maxSMs&0x1ff)
}

// InvalidateShaderCaches invalidates the compute engine's caches named by
// what (InvalidateInstruction, InvalidateGlobalData, InvalidateConstant),
// without waiting for idle: before the first launch of code laid where
// other code was, the instruction cache.
func InvalidateShaderCaches(b []uint32, what uint32) []uint32 {
	return append(b, Immd(SubCompute, ComputeInvalidateShaderCachesNoWFI, what&MaxImmediate))
}

// InvalidateTextureCaches invalidates the texture header, sampler and
// texture data caches, every line, without waiting for idle.
func InvalidateTextureCaches(b []uint32) []uint32 {
	return append(b,
		Immd(SubCompute, ComputeInvalidateTextureHeaderNoWFI, 0),
		Immd(SubCompute, ComputeInvalidateSamplerNoWFI, 0),
		Immd(SubCompute, ComputeInvalidateTextureDataNoWFI, 0))
}

// InvalidateSkedCaches invalidates the scheduler's caches of descriptors.
func InvalidateSkedCaches(b []uint32) []uint32 {
	return append(b, Immd(SubCompute, ComputeInvalidateSkedCaches, 0))
}

// SendPcas launches the descriptor at qmd, which is aligned to 256 bytes
// and lies below 2^40 (SEND_PCAS_A takes it shifted by 8), with the
// generation's scheduling action (SEND_SIGNALING_PCAS2_B).
func SendPcas(b []uint32, g *Generation, qmd uint64) []uint32 {
	return append(b,
		Inc(SubCompute, ComputeSendPcasA, 1), uint32(qmd>>8),
		Immd(SubCompute, ComputeSendSignalingPcas2B, g.PcasAction))
}
