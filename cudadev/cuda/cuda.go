// Package cuda is the record that compiled code uses on a CUDA device of
// rig: the functions of the CUDA library the
// device was opened with, the device's context and streams, and the maker
// of CUDA graphs in the device's context.
//
// Compiled code gets the record with
//
//	rec, ok := rig.Capability(dev, cuda.Key)
//
// The addresses are C function pointers of libcuda, to be called with the
// device's context current on the calling thread (rig's fills are: see
// cudadev). This package holds types only: package cudadev fills the
// record and implements Graphs, Graph and Exec.
package cuda

import "github.com/rig-go/rig/device"

// Key names the record in a CUDA device's facts (Facts.Capability).
var Key = device.NewKey[*Record]("cuda")

// Record is a CUDA device's record for compiled code.
type Record struct {
	// Version is the CUDA version of the driver (cuDriverGetVersion), such
	// as 13000 for CUDA 13.0.
	Version int
	// Ordinal is the device's CUdevice.
	Ordinal int
	// Bus is the GPU's PCI bus address, such as "0000:41:00.0".
	Bus string
	// Context is the GPU's primary CUcontext, which the process keeps.
	Context uintptr
	// Compute and Copy are the device's streams "COMPUTE:0" and "COPY:0".
	// They are destroyed when the device stops.
	Compute, Copy uintptr
	// Funcs holds the addresses of the functions rig itself calls.
	Funcs Funcs
	// Symbol returns the address of any function of the CUDA library by
	// its exported name, such as "cuMemcpyAsync" or "cuModuleGetGlobal_v2",
	// or 0 where the library has none. Symbol keeps working after the
	// device stops.
	Symbol func(name string) uintptr
	// Graphs makes CUDA graphs in the device's context.
	Graphs Graphs
}

// Funcs holds addresses of libcuda's functions, by the names of CUDA 12.4's
// cuda.h (each the versioned symbol that name stands for).
type Funcs struct {
	CtxGetCurrent, CtxSetCurrent                  uintptr
	LaunchKernel                                  uintptr
	MemcpyAsync, Memcpy2DAsync                    uintptr // cuMemcpy2DAsync_v2
	MemsetD8Async, MemsetD2D8Async                uintptr
	StreamWaitValue64, StreamWriteValue64         uintptr // the _v2 symbols
	StreamBatchMemOp                              uintptr // cuStreamBatchMemOp_v2
	StreamWaitEvent, StreamQuery                  uintptr
	EventCreate, EventRecord, EventDestroy        uintptr
	GraphLaunch                                   uintptr
	GetErrorName, GetErrorString                  uintptr
	ModuleGetFunction, ModuleGetGlobal, FuncLoad  uintptr
	MemAlloc, MemFree, MemHostAlloc, MemFreeHost  uintptr
	MemHostRegister, MemHostUnregister            uintptr
	MemHostGetDevicePointer, PointerGetAttribute  uintptr
	DeviceGetAttribute, FuncGetAttribute          uintptr
	FuncSetAttribute, FuncGetParamInfo            uintptr
	GraphInstantiateWithFlags, GraphExecDestroy   uintptr
	GraphCreate, GraphDestroy, GraphAddKernelNode uintptr // cuGraphAddKernelNode_v2
}

// Node is a node of a graph (CUgraphNode).
type Node uintptr

// Kernel is a kernel node's launch: the function (a CUfunction, such as
// rig's Function.Entry().Code), its grid and blocks, its dynamic shared
// memory, and its parameter bytes, which are passed as one buffer
// (CU_LAUNCH_PARAM_BUFFER_POINTER) and copied when the node is made or set:
// at least the bytes the function reads, of which those bytes alone are
// passed, as for a launch.
type Kernel struct {
	Func   uint64
	Grid   [3]uint32
	Block  [3]uint32
	Shared uint32
	Params []byte
}

// Copy is a memcpy node: Rows rows of RowBytes bytes from the unified
// address Src to Dst, with Pitch bytes between rows on each side (0 is
// RowBytes; Rows 0 is 1; the pitches of one row are not read). A node
// whose RowBytes is 0, whose pitch on a side is under RowBytes with more
// than one row (rows that overlap), or whose rows on a side end past 2^64
// (the address + (Rows-1)*pitch + RowBytes) is refused with an error
// naming the problem, before CUDA is asked.
type Copy struct {
	Dst, Src           uint64
	RowBytes, Rows     uint64
	DstPitch, SrcPitch uint64
}

