package hostram

import "golang.org/x/sys/unix"

// Bytes returns the host's physical memory in bytes, or 0 where the
// system does not say.
func Bytes() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
