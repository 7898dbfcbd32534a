package hostdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
)

func TestLaunchGroupsThreads(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "test.index")
	for _, tc := range []struct {
		name          string
		groups, thrds [3]uint32
	}{
		{"one", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}},
		{"threads", [3]uint32{1, 1, 1}, [3]uint32{1024, 1, 1}},
		{"groups", [3]uint32{1000, 1, 1}, [3]uint32{1, 1, 1}},
		{"both", [3]uint32{64, 1, 1}, [3]uint32{256, 1, 1}},
		{"3d", [3]uint32{3, 5, 7}, [3]uint32{4, 3, 2}},
		{"z threads", [3]uint32{2, 1, 1}, [3]uint32{1, 1, 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 1
			for a := range 3 {
				n *= int(tc.groups[a] * tc.thrds[a])
			}
			r, mem := alloc(t, d, 4*n)
			defer d.Free(r)
			v := submit(t, d, launch(e, tc.groups, tc.thrds, p64(addr(r))))
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if c := binary.LittleEndian.Uint32(mem[4*i:]); c != 1 {
					t.Fatalf("thread %d ran %d times", i, c)
				}
			}
		})
	}
}

func TestTwice(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "twice:8")
	if e.Params != 8 || e.Threads != MaxThreads || e.Shared != MaxShared {
		t.Fatalf("entry %+v", e)
	}
	const n = 1 << 16
	r, mem := alloc(t, d, 4*n)
	x := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n)
	for i := range x {
		x[i] = float32(i)
	}
	submit(t, d, launch(e, [3]uint32{n / 256, 1, 1}, [3]uint32{256, 1, 1}, p64(addr(r))))
	v := submit(t, d, launch(e, [3]uint32{n / 128, 1, 1}, [3]uint32{128, 1, 1}, p64(addr(r))))
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if x[i] != 4*float32(i) {
			t.Fatalf("x[%d] = %v, want %v", i, x[i], 4*float32(i))
		}
	}
}

func TestShared(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "test.shared")
	r, mem := alloc(t, d, 4*100)
	p := launch(e, [3]uint32{100, 1, 1}, [3]uint32{10, 1, 1}, p64(addr(r)))
	p.Shared = 4
	v := submit(t, d, p)
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
	for g := range 100 {
		if s := binary.LittleEndian.Uint32(mem[4*g:]); s != 45 {
			t.Fatalf("group %d summed %d, want 45", g, s)
		}
	}
}

func TestBuiltins(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	r, mem := alloc(t, d, 1<<12)
	for i := range 1000 {
		mem[i] = byte(i)
	}
	fill := entry(t, d, "fill")
	cp := entry(t, d, "copy")
	empty := entry(t, d, "empty")
	sleep := entry(t, d, "sleep")
	fp := append(p64(addr(r)+2000, 1000), 7)
	start := time.Now()
	v := submit(t, d,
		launch(cp, [3]uint32{3, 1, 1}, [3]uint32{7, 1, 1}, p64(addr(r)+1000, addr(r), 1000)),
		launch(fill, [3]uint32{5, 1, 1}, [3]uint32{3, 1, 1}, fp),
		one(empty, nil),
		one(sleep, p64(uint64(20*time.Millisecond))))
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Error("sleep did not sleep")
	}
	for i := range 1000 {
		if mem[1000+i] != byte(i) || mem[2000+i] != 7 {
			t.Fatalf("byte %d: copied %d, filled %d", i, mem[1000+i], mem[2000+i])
		}
	}
}

