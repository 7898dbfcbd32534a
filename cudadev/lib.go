package cudadev

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/rig-go/rig/internal/ccall"
)

// This file is the one place that loads libcuda and calls it: the table of
// resolved symbols, the frames that carry the hot path's arguments to
// internal/ccall (and the colder calls' to purego.SyscallN), and
// the conversion of CUresult into errors.

// minVersion is the oldest CUDA the driver runs on: 12.4, driver 550, which
// added cuFuncGetParamInfo, cuModuleEnumerateFunctions and cuFuncLoad.
const minVersion = 12040

// libNames are libcuda's standard names on Linux, in the order tried.
var libNames = []string{"libcuda.so.1", "libcuda.so"}

// table holds libcuda's handle and the functions the driver calls. Each
// field names the symbol it holds by cuda.h's name; symbols lists the
// exported, versioned names.
type table struct {
	handle  uintptr
	version int
	// noDevice: cuInit found no GPU (CUDA_ERROR_NO_DEVICE), as where
	// CUDA_VISIBLE_DEVICES names none: CUDA sees none for the process.
	noDevice bool

	cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString             uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetAttribute, cuDeviceGetPCIBusId uintptr
	cuDeviceTotalMem, cuDeviceCanAccessPeer                                  uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxGetState                     uintptr
	cuDevicePrimaryCtxSetFlags                                               uintptr
	cuCtxGetCurrent, cuCtxSetCurrent, cuCtxGetLimit, cuCtxSetLimit           uintptr
	cuCtxPushCurrent, cuCtxPopCurrent                                        uintptr
	cuCtxEnablePeerAccess                                                    uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamQuery, cuStreamWaitEvent        uintptr
	cuStreamWaitValue64, cuStreamWriteValue64, cuStreamBatchMemOp            uintptr
	cuEventCreate, cuEventDestroy, cuEventRecord, cuEventQuery               uintptr
	cuEventSynchronize, cuEventElapsedTime                                   uintptr
	cuMemAlloc, cuMemFree, cuMemHostAlloc, cuMemFreeHost                     uintptr
	cuMemHostRegister, cuMemHostUnregister, cuMemHostGetDevicePointer        uintptr
	cuPointerGetAttribute, cuMemGetAddressRange                              uintptr
	cuMemGetHandleForAddressRange                                            uintptr
	cuMemcpyAsync, cuMemcpy2DAsync, cuMemsetD8Async, cuMemsetD2D8Async       uintptr
	cuMemsetD32Async, cuMemsetD2D32Async                                     uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuModuleGetGlobal uintptr
	cuModuleGetFunctionCount, cuModuleEnumerateFunctions, cuFuncGetName      uintptr
	cuFuncLoad, cuFuncGetAttribute, cuFuncSetAttribute, cuFuncGetParamInfo   uintptr
	cuLaunchKernel                                                           uintptr
	cuGraphCreate, cuGraphDestroy, cuGraphAddKernelNode                      uintptr
	cuGraphAddMemcpyNode, cuGraphAddMemsetNode, cuGraphAddEmptyNode          uintptr
	cuGraphAddEventRecordNode, cuGraphAddEventWaitNode                       uintptr
	cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecDestroy           uintptr
	cuGraphExecKernelNodeSetParams, cuGraphExecMemcpyNodeSetParams           uintptr
	cuGraphExecMemsetNodeSetParams, cuGraphUpload                            uintptr
}

// symbol names a function of the table: the exported names to try, first
// first (the versioned symbol that cuda.h's name stands for).
type symbol struct {
	at    func(t *table) *uintptr
	names []string
}

func sym(at func(t *table) *uintptr, names ...string) symbol { return symbol{at, names} }

