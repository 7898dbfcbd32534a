//go:build !windows

package ccall

import "unsafe"

// callABI0 is the address of callC (call_amd64.s), which runtime.cgocall
// runs on the system stack with the frame in DI.
var callABI0 uintptr

func call(f *Frame) { runtime_cgocall(callABI0, unsafe.Pointer(f)) }

// ensure that the layout the assembly reads holds.
var _ = [1]struct{}{}[unsafe.Offsetof(Frame{}.R)-8-8*MaxArgs]
