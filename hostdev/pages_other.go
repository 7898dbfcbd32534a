//go:build !unix

package hostdev

import (
	"unsafe"

	"github.com/rig-go/rig/device"
)

// pageSize is the alignment of every allocation where the OS is not a
// Unix: 4096 bytes.
const pageSize = 4096

// mapPages takes n bytes (whole pages) of zeroed memory from Go's heap,
// page-aligned, where the OS is not a Unix. Go's heap does not move, and
// the region holds the slice until Free, so the memory stays where it is.
// It returns device.ErrNoMemory past the largest array Go makes.
func mapPages(n int) ([]byte, error) {
	b := makeBytes(n + pageSize)
	if b == nil {
		return nil, device.ErrNoMemory
	}
	off := (pageSize - int(uintptr(unsafe.Pointer(&b[0]))%pageSize)) % pageSize
	return b[off : off+n : off+n], nil
}

// unmapPages gives back memory of mapPages: the garbage collector takes
// it once the region is gone.
func unmapPages([]byte) error { return nil }