// symbols is every function the driver calls. All are CUDA 12.4's; a
// library that lacks one is refused.
var symbols = []symbol{
	sym(func(t *table) *uintptr { return &t.cuInit }, "cuInit"),
	sym(func(t *table) *uintptr { return &t.cuDriverGetVersion }, "cuDriverGetVersion"),
	sym(func(t *table) *uintptr { return &t.cuGetErrorName }, "cuGetErrorName"),
	sym(func(t *table) *uintptr { return &t.cuGetErrorString }, "cuGetErrorString"),
	sym(func(t *table) *uintptr { return &t.cuDeviceGetCount }, "cuDeviceGetCount"),
	sym(func(t *table) *uintptr { return &t.cuDeviceGet }, "cuDeviceGet"),
	sym(func(t *table) *uintptr { return &t.cuDeviceGetAttribute }, "cuDeviceGetAttribute"),
	sym(func(t *table) *uintptr { return &t.cuDeviceGetPCIBusId }, "cuDeviceGetPCIBusId"),
	sym(func(t *table) *uintptr { return &t.cuDeviceTotalMem }, "cuDeviceTotalMem_v2"),
	sym(func(t *table) *uintptr { return &t.cuDeviceCanAccessPeer }, "cuDeviceCanAccessPeer"),
	sym(func(t *table) *uintptr { return &t.cuDevicePrimaryCtxRetain }, "cuDevicePrimaryCtxRetain"),
	sym(func(t *table) *uintptr { return &t.cuDevicePrimaryCtxGetState }, "cuDevicePrimaryCtxGetState"),
	sym(func(t *table) *uintptr { return &t.cuDevicePrimaryCtxSetFlags }, "cuDevicePrimaryCtxSetFlags_v2"),
	sym(func(t *table) *uintptr { return &t.cuCtxGetCurrent }, "cuCtxGetCurrent"),
	sym(func(t *table) *uintptr { return &t.cuCtxSetCurrent }, "cuCtxSetCurrent"),
	sym(func(t *table) *uintptr { return &t.cuCtxPushCurrent }, "cuCtxPushCurrent_v2"),
	sym(func(t *table) *uintptr { return &t.cuCtxPopCurrent }, "cuCtxPopCurrent_v2"),
	sym(func(t *table) *uintptr { return &t.cuCtxGetLimit }, "cuCtxGetLimit"),
	sym(func(t *table) *uintptr { return &t.cuCtxSetLimit }, "cuCtxSetLimit"),
	sym(func(t *table) *uintptr { return &t.cuCtxEnablePeerAccess }, "cuCtxEnablePeerAccess"),
	sym(func(t *table) *uintptr { return &t.cuStreamCreate }, "cuStreamCreate"),
	sym(func(t *table) *uintptr { return &t.cuStreamDestroy }, "cuStreamDestroy_v2"),
	sym(func(t *table) *uintptr { return &t.cuStreamQuery }, "cuStreamQuery"),
	sym(func(t *table) *uintptr { return &t.cuStreamWaitEvent }, "cuStreamWaitEvent"),
	sym(func(t *table) *uintptr { return &t.cuStreamWaitValue64 }, "cuStreamWaitValue64_v2"),
	sym(func(t *table) *uintptr { return &t.cuStreamWriteValue64 }, "cuStreamWriteValue64_v2"),
	sym(func(t *table) *uintptr { return &t.cuStreamBatchMemOp }, "cuStreamBatchMemOp_v2"),
	sym(func(t *table) *uintptr { return &t.cuEventCreate }, "cuEventCreate"),
	sym(func(t *table) *uintptr { return &t.cuEventDestroy }, "cuEventDestroy_v2"),
	sym(func(t *table) *uintptr { return &t.cuEventRecord }, "cuEventRecord"),
	sym(func(t *table) *uintptr { return &t.cuEventQuery }, "cuEventQuery"),
	sym(func(t *table) *uintptr { return &t.cuEventSynchronize }, "cuEventSynchronize"),
	sym(func(t *table) *uintptr { return &t.cuEventElapsedTime }, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
	sym(func(t *table) *uintptr { return &t.cuMemAlloc }, "cuMemAlloc_v2"),
	sym(func(t *table) *uintptr { return &t.cuMemFree }, "cuMemFree_v2"),
	sym(func(t *table) *uintptr { return &t.cuMemHostAlloc }, "cuMemHostAlloc"),
	sym(func(t *table) *uintptr { return &t.cuMemFreeHost }, "cuMemFreeHost"),
	sym(func(t *table) *uintptr { return &t.cuMemHostRegister }, "cuMemHostRegister_v2"),
	sym(func(t *table) *uintptr { return &t.cuMemHostUnregister }, "cuMemHostUnregister"),
	sym(func(t *table) *uintptr { return &t.cuMemHostGetDevicePointer }, "cuMemHostGetDevicePointer_v2"),
	sym(func(t *table) *uintptr { return &t.cuPointerGetAttribute }, "cuPointerGetAttribute"),
	sym(func(t *table) *uintptr { return &t.cuMemGetAddressRange }, "cuMemGetAddressRange_v2"),
	sym(func(t *table) *uintptr { return &t.cuMemGetHandleForAddressRange }, "cuMemGetHandleForAddressRange"),
	sym(func(t *table) *uintptr { return &t.cuMemcpyAsync }, "cuMemcpyAsync"),
	sym(func(t *table) *uintptr { return &t.cuMemcpy2DAsync }, "cuMemcpy2DAsync_v2"),
	sym(func(t *table) *uintptr { return &t.cuMemsetD8Async }, "cuMemsetD8Async"),
	sym(func(t *table) *uintptr { return &t.cuMemsetD2D8Async }, "cuMemsetD2D8Async"),
	sym(func(t *table) *uintptr { return &t.cuMemsetD32Async }, "cuMemsetD32Async"),
	sym(func(t *table) *uintptr { return &t.cuMemsetD2D32Async }, "cuMemsetD2D32Async"),
	sym(func(t *table) *uintptr { return &t.cuModuleLoadData }, "cuModuleLoadData"),
	sym(func(t *table) *uintptr { return &t.cuModuleUnload }, "cuModuleUnload"),
	sym(func(t *table) *uintptr { return &t.cuModuleGetFunction }, "cuModuleGetFunction"),
	sym(func(t *table) *uintptr { return &t.cuModuleGetGlobal }, "cuModuleGetGlobal_v2"),
	sym(func(t *table) *uintptr { return &t.cuModuleGetFunctionCount }, "cuModuleGetFunctionCount"),
	sym(func(t *table) *uintptr { return &t.cuModuleEnumerateFunctions }, "cuModuleEnumerateFunctions"),
	sym(func(t *table) *uintptr { return &t.cuFuncGetName }, "cuFuncGetName"),
	sym(func(t *table) *uintptr { return &t.cuFuncLoad }, "cuFuncLoad"),
	sym(func(t *table) *uintptr { return &t.cuFuncGetAttribute }, "cuFuncGetAttribute"),
	sym(func(t *table) *uintptr { return &t.cuFuncSetAttribute }, "cuFuncSetAttribute"),
	sym(func(t *table) *uintptr { return &t.cuFuncGetParamInfo }, "cuFuncGetParamInfo"),
	sym(func(t *table) *uintptr { return &t.cuLaunchKernel }, "cuLaunchKernel"),
	sym(func(t *table) *uintptr { return &t.cuGraphCreate }, "cuGraphCreate"),
	sym(func(t *table) *uintptr { return &t.cuGraphDestroy }, "cuGraphDestroy"),
	sym(func(t *table) *uintptr { return &t.cuGraphAddKernelNode }, "cuGraphAddKernelNode_v2"),
	sym(func(t *table) *uintptr { return &t.cuGraphAddMemcpyNode }, "cuGraphAddMemcpyNode"),
	sym(func(t *table) *uintptr { return &t.cuGraphAddMemsetNode }, "cuGraphAddMemsetNode"),
	sym(func(t *table) *uintptr { return &t.cuGraphAddEmptyNode }, "cuGraphAddEmptyNode"),
	sym(func(t *table) *uintptr { return &t.cuGraphAddEventRecordNode }, "cuGraphAddEventRecordNode"),
	sym(func(t *table) *uintptr { return &t.cuGraphAddEventWaitNode }, "cuGraphAddEventWaitNode"),
	sym(func(t *table) *uintptr { return &t.cuGraphInstantiateWithFlags }, "cuGraphInstantiateWithFlags"),
	sym(func(t *table) *uintptr { return &t.cuGraphLaunch }, "cuGraphLaunch"),
	sym(func(t *table) *uintptr { return &t.cuGraphExecDestroy }, "cuGraphExecDestroy"),
	sym(func(t *table) *uintptr { return &t.cuGraphExecKernelNodeSetParams }, "cuGraphExecKernelNodeSetParams_v2"),
	sym(func(t *table) *uintptr { return &t.cuGraphExecMemcpyNodeSetParams }, "cuGraphExecMemcpyNodeSetParams"),
	sym(func(t *table) *uintptr { return &t.cuGraphExecMemsetNodeSetParams }, "cuGraphExecMemsetNodeSetParams"),
	sym(func(t *table) *uintptr { return &t.cuGraphUpload }, "cuGraphUpload"),
}

var (
	libMu sync.Mutex
	lib   *table // set once a load and cuInit succeeded; never reset
	// loads counts the attempts to load the library, for tests.
	loads int
)

// load returns the table, loading libcuda and initialising CUDA at the
// first call that succeeds. A failed load is tried again at the next call.
func load() (*table, error) {
	libMu.Lock()
	defer libMu.Unlock()
	if lib != nil {
		return lib, nil
	}
	loads++
	t, err := openLib(sysLoader)
	if err != nil {
		return nil, err
	}
	lib = t
	return t, nil
}

// loader is the dynamic loader as openLib uses it: open opens the first
// library of names that loads, sym resolves a symbol of a library that
// open opened, and close gives back a library that open opened.
type loader struct {
	open  func(names []string) (uintptr, error)
	sym   func(h uintptr, name string) (uintptr, error)
	close func(h uintptr) error
}

// sysLoader is the system's dynamic loader.
var sysLoader = loader{open: dlopenFirst, sym: dlsym, close: dlclose}

// openLib opens libcuda with ld and returns its table, with CUDA
// initialised. Where a symbol is missing, cuInit has not run and it closes
// the library before it returns the error. Where a later step fails
// (cuInit refused, the version refused or older than 12.4), cuInit has
// run, and libcuda's own teardown at a close after it can crash the
// process: it keeps one reference to the library for the process's life
// (keptLib), and closes the references of later failed loads, which leave
// the library mapped behind that one.
func openLib(ld loader) (*table, error) {
	if err := osSupported(); err != nil {
		return nil, err
	}
	h, err := ld.open(libNames)
	if err != nil {
		return nil, err
	}
	t, inited, err := startLib(ld, h)
	if err != nil {
		keptLib.Lock()
		keep := inited && !keptLib.held
		if keep {
			keptLib.held = true
		}
		keptLib.Unlock()
		if !keep {
			if cerr := ld.close(h); cerr != nil {
				err = fmt.Errorf("%w; closing the CUDA library: %v", err, cerr)
			}
		}
		return nil, err
	}
	return t, nil
}

// keptLib records that a failed load after cuInit kept its reference to
// the library, which no load closes.
var keptLib struct {
	sync.Mutex
	held bool
}

// startLib resolves the symbols of the library h and initialises CUDA,
// returning the table, and whether cuInit ran.
func startLib(ld loader, h uintptr) (*table, bool, error) {
	t := &table{handle: h}
	var missing []string
	for _, s := range symbols {
		var addr uintptr
		for _, n := range s.names {
			if a, err := ld.sym(h, n); err == nil && a != 0 {
				addr = a
				break
			}
		}
		if addr == 0 {
			missing = append(missing, s.names[0])
		}
		*s.at(t) = addr
	}
	if len(missing) > 0 {
		return nil, false, fmt.Errorf("cudadev: the CUDA library lacks %s, of CUDA 12.4 (driver 550) or later", strings.Join(missing, ", "))
	}
	if err := t.start(); err != nil {
		return nil, true, err
	}
	return t, true, nil
}

// start initialises CUDA and checks its version. A CUDA that sees no GPU
// (cuInit's CUDA_ERROR_NO_DEVICE, as where CUDA_VISIBLE_DEVICES names
// none) is initialised with none: CUDA answers the same for the rest of
// the process, and refuses every later call as not initialised.
func (t *table) start() error {
	switch r := t.call(t.cuInit, 0); r {
	case 0:
	case errNoDevice:
		t.noDevice = true
	default:
		return fmt.Errorf("cudadev: initialising CUDA: %w", t.err(r))
	}
	var v int32
	if r := t.call(t.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))); r != 0 {
		return fmt.Errorf("cudadev: reading CUDA's version: %w", t.err(r))
	}
	t.version = int(v)
	if t.version < minVersion {
		return fmt.Errorf("cudadev: the CUDA library is CUDA %s; rig needs CUDA 12.4 (driver 550) or later", versionString(t.version))
	}
	return nil
}