func TestCopies(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	for _, tc := range []struct {
		name               string
		queue              int
		srcOff, dstOff     uint64
		rowBytes, rows     uint64
		srcPitch, dstPitch uint64
		filling            bool
		fillByte           byte
	}{
		{"one row", device.Copy, 0, 0, 100, 1, 0, 0, false, 0},
		{"one row on compute", device.Compute, 5, 9, 100, 1, 0, 0, false, 0},
		{"packed rows", device.Copy, 0, 0, 16, 8, 16, 16, false, 0},
		{"pitched", device.Copy, 3, 7, 10, 9, 33, 17, false, 0},
		{"pitched on compute", device.Compute, 3, 7, 10, 9, 17, 33, false, 0},
		{"fill", device.Copy, 0, 11, 10, 9, 0, 20, true, 0xab},
		{"fill zero", device.Compute, 0, 11, 10, 9, 0, 20, true, 0},
		{"nothing", device.Copy, 0, 0, 0, 5, 0, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, sm := alloc(t, d, 1024)
			dst, dm := alloc(t, d, 1024)
			defer d.Free(src)
			defer d.Free(dst)
			for i := range sm {
				sm[i], dm[i] = byte(i*7+1), 0x55
			}
			want := slices.Clone(dm)
			for r := range tc.rows {
				for j := range tc.rowBytes {
					b := sm[tc.srcOff+r*tc.srcPitch+j]
					if tc.filling {
						b = tc.fillByte
					}
					want[tc.dstOff+r*tc.dstPitch+j] = b
				}
			}
			v := submit(t, d, device.Part{Kind: device.CopyRows, Queue: tc.queue, Src: src, Dst: dst,
				SrcOffset: tc.srcOff, DstOffset: tc.dstOff, RowBytes: tc.rowBytes, Rows: tc.rows,
				SrcPitch: tc.srcPitch, DstPitch: tc.dstPitch, Filling: tc.filling, Byte: tc.fillByte})
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			if i := firstDiff(dm, want); i >= 0 {
				t.Fatalf("byte %d is %#x, want %#x", i, dm[i], want[i])
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// logPart is a launch of test.log that logs id after sleeping for ns.
func logPart(e *device.Entry, id uint64, ns time.Duration) device.Part {
	return one(e, p64(id, uint64(ns)))
}

func fillPart(queue int, id uint64) device.Part {
	return device.Part{Kind: device.Fill, Queue: queue, FillFn: logFill, FillArg: uintptr(id)}
}

func TestOrder(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		values [][]device.Part // FillFn/Entry filled in below
		want   []uint64
	}{
		// Value 2's copy queue waits for value 1's compute work.
		{"device order", [][]device.Part{
			{logPart(nil, 1, 20*ms)},
			{fillPart(device.Copy, 2)},
		}, []uint64{1, 2}},
		// Value 2's compute work waits for value 1's copy work.
		{"device order from copy", [][]device.Part{
			{logPart(nil, 1, 10*ms), fillPart(device.Compute, 2), fillPart(device.Copy, 3)},
			{logPart(nil, 4, 0)},
		}, []uint64{3, 1, 2, 4}},
		// A queue runs its parts in order.
		{"queue order", [][]device.Part{
			{logPart(nil, 1, 10*ms), fillPart(device.Compute, 2), logPart(nil, 3, 0)},
		}, []uint64{1, 2, 3}},
		// After orders a copy part after a compute part.
		{"after", [][]device.Part{
			{logPart(nil, 1, 20*ms), withAfter(fillPart(device.Copy, 2), 1)},
		}, []uint64{1, 2}},
		// Without After, the copy queue runs beside the compute queue.
		{"queues at once", [][]device.Part{
			{logPart(nil, 1, 50*ms), fillPart(device.Copy, 2)},
		}, []uint64{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDev(t, Config{}, 0)
			e := entry(t, d, "test.log")
			logReset()
			var v uint64
			for _, parts := range tc.values {
				parts = slices.Clone(parts)
				for i := range parts {
					if parts[i].Kind == device.Launch {
						parts[i].Entry = e
					}
				}
				v = submit(t, d, parts...)
			}
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			got := logVals()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ran %v, want %v", got, tc.want)
			}
		})
	}
}

func withAfter(p device.Part, after int) device.Part {
	p.After = after
	return p
}

func TestOrderAfterFromCopy(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "test.log")
	slow := FillFunc(func(arg uintptr) { time.Sleep(20 * time.Millisecond); logAppend(uint64(arg)) })
	logReset()
	v := submit(t, d,
		device.Part{Kind: device.Fill, Queue: device.Copy, FillFn: slow, FillArg: 1},
		withAfter(logPart(e, 2, 0), 1))
	v2 := submit(t, d, fillPart(device.Compute, 3))
	if err := reach(t, d, v2); err != nil || v2 != v+1 {
		t.Fatal(err)
	}
	if got := logVals(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("ran %v, want [1 2 3]", got)
	}
}

func TestWaits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		start, wait uint64 // the other word's start, and the value waited for
	}{
		{"plain", 0, 5},
		{"wrapped", math.MaxUint64 - 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, w := newDev(t, Config{}, 100)
			other := new(uint64)
			*other = tc.start
			logReset()
			v := submitS(t, d, &device.Submission{
				Waits: []device.Wait{{Word: other, Value: tc.wait}},
				Parts: []device.Part{fillPart(device.Compute, 1)},
			})
			if v != 101 {
				t.Fatalf("value %d, want 101", v)
			}
			// The word moves from seen only once the other word allows.
			if err := d.Sleep(100, 30*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if got := atomic.LoadUint64(w); got != 100 || len(logVals()) != 0 {
				t.Fatalf("word reached %d before the wait held", got)
			}
			atomic.StoreUint64(other, tc.wait-1)
			time.Sleep(10 * time.Millisecond)
			if got := atomic.LoadUint64(w); got != 100 {
				t.Fatalf("word reached %d before the wait held", got)
			}
			atomic.StoreUint64(other, tc.wait+3)
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			if got := logVals(); !slices.Equal(got, []uint64{1}) {
				t.Fatalf("ran %v", got)
			}
		})
	}
}

// TestPeerWait runs work on one device that waits on another's word and
// reads its memory through MapPeer.
func TestPeerWait(t *testing.T) {
	a, _ := newDev(t, Config{Name: "a"}, 0)
	b, _ := newDev(t, Config{Name: "b"}, 0)
	if !a.Peer(b) || !b.Peer(a) {
		t.Fatal("two host devices are not peers")
	}
	ra, ma := alloc(t, a, 4096)
	rb, mb := alloc(t, b, 4096)
	view, err := b.MapPeer(a, ra)
	if err != nil {
		t.Fatal(err)
	}
	if b.Locate(view).Address != addr(ra) {
		t.Fatal("a view's address differs from its region's")
	}
	sleep := entry(t, a, "sleep")
	va := submit(t, a,
		one(sleep, p64(uint64(20*time.Millisecond))),
		device.Part{Kind: device.CopyRows, Queue: device.Copy, Dst: ra, RowBytes: 4096, Rows: 1, Filling: true, Byte: 9},
	)
	vb := submitS(t, b, &device.Submission{
		Waits: []device.Wait{{Word: a.word, Value: va}},
		Parts: []device.Part{{Kind: device.CopyRows, Queue: device.Copy, Src: view, Dst: rb, RowBytes: 4096, Rows: 1}},
	})
	if err := reach(t, b, vb); err != nil {
		t.Fatal(err)
	}
	if mb[4095] != 9 || ma[0] != 9 {
		t.Fatalf("b read %d through its view", mb[4095])
	}
	// A copy from a's region itself, rather than the view, is refused.
	s := &device.Submission{Value: vb + 1, Parts: []device.Part{{Kind: device.CopyRows, Queue: device.Copy, Src: ra, Dst: rb, RowBytes: 1, Rows: 1}}}
	if ans := b.Room(s); ans.Kind != device.RoomNever || !strings.Contains(ans.Reason, "another device") {
		t.Fatalf("room answered %+v", ans)
	}
	if err := b.Free(view); err != nil {
		t.Fatal(err)
	}
}

