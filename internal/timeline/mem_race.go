//go:build race || !unix

package timeline

import "unsafe"

// mapArray takes the array from Go's heap, page-aligned, under the race
// detector and where the OS is not a Unix. The race detector tracks atomic
// operations only on memory of Go's, so only there does it see the order a
// word's store gives to the work's writes that the store publishes. Go's
// heap does not move, so drivers may still register the array.
func mapArray() ([]byte, error) {
	const page = 4096
	b := make([]byte, Bytes+page)
	off := (page - int(uintptr(unsafe.Pointer(&b[0]))%page)) % page
	return b[off : off+Bytes : off+Bytes], nil
}