// dlopenFirst opens the first library of names that loads, or returns an
// error with each one's reason. dlerror's message belongs to the thread
// whose dlopen failed, so the goroutine stays on its thread from each
// dlopen to its dlerror (purego.Dlopen calls both).
func dlopenFirst(names []string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	why := make([]string, 0, len(names))
	for _, n := range names {
		h, err := dlopen(n)
		if err == nil {
			return h, nil
		}
		text := err.Error()
		if text == "" {
			text = n + ": dlopen failed and dlerror gave no reason"
		}
		why = append(why, text)
	}
	return 0, fmt.Errorf("cudadev: loading the CUDA library: %s", strings.Join(why, "; "))
}

// versionString prints a CUDA version such as 12040 as "12.4".
func versionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// lookup returns the address of libcuda's function name, or 0.
func (t *table) lookup(name string) uintptr {
	a, err := dlsym(t.handle, name)
	if err != nil {
		return 0
	}
	return a
}

// result is a CUresult.
type result uint32

// CUresult values the driver tells apart.
const (
	errInvalidValue        result = 1
	errOutOfMemory         result = 2
	errNoDevice            result = 100
	errInvalidContext      result = 201
	errECCUncorrectable    result = 214
	errNVLinkUncorrectable result = 220
	errContained           result = 226
	errNotReady            result = 600
	errIllegalAddress      result = 700
	errLaunchTimeout       result = 702
	errPeerAlreadyEnabled  result = 704
	errContextDestroyed    result = 709
	errAssert              result = 710
	errHostAlreadyRegister result = 712
	errHostNotRegistered   result = 713
	errHardwareStack       result = 714
	errIllegalInstruction  result = 715
	errMisalignedAddress   result = 716
	errInvalidAddressSpace result = 717
	errInvalidPC           result = 718
	errLaunchFailed        result = 719
	errTensorMemoryLeak    result = 721
	errMPSClientTerminated result = 810
	errExternalDevice      result = 911
	errUnknown             result = 999
)