func TestRoomNever(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	other, _ := newDev(t, Config{Name: "other"}, 0)
	e := entry(t, d, "twice:8")
	r, _ := alloc(t, d, 4096)
	ro, _ := alloc(t, other, 4096)
	freed, _ := alloc(t, d, 4096)
	d.Free(freed)
	g1 := [3]uint32{1, 1, 1}
	ok := launch(e, g1, g1, p64(addr(r)))
	cp := func(f func(p *device.Part)) device.Part {
		p := device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: r, Dst: r, RowBytes: 64, Rows: 4, SrcPitch: 64, DstPitch: 64}
		f(&p)
		return p
	}
	ln := func(f func(p *device.Part)) device.Part {
		p := ok
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name  string
		parts []device.Part
		part  int
		why   string
	}{
		{"unknown kind", []device.Part{ok, {Kind: 9}}, 1, "unknown kind"},
		{"no kind", []device.Part{{}}, 0, "unknown kind"},
		{"queue out of range", []device.Part{cp(func(p *device.Part) { p.Queue = 2 })}, 0, "queue 2"},
		{"negative queue", []device.Part{cp(func(p *device.Part) { p.Queue = -1 })}, 0, "queue -1"},
		{"launch on copy", []device.Part{ln(func(p *device.Part) { p.Queue = device.Copy })}, 0, "COPY:0"},
		{"group axis 0", []device.Part{ln(func(p *device.Part) { p.Groups[1] = 0 })}, 0, "axis of size 0"},
		{"thread axis 0", []device.Part{ln(func(p *device.Part) { p.Threads[2] = 0 })}, 0, "axis of size 0"},
		{"too many threads", []device.Part{ln(func(p *device.Part) { p.Threads = [3]uint32{32, 33, 1} })}, 0, "over the 1024 threads"},
		{"threads product wraps 64 bits", []device.Part{ln(func(p *device.Part) { p.Threads = [3]uint32{1 << 31, 1 << 31, 4} })}, 0, "over the 1024 threads"},
		{"threads product wraps to a small count", []device.Part{ln(func(p *device.Part) { p.Threads = [3]uint32{1<<29 + 1<<15 + 1, 1<<29 - 1<<15 + 1, 64} })}, 0, "over the 1024 threads"},
		{"too many threads z", []device.Part{ln(func(p *device.Part) { p.Threads = [3]uint32{1, 1, 65} })}, 0, "along z"},
		{"too many groups", []device.Part{ln(func(p *device.Part) { p.Groups = [3]uint32{1, 65536, 1} })}, 0, "groups"},
		{"shared", []device.Part{ln(func(p *device.Part) { p.Shared = MaxShared + 1 })}, 0, "dynamic shared"},
		{"short params", []device.Part{ln(func(p *device.Part) { p.Params = p.Params[:4] })}, 0, "parameter bytes"},
		{"no entry", []device.Part{ln(func(p *device.Part) { p.Entry = nil })}, 0, "no entry"},
		{"foreign entry", []device.Part{ln(func(p *device.Part) { p.Entry = &device.Entry{Name: "x", Threads: 1} })}, 0, "another driver"},
		{"copy past dst", []device.Part{cp(func(p *device.Part) { p.DstOffset = 4096 - 64*3 })}, 0, "past its end"},
		{"copy past src", []device.Part{cp(func(p *device.Part) { p.SrcPitch = 2000 })}, 0, "past its end"},
		{"copy offset overflow", []device.Part{cp(func(p *device.Part) { p.SrcOffset = math.MaxUint64 - 10 })}, 0, "past its end"},
		{"copy pitch overflow", []device.Part{cp(func(p *device.Part) { p.DstPitch = math.MaxUint64 / 2 })}, 0, "past its end"},
		{"copy narrow pitch", []device.Part{cp(func(p *device.Part) { p.DstPitch = 10 })}, 0, "destination pitch of 10"},
		{"copy narrow source pitch", []device.Part{cp(func(p *device.Part) { p.SrcPitch = 10 })}, 0, "source pitch of 10"},
		{"copy of rows from one place", []device.Part{cp(func(p *device.Part) { p.SrcPitch = 0 })}, 0, "source pitch of 0"},
		{"fill past end", []device.Part{cp(func(p *device.Part) { p.Filling = true; p.Src = nil; p.RowBytes = 4097; p.Rows = 1 })}, 0, "past its end"},
		{"copy of another device", []device.Part{cp(func(p *device.Part) { p.Src = ro })}, 0, "another device"},
		{"copy of a freed region", []device.Part{cp(func(p *device.Part) { p.Dst = freed })}, 0, "freed"},
		{"copy of no region", []device.Part{cp(func(p *device.Part) { p.Src = nil })}, 0, "not the host driver's"},
		{"fill of no function", []device.Part{{Kind: device.Fill, Queue: device.Copy, FillFn: func() {}}}, 0, "FillFunc"},
		{"words", []device.Part{{Kind: device.Words, Queue: device.Compute, Words: []uint32{1, 2}}}, 0, "no ring entries"},
		{"odd words", []device.Part{{Kind: device.Words, Queue: device.Compute, Words: []uint32{1, 2, 3}}}, 0, "odd"},
		{"after self", []device.Part{ok, withAfter(ok, 2)}, 1, "below its own index"},
		{"after later", []device.Part{withAfter(ok, 2), ok}, 0, "below its own index"},
		{"after negative", []device.Part{withAfter(ok, -1)}, 0, "below its own index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &device.Submission{Value: 1, Parts: tc.parts}
			a := d.Room(s)
			if a.Kind != device.RoomNever || a.Part != tc.part || !strings.Contains(a.Reason, tc.why) {
				t.Fatalf("room answered %+v, want never for part %d naming %q", a, tc.part, tc.why)
			}
			if sa := d.Submit(s); sa.Kind != device.Failed {
				t.Fatalf("submit of a refused submission answered %+v", sa)
			}
		})
	}
	if got := atomic.LoadUint64(d.word); got != 0 {
		t.Fatalf("refused submissions moved the word to %d", got)
	}
	// A good submission after the refusals runs.
	v := submit(t, d, ok)
	if err := reach(t, d, v); err != nil || v != 1 {
		t.Fatal(v, err)
	}
}

