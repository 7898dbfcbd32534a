package nvdev

import "golang.org/x/sys/unix"

// hostRAM returns the bytes of the host's memory, or 0 where the system
// does not say.
func hostRAM() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