// sticky reports whether r is an error after which CUDA returns every
// later call of the context with it: a fault of the GPU's work, and the
// errors that leave the context unusable all the same (an uncorrectable
// ECC or NVLink error, an error the GPU contained, a destroyed context,
// tensor memory left allocated, a terminated MPS client), and CUDA's
// unknown error, taken as one, since
// nothing says that the context still runs.
func (r result) sticky() bool {
	switch r {
	case errIllegalAddress, errLaunchTimeout, errAssert, errHardwareStack,
		errIllegalInstruction, errMisalignedAddress, errInvalidAddressSpace,
		errInvalidPC, errLaunchFailed, errExternalDevice,
		errECCUncorrectable, errNVLinkUncorrectable, errContained,
		errContextDestroyed, errTensorMemoryLeak, errMPSClientTerminated,
		errUnknown:
		return true
	}
	return false
}

// Error is an error of the CUDA library: a CUresult with CUDA's name and
// text for it.
type Error struct {
	// Code is the CUresult.
	Code int
	// Name is CUDA's name of the code, such as "CUDA_ERROR_ILLEGAL_ADDRESS".
	Name string
	// Text is CUDA's description, such as "an illegal memory access was
	// encountered".
	Text string
}

// Error prints "NAME: text", as in "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal
// memory access was encountered".
func (e *Error) Error() string {
	switch {
	case e.Name != "" && e.Text != "":
		return e.Name + ": " + e.Text
	case e.Name != "":
		return e.Name
	}
	return fmt.Sprintf("CUDA error %d", e.Code)
}