// TestRoomNeverWaits refuses waits on no word and on a word that is not
// 8-byte aligned, which the sequencer's atomic loads cannot read, naming
// the wait; the device runs on.
func TestRoomNeverWaits(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	var words [2]uint64
	odd := device.Wait{Value: 1}
	*(*uintptr)(unsafe.Pointer(&odd.Word)) = uintptr(unsafe.Pointer(&words[0])) + 4
	good := device.Wait{Word: &words[1]}
	for _, tc := range []struct {
		name string
		wait device.Wait
		why  string
	}{
		{"no word", device.Wait{Value: 1}, "wait 1 is on no word"},
		{"misaligned word", odd, "not 8-byte aligned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &device.Submission{Value: 1, Waits: []device.Wait{good, tc.wait}, Parts: []device.Part{fillPart(device.Compute, 1)}}
			a := d.Room(s)
			if a.Kind != device.RoomNever || a.Part != -1 || !strings.Contains(a.Reason, tc.why) {
				t.Fatalf("room answered %+v, want never for the submission naming %q", a, tc.why)
			}
			if sa := d.Submit(s); sa.Kind != device.Failed || !strings.Contains(sa.Reason, tc.why) {
				t.Fatalf("submit of a refused submission answered %+v", sa)
			}
		})
	}
	logReset()
	v := submitS(t, d, &device.Submission{Waits: []device.Wait{good}, Parts: []device.Part{fillPart(device.Compute, 1)}})
	if err := reach(t, d, v); err != nil || v != 1 {
		t.Fatal(v, err)
	}
	if got := logVals(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("ran %v, want [1]", got)
	}
}

func TestRoomLater(t *testing.T) {
	d, w := newDev(t, Config{Ring: 3}, 0)
	gate := new(uint64)
	var s device.Submission
	s.Waits = []device.Wait{{Word: gate, Value: 1}}
	for v := uint64(1); v <= 3; v++ {
		s.Value = v
		if a := d.Room(&s); a.Kind != device.RoomOK {
			t.Fatalf("room for value %d answered %+v", v, a)
		}
		if a := d.Submit(&s); a.Kind != device.Committed {
			t.Fatalf("submit answered %+v", a)
		}
	}
	s.Value = 4
	for range 3 {
		if a := d.Room(&s); a.Kind != device.RoomLater {
			t.Fatalf("room with 3 values in flight answered %+v", a)
		}
	}
	atomic.StoreUint64(gate, 1)
	if err := reach(t, d, 1); err != nil {
		t.Fatal(err)
	}
	if a := d.Room(&s); a.Kind != device.RoomOK {
		t.Fatalf("room after value 1 completed answered %+v", a)
	}
	d.Submit(&s)
	if err := reach(t, d, 4); err != nil || atomic.LoadUint64(w) != 4 {
		t.Fatal(err)
	}
}

// TestRoomLaterArena fills the parameter arena with values held back by a
// wait, so that Room returns RoomLater until they complete.
func TestRoomLaterArena(t *testing.T) {
	d, _ := newDev(t, Config{Grow: true}, 0)
	e := entry(t, d, "empty:0")
	gate := new(uint64)
	p := one(e, make([]byte, 40)) // 40 of the 64 bytes the arena holds
	s := &device.Submission{Value: 1, Waits: []device.Wait{{Word: gate, Value: 1}}, Parts: []device.Part{p}}
	if a := d.Room(s); a.Kind != device.RoomOK {
		t.Fatal(a)
	}
	d.Submit(s)
	s.Value = 2
	if a := d.Room(s); a.Kind != device.RoomLater {
		t.Fatalf("room answered %+v with the arena full", a)
	}
	atomic.StoreUint64(gate, 1)
	v := submitS(t, d, &device.Submission{Parts: []device.Part{p}})
	if err := reach(t, d, v); err != nil || v != 2 {
		t.Fatal(v, err)
	}
}

