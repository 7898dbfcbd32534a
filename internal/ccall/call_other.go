//go:build !amd64 || windows

package ccall

import "github.com/ebitengine/purego"

// call calls through purego.SyscallN: on architectures other than amd64,
// and on Windows, whose convention (the first four arguments in CX, DX, R8
// and R9, and room for them on the stack) is not the System V one of
// call_amd64.s.
func call(f *Frame) {
	r, _, _ := purego.SyscallN(f.Fn, f.A[:]...)
	f.R = r
}
