package profile

// chunkLen is the items of one chunk of a store.
const chunkLen = 1 << 14

// store is an append-only list kept in chunks, so that appending never
// copies what it holds: a profile of millions of values grows by a chunk
// at a time rather than by copies of everything it settled.
type store[T any] struct {
	chunks [][]T
	n      int
}

// add appends x and returns its index.
func (s *store[T]) add(x T) int {
	if s.n == len(s.chunks)*chunkLen {
		s.chunks = append(s.chunks, make([]T, 0, chunkLen))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, x)
	s.n++
	return s.n - 1
}

// at is the item of index i.
func (s *store[T]) at(i int) *T { return &s.chunks[i/chunkLen][i%chunkLen] }

// len is the count of items.
func (s *store[T]) len() int { return s.n }

// spanRec is a span as a profile keeps it: with no pointer, so that the
// garbage collector does not scan millions of them. Its items' indexes in
// the stores are ints: a profile of many spans of many parts each may
// keep past 2^31 of them, and an index of 32 bits then wrapped below zero
// (TestSpanPastInt32Parts). A span takes 64 bytes rather than 48: 16 MiB
// more for the 1 Mi spans a profile keeps by default.
type spanRec struct {
	dev, queue   int32
	value        uint64
	start, end   int64
	parts, waits int // the first of the span's items in the stores
	nparts       int
	nwaits       int
}