func TestGrow(t *testing.T) {
	d, _ := newDev(t, Config{Grow: true, Budget: 1 << 20}, 0)
	e := entry(t, d, "test.index")
	r, mem := alloc(t, d, 4096)
	parts := make([]device.Part, 10)
	for i := range parts {
		parts[i] = one(e, append(p64(addr(r)+4*uint64(i)), make([]byte, 100)...))
	}
	s := &device.Submission{Value: 1, Parts: parts, Waits: make([]device.Wait, 5)}
	for i := range s.Waits {
		s.Waits[i] = device.Wait{Word: new(uint64)}
	}
	if a := d.Room(s); a.Kind != device.RoomGrow {
		t.Fatalf("room answered %+v, want grow", a)
	}
	before := d.used.Load()
	if err := d.Grow(); err != nil {
		t.Fatal(err)
	}
	if d.used.Load() <= before {
		t.Fatal("grow took nothing from the budget")
	}
	if a := d.Room(s); a.Kind != device.RoomOK {
		t.Fatalf("room after grow answered %+v", a)
	}
	d.Submit(s)
	if err := reach(t, d, 1); err != nil {
		t.Fatal(err)
	}
	for i := range parts {
		if binary.LittleEndian.Uint32(mem[4*i:]) != 1 {
			t.Fatalf("part %d did not run", i)
		}
	}
	// Many more values run through the grown ring, wrapping it.
	for range 100 {
		submit(t, d, parts...)
	}
	if err := reach(t, d, 101); err != nil {
		t.Fatal(err)
	}
	if c := binary.LittleEndian.Uint32(mem); c != 101 {
		t.Fatalf("part 0 ran %d times, want 101", c)
	}

	// A growth the budget lacks is Short.
	d2, _ := newDev(t, Config{Grow: true, Budget: 8192}, 0)
	e2 := entry(t, d2, "empty:0")
	alloc(t, d2, 4096)
	s2 := &device.Submission{Value: 1, Parts: []device.Part{one(e2, make([]byte, 8000))}}
	if a := d2.Room(s2); a.Kind != device.RoomGrow {
		t.Fatalf("room answered %+v, want grow", a)
	}
	var short *device.Short
	if err := d2.Grow(); !errors.As(err, &short) || short.N < 8000 {
		t.Fatalf("grow answered %v, want short of at least 8000 bytes", err)
	}
}

// sleepFault sleeps until d returns a fault, and returns it.
func sleepFault(t *testing.T, d *dev) *device.Fault {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		err := d.Sleep(atomic.LoadUint64(d.word), 100*time.Millisecond)
		if err != nil {
			f, ok := device.AsFault(err)
			if !ok {
				t.Fatalf("sleep answered %v, want a fault", err)
			}
			return f
		}
	}
	t.Fatal("no fault after 10 s")
	return nil
}

// TestSubmitOwnFault faults the device with the work of the value that
// Submit hands over, before Submit answers: the work was taken, so Submit
// answers Committed, and the fault is Sleep's to return; a later Submit
// answers Failed.
func TestSubmitOwnFault(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "fault:0")
	look := func() {
		deadline := time.Now().Add(10 * time.Second)
		for d.fault.Load() == nil {
			if time.Now().After(deadline) {
				t.Error("the value's fault did not come within 10 s")
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	d.submitLook.Store(&look)
	s := &device.Submission{Value: 1, Parts: []device.Part{one(e, nil)}}
	if a := d.Room(s); a.Kind != device.RoomOK {
		t.Fatal(a)
	}
	if a := d.Submit(s); a.Kind != device.Committed {
		t.Fatalf("submit of the work that faulted answered %+v, want Committed", a)
	}
	d.submitLook.Store(nil)
	f := sleepFault(t, d)
	if !f.HasReached || f.Reached != 0 {
		t.Fatalf("fault reached %d (%v), want 0", f.Reached, f.HasReached)
	}
	s = &device.Submission{Value: 2, Parts: []device.Part{fillPart(device.Copy, 2)}}
	if a := d.Room(s); a.Kind != device.RoomOK {
		t.Fatal(a)
	}
	if a := d.Submit(s); a.Kind != device.Failed || a.Reason != f.Why {
		t.Fatalf("submit after the fault answered %+v, want Failed with %q", a, f.Why)
	}
}

func TestFault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel string
		params []byte
		why    []string
	}{
		{"panic", "panic", nil, []string{`kernel "panic"`, "panic", "thread [0 0 0]"}},
		{"ctx fault", "fault", []byte("bad thing\x00\x00"), []string{"bad thing"}},
		{"ctx fault default", "fault", nil, []string{"fault kernel faulted"}},
		{"address outside", "twice", p64(8), []string{`kernel "twice"`, "outside every region"}},
		{"params short", "test.log", nil, []string{"parameter bytes at 8 of 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, w := newDev(t, Config{}, 0)
			e := entry(t, d, tc.kernel+":0")
			logReset()
			v0 := submit(t, d, fillPart(device.Compute, 0))
			v1 := submit(t, d, launch(e, [3]uint32{4, 1, 1}, [3]uint32{8, 1, 1}, tc.params), fillPart(device.Compute, 1))
			f := sleepFault(t, d)
			for _, s := range tc.why {
				if !strings.Contains(f.Why, s) {
					t.Errorf("fault %q does not name %q", f.Why, s)
				}
			}
			// Later work is skipped, and the word stays before the value
			// that faulted.
			s := &device.Submission{Value: v1 + 1, Parts: []device.Part{fillPart(device.Copy, 2)}}
			if a := d.Room(s); a.Kind != device.RoomOK {
				t.Fatal(a)
			}
			if a := d.Submit(s); a.Kind != device.Failed || a.Reason != f.Why {
				t.Fatalf("submit after the fault answered %+v", a)
			}
			if err := d.Sleep(v0, 20*time.Millisecond); err != f {
				t.Fatalf("sleep answered %v, want the fault", err)
			}
			if got := atomic.LoadUint64(w); got != v0 {
				t.Fatalf("word at %d after the fault, want %d", got, v0)
			}
			if got := logVals(); !slices.Equal(got, []uint64{0}) {
				t.Fatalf("ran %v, want [0]", got)
			}
			// Stop writes the last value.
			d.Stop(f.Why)
			reach(t, d, v1+1)
			if got := atomic.LoadUint64(w); got != v1+1 {
				t.Fatalf("word at %d after stop, want %d", got, v1+1)
			}
		})
	}
}

