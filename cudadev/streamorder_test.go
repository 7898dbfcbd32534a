//go:build linux && (amd64 || arm64)

package cudadev

import (
	"fmt"
	"sync"
)

// streamOrder is a model of the order CUDA keeps between the device's two
// streams, for the fake table: it numbers each copy or memset enqueued,
// keeps for each stream the work that the stream's next call follows (its
// own earlier work, and what its waits for events joined), and checks
// that each write of the word follows every piece of work enqueued before
// it. refuse, where not nil, picks the calls CUDA refuses, which then
// change nothing.
type streamOrder struct {
	mu      sync.Mutex
	refuse  func(name string, a [6]uintptr) bool
	work    int                 // the pieces of work enqueued so far
	follows []workSet           // by piece of work: the work it follows
	after   map[uintptr]workSet // by stream: the work its next call follows
	events  map[uintptr]workSet // by event: the work it was recorded after
	written []uint64            // the values of the word's accepted writes
	bad     []string            // the accepted writes that pass work
}

// workSet is a set of pieces of work, by number.
type workSet map[int]bool

// newStreamOrder returns a model of a device's two streams.
func newStreamOrder(refuse func(name string, a [6]uintptr) bool) *streamOrder {
	return &streamOrder{refuse: refuse, after: map[uintptr]workSet{}, events: map[uintptr]workSet{}}
}

// fns returns the fake table's functions of the model: the work's copies
// and memsets, the events' records and waits, and the word's writes.
func (m *streamOrder) fns() map[string]fakeFn {
	call := func(name string, do func(a [6]uintptr)) fakeFn {
		return func(a [6]uintptr) result {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.refuse != nil && m.refuse(name, a) {
				return errInvalidValue
			}
			do(a)
			return 0
		}
	}
	work := func(a [6]uintptr) { m.enqueue(a[3]) }
	return map[string]fakeFn{
		"cuMemcpyAsync":   call("cuMemcpyAsync", work),
		"cuMemsetD8Async": call("cuMemsetD8Async", work),
		"cuEventRecord": call("cuEventRecord", func(a [6]uintptr) {
			m.events[a[0]] = m.stream(a[1]).clone()
		}),
		"cuStreamWaitEvent": call("cuStreamWaitEvent", func(a [6]uintptr) {
			s := m.stream(a[0])
			for w := range m.events[a[1]] {
				s[w] = true
			}
		}),
		"cuStreamWriteValue64_v2": call("cuStreamWriteValue64_v2", func(a [6]uintptr) {
			v, s := uint64(a[2]), m.stream(a[0])
			var passed []int
			for w := 0; w < m.work; w++ {
				if !s[w] {
					passed = append(passed, w)
				}
			}
			if len(passed) > 0 {
				m.bad = append(m.bad, fmt.Sprintf("value %d written on stream %#x before work %v of %d", v, a[0], passed, m.work))
			}
			m.written = append(m.written, v)
		}),
	}
}

// stream returns the work stream s's next call follows.
func (m *streamOrder) stream(s uintptr) workSet {
	if m.after[s] == nil {
		m.after[s] = workSet{}
	}
	return m.after[s]
}

// enqueue numbers a piece of work enqueued on stream s.
func (m *streamOrder) enqueue(s uintptr) {
	st := m.stream(s)
	m.follows = append(m.follows, st.clone())
	st[m.work] = true
	m.work++
}

func (s workSet) clone() workSet {
	c := workSet{}
	for w := range s {
		c[w] = true
	}
	return c
}

// check returns the writes that passed work, and the values written.
func (m *streamOrder) check() ([]string, []uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bad...), append([]uint64(nil), m.written...)
}
