// Package cudadev is rig's driver of NVIDIA GPUs through the CUDA driver
// library, libcuda, built with CGO_ENABLED=0: it
// loads libcuda with purego and calls it through purego.SyscallN, or on
// the hot path through internal/ccall.
//
//	dev, err := rig.Open(ctx, cudadev.GPU(0))
//
// A device is one GPU, opened on its primary context with two non-blocking
// streams of its own, its queues "COMPUTE:0" (launches, copies, fills) and
// "COPY:0" (copies, fills). Its timeline word is the word rig gives the
// opener, in rig's array of words, which the first device of the process
// registers for every context (cuMemHostRegister, portable and mapped);
// the streams write it themselves (cuStreamWriteValue64). Where the word
// lies outside the array, or the GPU registers no host memory, the word is
// eight bytes of the device's own page-locked memory, read through
// Signaled.
//
// # Timelines
//
// A GPU holds several devices at once, one per timeline:
// Timeline(i, k) opens the kth, and GPU(i) is Timeline(i, 0). Each
// timeline is a rig device of its own: its own word, its own two streams
// in the GPU's primary context, its own submit path and supervisor, so
// that submitters of different timelines share no lock and the GPU runs
// their work side by side, as it runs the work of two streams. A timeline
// has one device at a time; the GPU's primary context is retained once, by
// its first device, and kept for the process, with the modules in it.
// Memory of one GPU lies at the same addresses for every timeline of it:
// Peer is true between them and MapPeer returns the region as it is, with
// no mapping. A timeline waits for another's value on the GPU, with a
// stream wait on the other's word (cuStreamWaitValue64), as for any word
// of rig's array. A fault of the context's work loses every device of the
// context: CUDA keeps the fault for the whole context, and each device
// names the fault domain "cuda", every CUDA device of the process.
//
// # Loading
//
// libcuda is loaded by its standard name (libcuda.so.1, then libcuda.so) at
// the first call of Count, Buses or an opener's make; a load that fails
// before cuInit closes the library (dlclose), one that fails after it keeps
// a single reference for the process's life (libcuda's teardown at a close
// after cuInit can crash), a failed load is tried again at the next call,
// and its error gives dlopen's reason for each name. dlerror's message
// belongs to the OS thread, so the load locks the goroutine to its thread
// from dlopen to dlerror. Every function of CUDA 12.4 the driver calls is
// resolved once, by its exported, versioned name (cuStreamWriteValue64_v2
// and its kind), into one table; one place calls libcuda and turns a
// CUresult into an *Error, printed with CUDA's name and text:
// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".
//
// GPU(i) is the ith GPU by PCI bus address among those CUDA sees, whatever
// CUDA_DEVICE_ORDER says. Open(i, Config) is the same with a configuration
// (a timeline, a shorter hang bound for tests).
//
// # Threads and contexts
//
// libcuda's current context belongs to the OS thread, and goroutines move
// between threads. Every call that needs a context locks the goroutine to
// its thread (runtime.LockOSThread), pushes the device's primary context
// (cuCtxPushCurrent) and pops it before it returns (cuCtxPopCurrent), which
// restores the thread's previous context; where CUDA refuses the push it
// sets the context and sets the previous one back. A Go thread usually has
// no context current, so a get-and-compare would switch at every call:
// the push and pop are two calls where that takes three.
//
// The calls of the hot path need no context current: each names a stream,
// and a stream names its context (cuStreamGetCtx). Submit, Commit and
// Sleep's query make them on whatever thread runs them, with the thread's
// context left as it is, which saves the push and the pop, two calls of
// three for a one-launch submission. The open checks it: on a locked
// thread with no context current it records an event on one stream, has
// the other wait for it and queries it (CUDA 13 with driver 580 runs
// launches, stream memory operations, copies, memsets, events and graph
// launches so, with no context or another one current:
// testdata/ctxprobe.c). A call CUDA
// refuses all the same with CUDA_ERROR_INVALID_CONTEXT enters the context
// and runs again, and the device makes its context current for every
// later submission. A submission that is timed (the stamps' events), runs
// a C fill function (whose code may call CUDA in the current context) or
// follows a failure runs in the context, as does a first submission that
// makes events; Config.CurrentContext makes it current for all of them.
//
// Any goroutine may call any method, as rig's contract
// allows; rig's submit lock orders Room, Submit and Commit, which keep the
// hot path's state; the supervisor alone calls Sleep and Stop.
//
// The hot path passes its arguments in a frame (an internal/ccall.Frame
// of the device's, called through the runtime's cgocall as purego does),
// so that a call allocates nothing and skips SyscallN's copies of its
// arguments (a variadic call of SyscallN with literal arguments would
// also allocate its slice).
// Its arguments hold addresses of heap memory only, which does not move:
// the frame itself, the device's structs, and the parameters of rig's
// runs. Colder calls go through a //go:uintptrescapes wrapper.
//
// # Work
//
// Submit enqueues a value's waits on the stream its work starts on, in
// batches of at most 255 (cuStreamBatchMemOp; one wait is one
// cuStreamWaitValue64), with CU_STREAM_WAIT_VALUE_GEQ, which cuda.h states
// is "(int64_t)(*addr - value) >= 0 ... a cyclic comparison which ignores
// wraparound" for 64-bit words: rig's circular order (device.AtLeast). It then
// enqueues the value's parts in order on their streams. CUDA events order
// the streams: a value starts on the stream the last value ended on where
// it uses it, its other stream waits for that one after the waits, and a
// value that used both streams ends with a join, so that value v's work
// runs after v-1's on both streams; a part with After on the other stream
// waits for an event recorded after the part it names. A value that uses
// one stream, as most do, costs no event.
//
// A launch is cuLaunchKernel with its parameters passed as one buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE), only the bytes the function
// reads. A copy is one cuMemcpyAsync where its rows are contiguous, one
// cuMemcpy2DAsync otherwise, or one copy per row where a pitch exceeds
// CU_DEVICE_ATTRIBUTE_MAX_PITCH or CUDA refuses the 2D copy; a copy that
// fills is one cuMemsetD8Async (cuMemsetD2D8Async for pitched rows), or
// of four-byte words cuMemsetD32Async (cuMemsetD2D32Async).
// CUDA copies between two host regions with the calling thread once the
// stream's earlier work completed (seen on the H200 with CUDA 13.0): a
// copy part between two Pinned or MapHost buffers makes Submit wait for
// the device's work, unlike every other part. A
// fill part's function is either a C function pointer (a uintptr), called
// as
//
//	CUresult f(CUstream stream, uintptr_t arg, uint64_t value)
//
// with the device's context current, value being the submission's value;
// or a cuda.Exec, an executable graph of the capability record, which the
// part launches on its stream (cuGraphLaunch): rig.Fill(exec, 0).
//
// Submit commits a value (cuStreamWriteValue64 after a system-wide fence,
// on the stream the value ended on) where the last commit is 64 values
// back, and returns Pending otherwise; Commit(v) writes the last value
// submitted unless a write of v or later is enqueued. Room never returns
// later or grow: Submit and Commit block while a stream is full. Room
// refuses a launch on queue 1, a block of 0 groups or threads along an
// axis, more groups or threads along an axis than the GPU allows, more
// threads per group or dynamic shared memory than the function's limits,
// a grid that is not a multiple of the clusters of groups the function
// requires (__cluster_dims__), a function that needs a cluster size set
// at its launch, which rig's launches do not set, fewer parameter bytes
// than the function reads, a part of another kind
// or of another driver, and a wait on a word outside rig's array; it
// names the part and the limit.
//
// # Memory
//
// Device memory is cuMemAlloc's; Pinned memory is whole pages of Go's heap
// that CUDA page-locks for every device (cuMemHostRegister, portable and
// mapped), not write-combined, so that a slice of it stays valid after
// Free: the last free unlocks the pages and the garbage collector frees
// them once no slice of them is left (where CUDA refuses the unlock, as
// after a fault of the GPU's work, the process keeps them, locked and
// mapped as CUDA keeps them). Mapped returns device.ErrNoMemory,
// since CUDA maps no GPU memory for the host. MapHost page-locks ranges
// for every device (cuMemHostRegister, portable and mapped) and counts the
// regions over each range, a Pinned allocation's included, on any device
// of the process; the last free unlocks it. A range inside one allocation
// CUDA locked for another owner, by the range CUDA gives for it, is mapped
// as it is, uncounted. A range across ranges, or across the edge of one,
// is refused (device.ErrNever): counted against none, it would stay mapped
// after the free that unlocks a range's pages. DMA exports the allocation
// as a dma-buf (cuMemGetHandleForAddressRange).
//
// # Code
//
// Image loads a cubin, a fatbin or PTX (NUL-terminated where it is not)
// with cuModuleLoadData, which takes no length: Image first refuses a
// cubin or fatbin shorter than its headers say, and a fatbin whose
// uncompressed cubin is, naming the entry. It then places every
// function's code whatever CUDA_MODULE_LOADING asks
// (cuModuleEnumerateFunctions and cuFuncLoad), and lets each function
// take as much dynamic shared memory as a block can have, less its static
// shared memory. Entry returns the function's
// CUfunction, its most threads per group and dynamic shared memory, and
// the end of its parameters (cuFuncGetParamInfo); it refuses, with an
// error rather than a panic, a kernel of more parameter bytes than CUDA
// launches: 32,764 on compute capability 7.0 and later, 4,096 below. It
// refuses too, naming the kernel, a layout that CUDA states of more than
// 32,764 parameters (a byte or more each), or whose offsets go backwards,
// overlap or pass 32,764 bytes; so it asks CUDA 32,765 times at most.
// Prepare does nothing, since entries make nothing slow.
//
// # Profiles
//
// While rig takes a profile, Submit stamps each value with timing events
// in 1,024 reusable stamps, and Settle converts them to the host's clock
// (device.Now) in value order, against a reference event measured at open
// and again every 8 s of timed submits. A measure
// that CUDA refuses with an error of a call alone leaves the last
// reference, and the submit goes on; a fault of the context's work found
// there loses the device.
//
// # Failure and stopping
//
// A fault of the GPU's work (an illegal or misaligned address, a trap)
// loses the device with CUDA's error name and text, as Sleep, whose
// synchronisation returns it (or cuStreamQuery, each millisecond where it
// polls), or the next call finds it; rig loses the other CUDA devices with
// it, the GPU's other timelines among them (fault domain "cuda"). A fault
// of the GPU's work ends the GPU for the process: CUDA keeps it in the
// GPU's primary context as a sticky error, which no call clears and every
// later call of the context returns, and the process keeps that context.
// The GPU cannot be opened again until the process restarts: its next
// make, of any timeline, returns an error that names the fault and matches
// ErrFaulted, and so does the make of a GPU whose context a fault ended
// outside rig.
// After a failure every later Submit enqueues none of its parts and
// returns the same failure, while its value is still written after its
// waits where the context still runs, on a stream that CUDA ordered
// after all the work enqueued: where CUDA refuses every order between the
// streams, the word stays short of the value, and Stop leaves it to the
// stopped device's kept work to raise. Sleep reads the word, yielding, for
// 20 µs, then blocks through CUDA's blocking primitives: it records an
// event made with CU_EVENT_BLOCKING_SYNC behind each stream's work, and a
// helper goroutine per stream waits for it in cuEventSynchronize, which
// sleeps in the kernel until the GPU's interrupt (the helper holds its
// thread, with the context current where CUDA needs one, for the call
// alone, so that the supervisor it wakes runs on the thread the interrupt
// woke); Sleep still returns after its bound where the work runs longer.
// Where no recorded work is left that would move the word, it looks at
// the word in nanosleeps of 20 µs (time.Sleep sleeps a millisecond or
// more when the runtime has nothing else to run). The helpers end at
// Stop, once the synchronisation in flight returns.
//
// Stop does not wait for the work: where it ended (both streams idle, or a
// fault ended the context's work) it writes the last value into the word;
// otherwise it commits the last value and keeps an event behind the work on
// each stream (the stream itself where CUDA makes or records no event),
// which a goroutine of the stopped device's and the GPU's next open read:
// the next open of the same timeline returns an error while they are
// pending, and the goroutine, or an open of any timeline, raises the word to
// the last value where a fault ended the work, or where the work ended and
// CUDA refused Stop's write of that value, so that rig gives the device's
// memory back. The goroutine returns once the work ended. Stop then destroys
// the streams and events it does not keep, which CUDA frees once their work
// ends. The primary context, and the modules in it, stay for the process.
//
// # Capability
//
// Capability returns an *cuda.Record: the functions of the CUDA library
// the device was opened with, the device's context and streams, and the
// maker of CUDA graphs in its context: graphs of kernel,
// memcpy, memset, event and empty nodes, instantiated, updated and
// launched as fill parts. A graph that records a function of an image
// keeps the image's module loaded until it is destroyed; where CUDA
// refuses the unload that the last such graph's Destroy makes for an
// image rig unloaded, Destroy returns the refusal and the device's Stop
// tries again, returning CUDA's refusal to Close.
package cudadev