func TestFaultFill(t *testing.T) {
	d, w := newDev(t, Config{}, 0)
	bad := FillFunc(func(uintptr) { panic("fill broke") })
	submit(t, d, device.Part{Kind: device.Fill, Queue: device.Copy, FillFn: bad})
	if f := sleepFault(t, d); !strings.Contains(f.Why, "fill broke") || !strings.Contains(f.Why, "running a fill") {
		t.Fatalf("fault %q", f.Why)
	}
	if *w != 0 {
		t.Fatal("the word reached the value that faulted")
	}
}

// TestFaultFreed copies into memory freed under the copy's feet: the
// host's MMU faults, which faults the device rather than the process.
func TestFaultFreed(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	r, _ := alloc(t, d, 4096)
	src, _ := alloc(t, d, 4096)
	gate := new(uint64)
	submitS(t, d, &device.Submission{
		Waits: []device.Wait{{Word: gate, Value: 1}},
		Parts: []device.Part{{Kind: device.CopyRows, Queue: device.Copy, Src: src, Dst: r, RowBytes: 4096, Rows: 1}},
	})
	d.Free(r)
	atomic.StoreUint64(gate, 1)
	if f := sleepFault(t, d); !strings.Contains(f.Why, "copying rows") || len(f.Detail) == 0 {
		t.Fatalf("fault %+v, want a fault of the copy with its address", f)
	}
}

func TestHangStop(t *testing.T) {
	d, w := newDev(t, Config{Hang: 100 * time.Millisecond}, 0)
	if d.Facts().HangMs != 100 {
		t.Fatal("hang bound not in the facts")
	}
	hang := entry(t, d, "hang")
	sleep := entry(t, d, "sleep")
	logReset()
	v1 := submit(t, d, launch(hang, [3]uint32{64, 1, 1}, [3]uint32{4, 1, 1}, nil))
	gate := new(uint64)
	v2 := submitS(t, d, &device.Submission{Waits: []device.Wait{{Word: gate, Value: 1}}, Parts: []device.Part{fillPart(device.Compute, 2)}})
	v3 := submit(t, d, one(sleep, p64(uint64(time.Hour))), fillPart(device.Copy, 3))
	if err := d.Sleep(0, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := atomic.LoadUint64(w); got != 0 {
		t.Fatalf("word at %d while the kernel hangs", got)
	}
	start := time.Now()
	if err := d.Stop("no progress for 100 ms"); err != nil {
		t.Fatal(err)
	}
	// A Stop that waited for the work would wait for the hour's sleep.
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("stop waited %v", took)
	}
	if err := reach(t, d, v3); err != nil {
		t.Fatal(err)
	}
	if got := atomic.LoadUint64(w); got != v3 {
		t.Fatalf("word at %d, want the last value %d", got, v3)
	}
	done := make(chan struct{})
	go func() { d.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("goroutines of the device run on after stop")
	}
	if got := logVals(); len(got) != 0 {
		t.Fatalf("dropped work ran: %v", got)
	}
	_ = v1
	_ = v2
	// After stop, a second Stop does nothing, Room refuses, and Free
	// works.
	d.Stop("")
	if a := d.Room(&device.Submission{Value: v3 + 1}); a.Kind != device.RoomNever {
		t.Fatalf("room after stop answered %+v", a)
	}
}

func TestStopIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait bool // the last value waits on a word no one writes
	}{
		{"idle", false},
		{"waiting", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, w := newDev(t, Config{}, 7)
			e := entry(t, d, "empty")
			v := submit(t, d, one(e, nil))
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			if tc.wait {
				v = submitS(t, d, &device.Submission{Waits: []device.Wait{{Word: new(uint64), Value: 1}}, Parts: []device.Part{one(e, nil)}})
				time.Sleep(5 * time.Millisecond)
			}
			d.Stop("")
			// No work ran: Stop wrote the last value before it returned.
			if got := atomic.LoadUint64(w); got != v {
				t.Fatalf("word at %d after stop, want %d", got, v)
			}
		})
	}
}

func TestStopFreshDevice(t *testing.T) {
	d, w := newDev(t, Config{}, 42)
	d.Stop("")
	if got := atomic.LoadUint64(w); got != 42 {
		t.Fatalf("word at %d, want 42", got)
	}
}

func TestSettle(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "test.log")
	logReset()
	var vs []uint64
	for i := range 10 {
		s := &device.Submission{Timed: i%3 != 2, Parts: []device.Part{logPart(e, uint64(i), time.Millisecond)}}
		if i%2 == 1 {
			s.Parts = append(s.Parts, fillPart(device.Copy, 100))
		}
		v := submitS(t, d, s)
		if s.Timed {
			vs = append(vs, v)
		}
	}
	if err := reach(t, d, 10); err != nil {
		t.Fatal(err)
	}
	st, err := d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != len(vs) {
		t.Fatalf("%d stamps, want %d", len(st), len(vs))
	}
	var last int64
	for i, s := range st {
		if s.Value != vs[i] || s.Start > s.End || s.Start < last || s.End-s.Start < int64(time.Millisecond) {
			t.Fatalf("stamp %d: %+v (previous end %d)", i, s, last)
		}
		if s.Queue != device.Compute && s.Queue != device.Copy {
			t.Fatalf("stamp %d on queue %d", i, s.Queue)
		}
		last = s.End
	}
	if st, _ := d.Settle(st[:0]); len(st) != 0 {
		t.Fatalf("a second settle appended %d stamps", len(st))
	}
}

