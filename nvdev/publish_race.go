//go:build race

package nvdev

import "sync/atomic"

// storePut stores GPPut. Under the race detector it is an atomic store, so
// that the tests' fake GPU, which loads it atomically on another goroutine,
// sees the words stored before it; a GPU does not run under the race
// detector.
func storePut(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