// Memset is a memset node: Rows rows of RowBytes bytes at the device
// address Dst, Pitch bytes apart (0 is RowBytes; Rows 0 is 1; the pitch of
// one row is not read), each byte set to Value. A node whose RowBytes is
// 0, whose Pitch is under RowBytes with more than one row (rows that
// overlap), or whose rows end past 2^64 (Dst + (Rows-1)*Pitch + RowBytes)
// is refused with an error naming the problem, before CUDA is asked.
type Memset struct {
	Dst            uint64
	Value          byte
	RowBytes, Rows uint64
	Pitch          uint64
}

// Graphs makes graphs and events in a device's context. After a
// fault of the device's GPU every call returns the fault's error.
type Graphs interface {
	// NewGraph makes an empty graph (cuGraphCreate).
	NewGraph() (Graph, error)
	// NewEvent makes an event without timing (cuEventCreate), for event
	// record and wait nodes. The caller destroys it with DestroyEvent once
	// no graph that uses it runs.
	NewEvent() (uintptr, error)
	// DestroyEvent destroys an event NewEvent made.
	DestroyEvent(ev uintptr) error
}

// Graph is a CUDA graph under construction. A graph that records a
// function of an image keeps the image's module loaded until the graph is
// destroyed, also after rig unloads the image; an unloaded image's
// functions cannot be recorded.
type Graph interface {
	// Handle is the CUgraph.
	Handle() uintptr
	// Kernel adds a kernel node after the nodes after (cuGraphAddKernelNode).
	Kernel(k Kernel, after ...Node) (Node, error)
	// Copy adds a memcpy node (cuGraphAddMemcpyNode). It refuses a Copy
	// that breaks Copy's rules before CUDA is asked; the graph stays as
	// it was.
	Copy(c Copy, after ...Node) (Node, error)
	// Memset adds a memset node (cuGraphAddMemsetNode). It refuses a
	// Memset that breaks Memset's rules before CUDA is asked; the graph
	// stays as it was.
	Memset(m Memset, after ...Node) (Node, error)
	// EventRecord adds an event record node (cuGraphAddEventRecordNode).
	EventRecord(ev uintptr, after ...Node) (Node, error)
	// EventWait adds an event wait node (cuGraphAddEventWaitNode).
	EventWait(ev uintptr, after ...Node) (Node, error)
	// Empty adds an empty node, to join dependencies (cuGraphAddEmptyNode).
	Empty(after ...Node) (Node, error)
	// Instantiate makes an executable graph (cuGraphInstantiateWithFlags).
	Instantiate() (Exec, error)
	// Destroy destroys the graph (cuGraphDestroy); executable graphs made
	// from it stay valid. It unloads the modules of images rig unloaded
	// that the graph alone kept loaded, and returns CUDA's refusal of
	// that unload, as of the destroy.
	Destroy() error
}

// Exec is an executable graph. A rig Fill part whose function is an Exec
// launches the graph on the part's stream (cuGraphLaunch): rig.Fill(x, 0).
// The Exec that the record's Graphs make calls CUDA on the executable
// graph from one goroutine at a time, its launches by submissions on any
// device included, since CUDA's graph objects must not be used from two
// threads at once.
type Exec interface {
	// Handle is the CUgraphExec.
	Handle() uintptr
	// SetKernel sets a kernel node's launch for later launches
	// (cuGraphExecKernelNodeSetParams).
	SetKernel(n Node, k Kernel) error
	// SetCopy sets a memcpy node's copy (cuGraphExecMemcpyNodeSetParams).
	// It refuses a Copy that breaks Copy's rules before CUDA is asked;
	// the node keeps its copy.
	SetCopy(n Node, c Copy) error
	// SetMemset sets a memset node's fill (cuGraphExecMemsetNodeSetParams).
	// It refuses a Memset that breaks Memset's rules before CUDA is
	// asked; the node keeps its fill.
	SetMemset(n Node, m Memset) error
	// Upload uploads the graph ahead of its first launch, on the device's
	// "COMPUTE:0" stream (cuGraphUpload).
	Upload() error
	// Destroy destroys the executable graph (cuGraphExecDestroy), once no
	// submitted launch of it can run. It unloads the modules of images rig
	// unloaded that the executable graph alone kept loaded, and returns
	// CUDA's refusal of that unload, as of the destroy.
	Destroy() error
}
