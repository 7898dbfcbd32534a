package hostram

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Bytes returns the host's physical memory in bytes, or 0 where the
// system does not say. It reads the system once.
var Bytes = sync.OnceValue(func() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
})