// Is matches another *Error of the same code.
func (e *Error) Is(target error) bool {
	var o *Error
	return errors.As(target, &o) && o.Code == e.Code
}

// Fault reports whether the error is a fault of the GPU's work, after
// which the GPU cannot be used for the rest of the process.
func (e *Error) Fault() bool { return result(e.Code).sticky() }

// ErrFaulted is matched by the error of an open of a GPU whose work
// faulted earlier in the process. CUDA keeps a fault of a context's work
// (a sticky error, such as CUDA_ERROR_ILLEGAL_ADDRESS) in the GPU's
// primary context, which no call clears and which the process keeps, so
// every later call of that context returns it: the GPU cannot run work
// again until the process restarts.
var ErrFaulted = errors.New("CUDA keeps a fault of a GPU's work for the rest of the process (a sticky error): the GPU runs nothing more until the process restarts")

// faultedError is the error of an open of GPU i, at bus, whose work
// faulted earlier in the process with fault, CUDA's error.
func faultedError(i int, bus string, fault error) error {
	return fmt.Errorf("cudadev: GPU %d (%s) faulted earlier in the process with %w; %w", i, bus, fault, ErrFaulted)
}

// err converts r into an *Error with CUDA's name and text for it.
func (t *table) err(r result) *Error {
	e := &Error{Code: int(r)}
	if t == nil {
		return e
	}
	var p uintptr
	if t.call(t.cuGetErrorName, uintptr(r), uintptr(unsafe.Pointer(&p))) == 0 {
		e.Name = cString(p)
	}
	p = 0
	if t.call(t.cuGetErrorString, uintptr(r), uintptr(unsafe.Pointer(&p))) == 0 {
		e.Text = cString(p)
	}
	return e
}

