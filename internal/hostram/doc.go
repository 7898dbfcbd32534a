// Package hostram reads the host's physical memory, which the drivers'
// memory made of Go memory (Pinned memory on the GPUs, Pinned and Mapped
// memory on the host driver) must not exceed: Go's heap ends the process
// where it cannot grow, rather than failing. The bound is of one
// allocation: allocations that each fit but together exceed the host's
// memory still meet Go's out of memory.
// Any goroutine may call Bytes.
package hostram