func TestSubmitAllocs(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "twice")
	r, _ := alloc(t, d, 4096)
	gate := new(uint64)
	*gate = 1
	s := &device.Submission{
		Waits: []device.Wait{{Word: gate, Value: 1}},
		Parts: []device.Part{
			launch(e, [3]uint32{4, 1, 1}, [3]uint32{64, 1, 1}, p64(addr(r))),
			{Kind: device.CopyRows, Queue: device.Copy, Src: r, Dst: r, RowBytes: 64, Rows: 2, SrcPitch: 64, DstPitch: 128},
			fillPart(device.Copy, 0),
		},
	}
	logReset()
	v := uint64(0)
	allocs := testing.AllocsPerRun(2000, func() {
		v++
		s.Value = v
		for d.Room(s).Kind == device.RoomLater {
		}
		if d.Submit(s).Kind != device.Committed {
			panic("not committed")
		}
	})
	if allocs != 0 {
		t.Fatalf("room and submit allocate %v times a value", allocs)
	}
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
}

// The benchmarks measure hostdev against an anchor in the same run: a bare
// goroutine pipeline, whose producer sends each value on a channel to a
// goroutine that stores it into a word.

// anchor is the bare pipeline: it returns the send of a value, and a stop.
func anchor(word *uint64) (send func(uint64), stop func()) {
	ch := make(chan uint64, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for v := range ch {
			atomic.StoreUint64(word, v)
		}
	}()
	return func(v uint64) { ch <- v }, func() { close(ch); <-done }
}

// BenchmarkPipelined submits values of one empty launch without waiting,
// and waits for the last.
func BenchmarkPipelined(b *testing.B) {
	b.Run("hostdev", func(b *testing.B) {
		d, _ := newDev(b, Config{}, 0)
		s := &device.Submission{Parts: []device.Part{one(entry(b, d, "empty"), nil)}}
		b.ReportAllocs()
		var v uint64
		for b.Loop() {
			v++
			s.Value = v
			for d.Room(s).Kind != device.RoomOK {
				runtime.Gosched()
			}
			d.Submit(s)
		}
		for atomic.LoadUint64(d.word) != v {
			runtime.Gosched()
		}
	})
	b.Run("anchor", func(b *testing.B) {
		word := new(uint64)
		send, stop := anchor(word)
		defer stop()
		b.ReportAllocs()
		var v uint64
		for b.Loop() {
			v++
			send(v)
		}
		for atomic.LoadUint64(word) != v {
			runtime.Gosched()
		}
	})
}

// BenchmarkRoundTrip submits a value of one empty launch and waits for it
// with Sleep, as rig's supervisor does, before the next.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("hostdev", func(b *testing.B) {
		d, _ := newDev(b, Config{}, 0)
		s := &device.Submission{Parts: []device.Part{one(entry(b, d, "empty"), nil)}}
		b.ReportAllocs()
		var v uint64
		for b.Loop() {
			v++
			s.Value = v
			for d.Room(s).Kind != device.RoomOK {
			}
			d.Submit(s)
			for {
				seen := atomic.LoadUint64(d.word)
				if seen == v {
					break
				}
				d.Sleep(seen, time.Second)
			}
		}
	})
	b.Run("anchor", func(b *testing.B) {
		word := new(uint64)
		ch := make(chan uint64)
		back := make(chan struct{})
		go func() {
			for v := range ch {
				atomic.StoreUint64(word, v)
				back <- struct{}{}
			}
		}()
		defer close(ch)
		b.ReportAllocs()
		var v uint64
		for b.Loop() {
			v++
			ch <- v
			<-back
		}
	})
}

// BenchmarkLaunch runs a launch of 64 groups of 256 threads of twice, and
// waits for it.
func BenchmarkLaunch(b *testing.B) {
	d, _ := newDev(b, Config{}, 0)
	r, _ := alloc(b, d, 4*64*256)
	s := &device.Submission{Parts: []device.Part{launch(entry(b, d, "twice"), [3]uint32{64, 1, 1}, [3]uint32{256, 1, 1}, p64(addr(r)))}}
	b.ReportAllocs()
	var v uint64
	for b.Loop() {
		v++
		s.Value = v
		for d.Room(s).Kind != device.RoomOK {
		}
		d.Submit(s)
		for {
			seen := atomic.LoadUint64(d.word)
			if seen == v {
				break
			}
			d.Sleep(seen, time.Second)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(64*256), "ns/thread")
}

// TestSleepWakes sleeps with a long still on several goroutines at once:
// each returns as soon as the word moves, or the device faults.
func TestSleepWakes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kernel  string
		sleeper int
		fault   bool
	}{
		{"one sleeper", "empty", 1, false},
		{"many sleepers", "empty", 4, false},
		{"fault", "panic", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDev(t, Config{}, 5)
			e := entry(t, d, tc.kernel)
			gate := new(uint64)
			submitS(t, d, &device.Submission{Waits: []device.Wait{{Word: gate, Value: 1}}, Parts: []device.Part{one(e, nil)}})
			errs := make(chan error, tc.sleeper)
			for range tc.sleeper {
				go func() { errs <- d.Sleep(5, time.Minute) }()
			}
			time.Sleep(20 * time.Millisecond)
			atomic.StoreUint64(gate, 1)
			for range tc.sleeper {
				select {
				case err := <-errs:
					if _, isFault := device.AsFault(err); isFault != tc.fault {
						t.Fatalf("sleep answered %v", err)
					}
				case <-time.After(30 * time.Second):
					// A bound on a sleep of a minute, not a measure of
					// speed.
					t.Fatal("a sleeper slept on after the word moved")
				}
			}
		})
	}
}

