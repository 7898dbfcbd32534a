//go:build linux && (amd64 || arm64)

package cudadev

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestStartJoinRefused has CUDA refuse, with an error of the call alone,
// the order of a value's start stream after the stream the last value
// ended on: the value's work runs on the other stream. The failed value
// must still be written behind every earlier value's work, so on the
// stream the last value ended on, never on the start stream, which
// nothing orders after that work.
func TestStartJoinRefused(t *testing.T) {
	for _, refused := range []string{"cuEventRecord", "cuStreamWaitEvent"} {
		t.Run(refused, func(t *testing.T) {
			var mu sync.Mutex
			var writes []uintptr // the streams of the word's writes
			tab := fakeTable(t, map[string]fakeFn{
				refused: func([6]uintptr) result { return errInvalidValue },
				"cuStreamWriteValue64_v2": func(a [6]uintptr) result {
					mu.Lock()
					writes = append(writes, a[0])
					mu.Unlock()
					return 0
				},
			})
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			d.end = device.Compute
			dst := &region{kind: devMem, size: 8}
			s := &device.Submission{Value: 1, Parts: []device.Part{
				{Kind: device.CopyRows, Queue: device.Copy, Dst: dst, Src: dst, RowBytes: 8, Rows: 1},
			}}
			if a := d.Submit(s); a.Kind != device.Failed {
				t.Fatalf("the submit answered %v", a.Kind)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(writes) != 1 || writes[0] != d.streams[device.Compute] || d.end != device.Compute || d.written != 1 {
				t.Fatalf("value 1 was written on streams %#x, ending on stream %d, written %d; want once on %#x (COMPUTE:0, where value 0 ended), written 1", writes, d.end, d.written, d.streams[device.Compute])
			}
		})
	}
}

// copyOn is a copy part of 8 bytes on queue q.
func copyOn(q int) device.Part {
	r := &region{kind: devMem, size: 8}
	return device.Part{Kind: device.CopyRows, Queue: q, Dst: r, Src: r, RowBytes: 8, Rows: 1}
}

// TestWriteRefusedAfterWork has CUDA take part of a value's work, on the
// stream the last value did not end on, then refuse a later part and the
// failed value's write of the word. The next value's write must still
// follow that work: the device ends on the stream the work is behind,
// whether or not the write was taken.
func TestWriteRefusedAfterWork(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []device.Part
	}{
		{"start stream", []device.Part{copyOn(device.Copy), copyOn(device.Copy)}},
		{"both streams", []device.Part{copyOn(device.Compute), copyOn(device.Copy), copyOn(device.Copy)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			copies, writes := 0, 0
			m := newStreamOrder(func(name string, _ [6]uintptr) bool {
				switch name {
				case "cuMemcpyAsync":
					copies++
					return copies == len(c.parts)
				case "cuStreamWriteValue64_v2":
					writes++
					return writes == 1
				}
				return false
			})
			d := fakeDevice(fakeTable(t, m.fns()), &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			d.end = device.Compute
			for v, parts := range [][]device.Part{c.parts, {copyOn(device.Compute)}} {
				if a := d.Submit(&device.Submission{Value: uint64(v + 1), Parts: parts}); a.Kind != device.Failed {
					t.Fatalf("the submit of value %d answered %v", v+1, a.Kind)
				}
			}
			bad, written := m.check()
			if len(bad) > 0 || len(written) != 1 || written[0] != 2 {
				t.Fatalf("the word's writes passed work (%q), or wrote %v; want value 2 written behind all the work", bad, written)
			}
		})
	}
}

// TestEndJoinRefused has CUDA refuse the join that orders one stream of
// a two-stream value after the other at the value's end: the failed
// value, and every later one, must be written behind the work of both.
// Where CUDA refuses the join one way, the value is written after a join
// the other way; where it refuses both, no write may be enqueued until
// CUDA takes a join again, and Stop enqueues none, leaving its kept work
// to raise the word once that work ended.
func TestEndJoinRefused(t *testing.T) {
	const copyStream = 0x52 // fakeDevice's streams[device.Copy]
	for _, c := range []struct {
		name    string
		refuse  func(stream uintptr) bool
		taken   bool // CUDA takes the joins of value 3
		written []uint64
	}{
		{"one way", func(s uintptr) bool { return s == copyStream }, false, []uint64{1, 2, 3}},
		{"both ways", func(uintptr) bool { return true }, false, nil},
		{"both ways, then taken", func(uintptr) bool { return true }, true, []uint64{3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m *streamOrder
			taken := false
			m = newStreamOrder(func(name string, a [6]uintptr) bool {
				// Refused once work is enqueued: the value's start is
				// ordered, its end is not.
				return name == "cuStreamWaitEvent" && m.work > 0 && !taken && c.refuse(a[0])
			})
			fns := m.fns()
			fns["cuStreamQuery"] = func([6]uintptr) result { return errNotReady }
			fns["cuEventCreate"] = fakeEvents()
			fns["cuEventQuery"] = func([6]uintptr) result { return errNotReady }
			g := &gpuInfo{bus: "0000:01:00.0"}
			d := fakeDevice(fakeTable(t, fns), g, 0, new(uint64))
			if d.streams[device.Copy] != copyStream {
				t.Fatalf("the fake's copy stream is %#x", d.streams[device.Copy])
			}
			d.end = device.Compute
			values := [][]device.Part{{copyOn(device.Compute), copyOn(device.Copy)}, {copyOn(device.Compute)}, {copyOn(device.Copy)}}
			for v, parts := range values {
				if v == 2 && c.taken {
					m.mu.Lock()
					taken = true
					m.mu.Unlock()
				}
				if a := d.Submit(&device.Submission{Value: uint64(v + 1), Parts: parts}); a.Kind != device.Failed {
					t.Fatalf("the submit of value %d answered %v", v+1, a.Kind)
				}
			}
			bad, written := m.check()
			if len(bad) > 0 || !slices.Equal(written, c.written) {
				t.Fatalf("the word's writes passed work (%q), or wrote %v; want %v, each behind all the work", bad, written, c.written)
			}
			if c.written != nil {
				return
			}
			if err := d.Stop(""); err != nil {
				t.Fatal(err)
			}
			bad, written = m.check()
			g.mu.Lock()
			kept := len(g.kept) == 1 && g.kept[0].raise
			g.mu.Unlock()
			if len(bad) > 0 || len(written) != 0 || !kept {
				t.Fatalf("Stop's writes passed work (%q), or wrote %v, keeping work that raises the word: %v; want no write, and the word raised by the kept work", bad, written, kept)
			}
		})
	}
}

// waitCall is one stream call the fake table saw.
type waitCall struct {
	name   string
	stream uintptr
	value  uint64
}

// waitRecorder records the word's writes and the waits on words, by
// stream, and refuses the calls refuse picks.
type waitRecorder struct {
	mu     sync.Mutex
	calls  []waitCall
	refuse func(name string, n int) bool // n: the how-many-th call of name
	count  map[string]int
}

func (m *waitRecorder) fn(name string, stream func(a [6]uintptr) uintptr, value func(a [6]uintptr) uint64) fakeFn {
	return func(a [6]uintptr) result {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.count == nil {
			m.count = map[string]int{}
		}
		m.count[name]++
		if m.refuse != nil && m.refuse(name, m.count[name]) {
			return errInvalidValue
		}
		c := waitCall{name: name, stream: stream(a)}
		if value != nil {
			c.value = value(a)
		}
		m.calls = append(m.calls, c)
		return 0
	}
}

func (m *waitRecorder) fns() map[string]fakeFn {
	a0 := func(a [6]uintptr) uintptr { return a[0] }
	return map[string]fakeFn{
		"cuStreamWaitValue64_v2":  m.fn("wait", a0, func(a [6]uintptr) uint64 { return uint64(a[2]) }),
		"cuStreamBatchMemOp_v2":   m.fn("batch", a0, func(a [6]uintptr) uint64 { return uint64(a[1]) }),
		"cuStreamWriteValue64_v2": m.fn("write", a0, func(a [6]uintptr) uint64 { return uint64(a[2]) }),
	}
}

// writtenAfterWaits fails t where a write of the word on a stream does not
// follow, on that stream, waits that cover all n of the value's waits in
// the calls just before it (a wait, or batches of waits).
func writtenAfterWaits(t *testing.T, m *waitRecorder, n int) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.calls {
		if c.name != "write" {
			continue
		}
		covered := uint64(0)
		for j := i - 1; j >= 0 && covered < uint64(n); j-- {
			p := m.calls[j]
			if p.stream != c.stream {
				continue
			}
			switch p.name {
			case "wait":
				covered++
			case "batch":
				covered += p.value
			default:
				j = -1
			}
		}
		if covered != uint64(n) {
			t.Fatalf("value %d written on stream %#x after %d of its %d waits (calls %+v)", c.value, c.stream, covered, n, m.calls)
		}
	}
}

