//go:build !linux

package nvdev

// hostRAM returns 0: off Linux the system's memory is not read (the device
// does not open there).
func hostRAM() uint64 { return 0 }