// text is r's "NAME: text".
func (t *table) text(r result) string { return t.err(r).Error() }

// call calls the C function fn with args. It is the general path: a
// pointer converted to uintptr in the call's arguments is kept alive and
// in place for the call, at the price of an allocation. The hot path uses
// a frame instead.
//
//go:uintptrescapes
func (t *table) call(fn uintptr, args ...uintptr) result {
	r, _, _ := purego.SyscallN(fn, args...)
	return result(uint32(r))
}

// frame carries the arguments and out-parameters of calls that must not
// allocate. A frame lives on the heap (a driver's field, or framePool) and
// is used by one goroutine at a time; its arguments hold only addresses of
// heap memory that the caller keeps alive, and of the frame itself.
type frame struct {
	c   ccall.Frame // the function and its arguments
	out [8]uint64
	cur uint64 // cuCtxGetCurrent's answer in enter

	// bare, where set, is the context that the frame's calls run in
	// without making it current: the calls name a stream, which names
	// it. A call that CUDA refuses with CUDA_ERROR_INVALID_CONTEXT enters
	// the context (bare.enter) and runs again.
	bare *bareCall
}

// bareCall is a run of calls without a current context (frame.bare): the
// context to enter where CUDA asks for one, and whether it was entered.
// The goroutine that holds the frame owns it.
type bareCall struct {
	t       *table
	ctx     uintptr
	prev    uintptr // enterCtx's answer, once entered
	entered bool
	refused bool // CUDA refused a call for want of a current context
}

