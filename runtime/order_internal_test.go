package rig

import (
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestOrderAfter checks the After that Submit computes for each part from
// the buffers bound, on a fake of two queues: words parts stand on
// COMPUTE:0 and fills on COPY:0.
func TestOrderAfter(t *testing.T) {
	d := openFake(t, "order", newFake())
	var bufs [3]*Buffer
	for i := range bufs {
		b, err := d.Alloc(device.PinnedMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	x, y := bufs[0], bufs[1]
	w := func(refs ...Ref) Part { return Words(nil, refs...) }   // COMPUTE:0
	f := func(refs ...Ref) Part { return Fill(nil, 0, refs...) } // COPY:0
	cases := []struct {
		name  string
		parts []Part
		bufs  []*Buffer
		after []int // 1 + the part each runs after, 0 for none
	}{
		{"copy, launch, copy", []Part{Copy(0, 0, 1, 0, 8), w(Uses(1, ReadsWrites)), Copy(1, 0, 0, 0, 8)}, []*Buffer{x, y}, []int{0, 1, 2}},
		{"read after write", []Part{f(Uses(0, Writes)), w(Uses(0, Reads))}, []*Buffer{x}, []int{0, 1}},
		{"write after read", []Part{w(Uses(0, Reads)), f(Uses(0, Writes))}, []*Buffer{x}, []int{0, 1}},
		{"write after write", []Part{w(Uses(0, Writes)), f(Uses(0, Writes))}, []*Buffer{x}, []int{0, 1}},
		{"reads side by side", []Part{w(Uses(0, Reads)), f(Uses(0, Reads))}, []*Buffer{x}, []int{0, 0}},
		{"different buffers side by side", []Part{w(Uses(0, Writes)), f(Uses(1, Writes))}, []*Buffer{x, y}, []int{0, 0}},
		{"one buffer under two indices", []Part{w(Uses(0, Writes)), f(Uses(1, Writes))}, []*Buffer{x, x}, []int{0, 1}},
		{"the latest conflicting part", []Part{w(Uses(0, Writes)), w(Uses(1, Writes)), w(Uses(2, Reads)), f(Uses(0, Reads), Uses(1, Reads))}, bufs[:], []int{0, 0, 0, 2}},
		{"the latest use before a write", []Part{w(Uses(0, Reads)), w(Uses(0, Reads)), w(Uses(1, Reads)), f(Uses(0, Writes))}, bufs[:2], []int{0, 0, 0, 2}},
		{"a write of the other queue in between", []Part{w(Uses(0, Writes)), f(Uses(0, ReadsWrites)), w(Uses(0, Reads))}, []*Buffer{x}, []int{0, 1, 2}},
		{"the caller's later After", []Part{w(Uses(0, Writes)), w(), f(Uses(0, Reads)).After(1)}, []*Buffer{x}, []int{0, 0, 2}},
		{"the caller's earlier After", []Part{w(), w(Uses(0, Writes)), f(Uses(0, Reads)).After(0)}, []*Buffer{x}, []int{0, 0, 2}},
		{"the caller's After on its own queue", []Part{w(Uses(0, Writes)), f(), f(Uses(0, Reads)).After(1)}, []*Buffer{x}, []int{0, 0, 1}},
		{"the caller's After alone", []Part{w(), f().After(0)}, nil, []int{0, 1}},
		{"one queue", []Part{f(Uses(0, Writes)), f(Uses(0, Reads))}, []*Buffer{x}, []int{0, 0}},
		{"a queue the device lacks", []Part{w(Uses(0, Writes)), f(Uses(0, Reads)).On(5), f(Uses(0, Reads))}, []*Buffer{x}, []int{0, 0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewSubmission(d, c.parts...)
			if err != nil {
				t.Fatal(err)
			}
			r := s.Take()
			defer r.Release()
			for range 2 { // a second run starts afresh
				if err := r.bind(c.bufs); err != nil {
					t.Fatal(err)
				}
				r.order()
				for i, want := range c.after {
					if got := r.sub.Parts[i].After; got != want {
						t.Fatalf("part %d has After %d, want %d", i, got, want)
					}
				}
			}
		})
	}
}

// TestOrderTwoQueues: rig opens submissions on no device of more than two
// queues, where one After per part would not be exact.
func TestOrderTwoQueues(t *testing.T) {
	f := newFake()
	f.facts.Queues = []string{"COMPUTE:0", "COPY:0", "COPY:1"}
	d := openFake(t, "three", f)
	_, err := NewSubmission(d, Words(nil))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a submission on a device of three queues: %v", err)
	}
}
