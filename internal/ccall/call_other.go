//go:build !amd64

package ccall

import "github.com/ebitengine/purego"

func call(f *Frame) {
	r, _, _ := purego.SyscallN(f.Fn, f.A[:]...)
	f.R = r
}
