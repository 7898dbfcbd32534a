// Package hw is what the RM driver (nvdev) and compiled code share of an
// NVIDIA GPU, and what needs no GPU to test: the GPU's wire formats and the
// cubin loader. It encodes for Ampere (sm_80,
// sm_86), Ada (sm_89) and Hopper (sm_90).
//
// # The model
//
// A channel fetches 64-bit entries from its ring, the GPFIFO (Entry,
// Segment, AppendSegment); each entry names a segment of 32-bit words, a
// push buffer of method headers and their data (Inc, NonInc, Immd, OneInc).
// The methods a device emits are built by functions that append to the
// caller's []uint32 and allocate nothing where it has the capacity:
// binding engines (SetObject), waiting on and releasing 64-bit semaphores
// (Acquire, Release, ReleaseStamp, ComputeRelease, CopyRelease), copies
// and fills on the copy engine (CopyRows, Fill), the compute engine's
// windows, local memory and caches (SetWindows, LocalMemory,
// InvalidateShaderCaches), and the launch of a descriptor (SendPcas).
//
// A launch runs a kernel of a cubin. Parse reads a cubin and lays out its
// image (Cubin.Size, Cubin.Lay); each Kernel says what its launches need.
// MakeLaunch makes from a kernel a Launch: the template of its launch
// descriptor (QMD, Qmd) and of its constant bank 0, from which
// Launch.Stamp writes a launch that differs only in its grid, its groups,
// its dynamic shared memory, its parameters and where its constant bank 0
// lies. Stamping allocates nothing.
//
// The capability record of an RM device is a Gpu, under Key.
//
// # Generations
//
// Everything that differs between the generations lives in one table,
// Generation (Ampere, AmpereB, Ada, Hopper; ForSM, ForArch, ForRM): the
// classes, the descriptor's layout (QmdV03, 256 bytes, or QmdV04, 384
// bytes), where nvcc puts the parameters in constant bank 0 (0x160 or
// 0x210), the limits of a launch, the shared memory configurations, the
// widths of the engines' addresses, and which engines write 64-bit
// semaphore payloads. Where a generation lacks a 64-bit release of its
// own (GA100's compute and copy classes), the builders use the host's
// semaphore, which every channel runs.
//
// # Sources
//
// Each layout mirrors an NVIDIA header of open-gpu-doc or
// open-gpu-kernel-modules, which its doc comment names: clc56f.h and
// clc86f.h (methods, GPFIFO entries, host semaphores), clc6c0.h,
// clc7c0.h, clc9c0.h and clcbc0.h (compute methods), clc6b5.h, clc7b5.h
// and clc8b5.h (copy methods), clc6c0qmd.h and clcbc0qmd.h (descriptors).
// The tests place every descriptor field the driver sets against the bit
// ranges those headers publish, and check the loader against nvcc 13's
// own listings of the test cubins (cuobjdump -elf and -res-usage).
//
// # Decisions
//
// Where the sources leave a choice, the package does what tinygrad and
// NVK, which launch on these GPUs without CUDA, do, and says so:
//
//   - An image holds each kernel's code, the constant banks other than 0,
//     and the global data, each section aligned to 128 bytes (banks to
//     256), code first, and 4 KiB past its end for the instruction
//     prefetch (PrefetchSlack). Constant bank 0 is stamped per launch.
//   - Every relocation must name a symbol the image defines, and so must
//     every kernel's EIATTR_EXTERNS: an image that refers to vprintf or
//     __assertfail is refused whole (UndefinedError): no CUDA supplies them.
//   - A thread's local memory is its stack and 0x240 bytes above it, at
//     the top of its window (SHADER_LOCAL_MEMORY_HIGH_SIZE), where the
//     initial stack pointer 0xfffdc0 at constant bank 0 offset 0x28 puts
//     nvcc's stack.
//   - A group's shared memory is its static shared memory, the system's
//     reserved KiB (which nvcc counts on sm_90 and the driver adds on
//     sm_8x), and its dynamic shared memory rounded up to 128 bytes, all
//     rounded up to 256; a launch with dynamic shared memory asks for the
//     multiprocessor's configuration of the most shared memory.
//   - Each descriptor invalidates the texture and shader data caches as
//     its launch starts, and invalidates constant bank 0, whose memory the
//     driver reuses; the instruction cache is the driver's to invalidate
//     after it lays an image (InvalidateShaderCaches).
//
// # Unverified on Hopper
//
// No public non-CUDA launcher has run these encodings on an H100 or H200
// with all of the choices above; these are the ones the GPU must confirm:
// QMD_TYPE left at 0 (as NVK, which libcuda-research ran on an H100)
// rather than GRID_CTA; the release slots' one-word structure with a
// 64-bit payload; the shared memory configuration encoding above 100 KiB;
// HIGH rather than LOW local memory for nvcc's stack; the PCAS action
// INVALIDATE_PREFETCH_COPY_SCHEDULE (libcuda's); the copy engine's 64-bit
// semaphore payload and its remap fills; and the constant bank 0 words
// past 0x28 that nvcc's sm_90 code may read. Cluster launches (GPC CGA)
// are refused.
package hw