// TestFailedWaitsWrittenAfter has CUDA refuse, with an error of the call
// alone, a value's wait on another device's word (one wait, refused each
// time; or the second batch of 300, once): the failed value is written
// only after all its waits are on the stream, or not at all, so that the
// word never shows it before the words it waits on show theirs.
func TestFailedWaitsWrittenAfter(t *testing.T) {
	for _, n := range []int{1, 300} {
		t.Run(fmt.Sprint(n, " waits"), func(t *testing.T) {
			m := &waitRecorder{refuse: func(name string, k int) bool {
				return name == "wait" || name == "batch" && k == 2
			}}
			tab := fakeTable(t, m.fns())
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			d.arrayDev = 0x7000000
			other := make([]uint64, n)
			waits := make([]device.Wait, n)
			for i := range waits {
				waits[i] = device.Wait{Word: &other[i], Value: 5}
			}
			s := &device.Submission{Value: 1, Waits: waits, Parts: []device.Part{copyOn(device.Compute)}}
			if a := d.Submit(s); a.Kind != device.Failed {
				t.Fatalf("the submit answered %v", a.Kind)
			}
			writtenAfterWaits(t, m, n)
		})
	}
}

// TestStartJoinRefusedWaitsFirst has CUDA refuse the order of a value's
// start stream after the stream the last value ended on, for a value that
// waits on another word: the failed value is written on the stream the
// last value ended on, after its wait.
func TestStartJoinRefusedWaitsFirst(t *testing.T) {
	m := &waitRecorder{}
	fns := m.fns()
	fns["cuStreamWaitEvent"] = func([6]uintptr) result { return errInvalidValue }
	tab := fakeTable(t, fns)
	d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
	d.arrayDev = 0x7000000
	d.end = device.Compute
	var other uint64
	s := &device.Submission{Value: 1, Waits: []device.Wait{{Word: &other, Value: 5}},
		Parts: []device.Part{copyOn(device.Copy)}}
	if a := d.Submit(s); a.Kind != device.Failed {
		t.Fatalf("the submit answered %v", a.Kind)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	waited := map[uintptr]bool{}
	for _, c := range m.calls {
		switch c.name {
		case "wait", "batch":
			waited[c.stream] = true
		case "write":
			if !waited[c.stream] {
				t.Fatalf("value %d written on stream %#x, on which none of its waits was enqueued (calls %+v)", c.value, c.stream, m.calls)
			}
		}
	}
}
