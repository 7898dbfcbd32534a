// Package hostram reads the host's physical memory, which the GPU drivers'
// Pinned memory (Go memory they map for the GPU) must not exceed: Go's
// heap ends the process where it cannot grow, rather than failing.
// Any goroutine may call Bytes.
package hostram
