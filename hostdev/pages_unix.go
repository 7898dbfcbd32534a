//go:build unix

package hostdev

import (
	"errors"

	"github.com/rig-go/rig/device"
	"golang.org/x/sys/unix"
)

// pageSize is the host's page, the alignment of every allocation.
var pageSize = unix.Getpagesize()

// mapPages maps n bytes (whole pages) of zeroed memory outside Go's heap.
// It returns device.ErrNoMemory where the host has none left.
func mapPages(n int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if errors.Is(err, unix.ENOMEM) {
		return nil, device.ErrNoMemory
	}
	return mem, err
}

// unmapPages gives back memory of mapPages.
func unmapPages(mem []byte) error { return unix.Munmap(mem) }