// enter makes the context current for the rest of the run, unless it is.
func (f *frame) enter() {
	b := f.bare
	if b == nil || b.entered {
		return
	}
	a := f.c.A
	f.bare = nil
	b.prev = enterCtx(b.t, f, b.ctx)
	b.entered = true
	f.c.A = a
	f.bare = b
}

// leave ends a run of calls without a current context, restoring the
// thread's context where the run entered the context, and reports
// whether CUDA refused a call without it.
func (f *frame) leave() (refused bool) {
	b := f.bare
	f.bare = nil
	if b.entered {
		leaveCtx(b.t, f, b.ctx, b.prev)
	}
	refused = b.refused
	*b = bareCall{}
	return refused
}

var framePool = sync.Pool{New: func() any { return new(frame) }}

func getFrame() *frame  { return framePool.Get().(*frame) }
func putFrame(f *frame) { framePool.Put(f) }

// call calls fn with the frame's first n arguments and zeros past them,
// as purego.SyscallN passes them (a fill function may read a fourth
// argument, cuStreamWriteValue64's flags, as 0), through ccall: no
// allocation, and about half of purego.SyscallN's cost.
func (f *frame) call(fn uintptr, n int) result {
	clear(f.c.A[n:])
	f.c.Fn = fn
	r := f.c.Call()
	if result(uint32(r)) == errInvalidContext && f.bare != nil && !f.bare.entered {
		f.bare.refused = true
		f.enter()
		f.c.Fn = fn
		r = f.c.Call()
	}
	return result(uint32(r))
}

func (f *frame) c1(fn, a0 uintptr) result {
	f.c.A[0] = a0
	return f.call(fn, 1)
}

func (f *frame) c2(fn, a0, a1 uintptr) result {
	f.c.A[0], f.c.A[1] = a0, a1
	return f.call(fn, 2)
}

func (f *frame) c3(fn, a0, a1, a2 uintptr) result {
	f.c.A[0], f.c.A[1], f.c.A[2] = a0, a1, a2
	return f.call(fn, 3)
}

func (f *frame) c4(fn, a0, a1, a2, a3 uintptr) result {
	f.c.A[0], f.c.A[1], f.c.A[2], f.c.A[3] = a0, a1, a2, a3
	return f.call(fn, 4)
}

func (f *frame) c5(fn, a0, a1, a2, a3, a4 uintptr) result {
	f.c.A[0], f.c.A[1], f.c.A[2], f.c.A[3], f.c.A[4] = a0, a1, a2, a3, a4
	return f.call(fn, 5)
}

func (f *frame) c6(fn, a0, a1, a2, a3, a4, a5 uintptr) result {
	f.c.A[0], f.c.A[1], f.c.A[2], f.c.A[3], f.c.A[4], f.c.A[5] = a0, a1, a2, a3, a4, a5
	return f.call(fn, 6)
}

// outp is the address of the frame's out-parameter i.
func (f *frame) outp(i int) uintptr { return uintptr(unsafe.Pointer(&f.out[i])) }

// cString reads the NUL-terminated C string at p, which C owns.
func cString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(ptr(p + i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// ptr converts an address of C memory into a pointer without go vet's
// complaint about uintptr conversions: the memory is outside Go's heap.
func ptr(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

// cWord is the 64-bit word of C memory at addr.
func cWord(addr uintptr) *uint64 { return (*uint64)(ptr(addr)) }