// TestFaultEndsHang faults the device while a kernel hangs: the fault ends
// the hang, as it ends a GPU context's work, so that Stop finds no work
// running and writes the last value before it returns.
func TestFaultEndsHang(t *testing.T) {
	d, w := newDev(t, Config{}, 0)
	hang := entry(t, d, "hang")
	bad := FillFunc(func(uintptr) { time.Sleep(10 * time.Millisecond); panic("copy engine broke") })
	v := submit(t, d, one(hang, nil), device.Part{Kind: device.Fill, Queue: device.Copy, FillFn: bad})
	if f := sleepFault(t, d); !strings.Contains(f.Why, "copy engine broke") {
		t.Fatalf("fault %q", f.Why)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d.mu.Lock()
		running := d.running
		d.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hang outlived the fault")
		}
		time.Sleep(time.Millisecond)
	}
	if *w != 0 {
		t.Fatalf("word at %d, want 0", *w)
	}
	d.Stop("copy engine broke")
	if got := atomic.LoadUint64(w); got != v {
		t.Fatalf("word at %d after stop, want %d", got, v)
	}
}

// TestSubmitWithoutRoom submits without Room, and after a Room of other
// parts: Submit runs Room itself, and refuses what Room refuses.
func TestSubmitWithoutRoom(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "test.log")
	logReset()
	s := &device.Submission{Value: 1, Parts: []device.Part{logPart(e, 1, 0)}}
	if a := d.Submit(s); a.Kind != device.Committed {
		t.Fatalf("submit without room answered %+v", a)
	}
	s = &device.Submission{Value: 2, Parts: []device.Part{logPart(e, 2, 0)}}
	if a := d.Room(s); a.Kind != device.RoomOK {
		t.Fatal(a)
	}
	s.Parts = append(s.Parts, logPart(e, 3, 0), logPart(e, 4, 0))
	if a := d.Submit(s); a.Kind != device.Committed {
		t.Fatalf("submit of more parts than room saw answered %+v", a)
	}
	s = &device.Submission{Value: 3, Parts: []device.Part{{Kind: device.Words}}}
	if a := d.Submit(s); a.Kind != device.Failed || !strings.Contains(a.Reason, "no ring entries") {
		t.Fatalf("submit of words answered %+v", a)
	}
	if err := reach(t, d, 2); err != nil {
		t.Fatal(err)
	}
	if got := logVals(); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("ran %v", got)
	}
}

func init() {
	// test.ctx runs the Ctx call that the uint32 at 0 selects, on the
	// address at 8.
	RegisterParams("test.ctx", 16, func(k *Ctx) {
		a := k.Uint64(8)
		switch k.Uint32(0) {
		case 0:
			k.Float32s(a, 4)[3] = 1.5
		case 1:
			k.Float32s(a+2, 1)
		case 2:
			k.Bytes(a, -1)
		case 3:
			k.Float32s(a, -1)
		case 4:
			k.Uint32(14)
		case 5:
			if k.Float32s(a, 0) != nil || len(k.Bytes(a, 0)) != 0 {
				k.Fault("empty slices are not empty")
			}
		}
	})
}

func TestCtx(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   uint32
		why  string
	}{
		{"float32s", 0, ""},
		{"empty", 5, ""},
		{"misaligned", 1, "not a multiple of 4"},
		{"negative bytes", 2, "asked for -1 bytes"},
		{"negative floats", 3, "asked for -1 float32"},
		{"uint32 past params", 4, "4 parameter bytes at 14 of 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDev(t, Config{}, 0)
			r, mem := alloc(t, d, 64)
			params := p64(uint64(tc.op), addr(r))
			v := submit(t, d, one(entry(t, d, "test.ctx"), params))
			if tc.why != "" {
				if f := sleepFault(t, d); !strings.Contains(f.Why, tc.why) || !strings.Contains(f.Why, "test.ctx") {
					t.Fatalf("fault %q, want one naming %q", f.Why, tc.why)
				}
				return
			}
			if err := reach(t, d, v); err != nil {
				t.Fatal(err)
			}
			if tc.op == 0 && binary.LittleEndian.Uint32(mem[12:]) != math.Float32bits(1.5) {
				t.Fatal("Float32s did not write")
			}
		})
	}
}

func TestCommitAndGuard(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	if a := d.Commit(7); a.Kind != device.Committed {
		t.Fatalf("commit answered %+v", a)
	}
	// Room while another Room runs is a programming error of the caller.
	d.q.busy.Store(true)
	defer func() {
		d.q.busy.Store(false)
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "while another Room or Submit") {
			t.Fatalf("panicked with %v", v)
		}
	}()
	d.Room(&device.Submission{Value: 1})
}

// TestGrowReap grows the ring twice and checks that the replaced arenas'
// bytes go back to the budget once their values completed.
func TestGrowReap(t *testing.T) {
	d, _ := newDev(t, Config{Grow: true}, 0)
	e := entry(t, d, "empty:0")
	for _, n := range []int{100, 1000} {
		v := submit(t, d, one(e, make([]byte, n)))
		if err := reach(t, d, v); err != nil {
			t.Fatal(err)
		}
	}
	grown := d.used.Load()
	if grown < 2048 {
		t.Fatalf("%d bytes of the budget taken after two growths", grown)
	}
	submit(t, d, one(e, nil)) // reaps the first growth
	if got := d.used.Load(); got >= grown {
		t.Fatalf("%d bytes of the budget taken after a reap, %d before", got, grown)
	}
}
