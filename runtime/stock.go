package rig

import "sync"

// stock keeps objects for reuse. Unlike a sync.Pool it keeps them across
// garbage collections: where thousands of goroutines wait at once, a pool
// that each collection empties made an object (and its channel) for most
// waits, and the collections that this garbage brought on scanned every
// waiting goroutine's stack. It holds at most as many as were out at the
// same time; its lock is taken on the way to a park, not on a hot path.
// Any goroutine may call get and put.
type stock[T any] struct {
	mu    sync.Mutex
	free  []*T
	fresh func() *T // makes one where none is kept
}

// get returns a kept object, or a fresh one.
func (s *stock[T]) get() *T {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		x := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return x
	}
	s.mu.Unlock()
	return s.fresh()
}

// put keeps x for a later get.
func (s *stock[T]) put(x *T) {
	s.mu.Lock()
	s.free = append(s.free, x)
	s.mu.Unlock()
}
