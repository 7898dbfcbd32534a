// Package ccall calls C functions of integer and pointer arguments from
// Go without cgo, through the runtime's cgocall, as purego does, but with
// a frame the caller keeps: no argument slice copied, no pool, no
// allocation. It serves the hot path of the CUDA driver (cudadev), where
// purego.SyscallN cost about 140 ns more than a call from C on the H200.
//
// The C functions must take at most MaxArgs arguments, each an integer or
// a pointer, and answer one integer (or nothing). A Frame is used by one
// goroutine at a time; the memory its arguments point to must be heap
// memory the caller keeps alive for the call, as with purego.SyscallN.
package ccall

import (
	"unsafe"

	// purego links its stand-in of the runtime's cgo hooks (fakecgo)
	// where CGO_ENABLED=0, which runtime.cgocall needs.
	_ "github.com/ebitengine/purego"
)

// MaxArgs is the most arguments a call passes.
const MaxArgs = 12

// Frame is a call: the C function, its arguments, and its answer. The
// assembly reads it at fixed offsets: Fn at 0, A at 8, R at 104.
type Frame struct {
	Fn uintptr
	A  [MaxArgs]uintptr
	R  uintptr
}

// Call calls f.Fn with every argument of f.A (a C function ignores those
// past its own) on the thread's system stack, and returns its result,
// which it also leaves in f.R. f must not be on a goroutine's stack.
func (f *Frame) Call() uintptr {
	call(f)
	return f.R
}

//go:linkname runtime_cgocall runtime.cgocall
func runtime_cgocall(fn uintptr, arg unsafe.Pointer) int32
