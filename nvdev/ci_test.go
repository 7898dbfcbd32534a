package nvdev

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/internal/testutil"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
	rig "github.com/rig-go/rig/runtime"
)

// Tests of the driver's logic on the fake path, which emulates the words
// the device writes; they need no GPU.

var bg = context.Background()

// cubin is the test kernels an RM driver loads: every kernel of the
// shared kernels.cu but the two that call vprintf and __assertfail.
func cubin(t testing.TB) []byte {
	t.Helper()
	b, ok := testkernels.NVCubin("sm_90")
	if !ok {
		t.Fatal("no test cubin for sm_90")
	}
	return b
}

// TestImageRefused checks that the device refuses an image that refers to
// the driver-supplied vprintf and __assertfail, even for kernels that do
// not call them, and a cubin of another architecture.
func TestImageRefused(t *testing.T) {
	r := openRaw(t, Config{})
	b, _ := testkernels.Cubin("sm_90")
	if _, err := r.d.Image(b); err == nil || !strings.Contains(err.Error(), "vprintf") {
		t.Errorf("the image with uses_printf: %v", err)
	}
	b, err := os.ReadFile("kernels/copy.sm_80.cubin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.Image(b); err == nil {
		t.Error("a cubin of another architecture was taken")
	}
	if code, err := r.d.Image(cubin(t)); err != nil || code.Place < 1 || code.Lay == nil {
		t.Errorf("the test image: %+v, %v", code, err)
	}
}

// mem is the n bytes at GPU address a of the fake.
func (f *fake) mem(a, n uint64) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bytesAt(a, n)
}

// twice runs the example's kernel on the fake: it doubles the floats at the
// address in the parameters, one a thread.
func (f *fake) twice(paramOffset int) {
	f.onLaunch = func(q hw.Qmd, bank []byte) {
		g, b := q.Grid(), q.Block()
		x := binary.LittleEndian.Uint64(bank[paramOffset:])
		n := uint64(g[0]) * uint64(b[0])
		xs := f.mem(x, 4*n)
		for i := uint64(0); i < n; i++ {
			v := math.Float32frombits(binary.LittleEndian.Uint32(xs[4*i:]))
			binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(2*v))
		}
	}
}

// TestFakeExample runs the example through rig on the fake: x goes
// up by a copy, twice doubles it, and it comes back down.
func TestFakeExample(t *testing.T) {
	f := newFake()
	c, err := hw.Parse(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := c.Kernel("twice")
	f.twice(k.ParamOffset)
	dev, err := rig.Open(bg, f.opener(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	gputest.Twice(t, bg, dev, cubin(t), 1<<12)
	if f.launches != 1 {
		t.Errorf("%d launches", f.launches)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dev.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the device did not give everything back")
	}
	if n := f.live(); n != 0 {
		t.Errorf("%d memories left after close", n)
	}
	if n := f.objectsOf(f.gpu.Channel); n != 0 {
		t.Errorf("%d channels left after close", n)
	}
}

// raw drives a device on the fake by hand.
type raw struct {
	t    testing.TB
	f    *fake // nil on a GPU
	d    *gpu
	slot int
	v    uint64
	mems []*nvidia.Memory
	imgs []device.Image
}

func openRaw(t testing.TB, c Config) *raw {
	t.Helper()
	return openRawAt(t, c, 0)
}

// openRawAt opens a device on the fake whose word starts at base, where
// base is not 0.
func openRawAt(t testing.TB, c Config, base uint64) *raw {
	t.Helper()
	f := newFake()
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	if base != 0 {
		atomic.StoreUint64(w, base)
	}
	d, err := f.open(w, c)
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	r := &raw{t: t, f: f, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	return r
}

// close stops the device and gives back what the test allocated, as rig
// does.
func (r *raw) close() {
	if err := r.d.Stop(""); err != nil {
		r.t.Errorf("stop: %v", err)
	}
	if got := r.d.Signaled(); got != r.v {
		r.t.Errorf("after stop the word reads %d, not %d", got, r.v)
	}
	for _, i := range r.imgs {
		if err := r.d.Unload(i); err != nil {
			r.t.Errorf("unload: %v", err)
		}
	}
	for _, m := range r.mems {
		if err := r.d.Free(m); err != nil {
			r.t.Errorf("free: %v", err)
		}
	}
	if r.d.own != nil {
		_ = r.d.Free(r.d.own)
	}
	timeline.Give(r.slot)
}

// pump lets the device progress: the fake runs its channels, a GPU gets a
// sleep.
func (r *raw) pump() {
	if r.f != nil {
		r.f.pump()
		return
	}
	if err := r.d.Sleep(r.d.Signaled(), time.Millisecond); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raw) room(s *device.Submission) device.RoomAnswer {
	s.Value = r.v + 1
	return r.d.Room(s)
}

// submit submits the parts after the waits, pumping the fake while the
// device returns later.
func (r *raw) submit(waits []device.Wait, parts ...device.Part) uint64 {
	r.t.Helper()
	return r.submitTimed(false, waits, parts...)
}

// submitTimed is submit of a timed or untimed submission.
func (r *raw) submitTimed(timed bool, waits []device.Wait, parts ...device.Part) uint64 {
	r.t.Helper()
	s := device.Submission{Value: r.v + 1, Waits: waits, Parts: parts, Timed: timed}
	for i := 0; ; i++ {
		a := r.d.Room(&s)
		if a.Kind == device.RoomOK {
			break
		}
		if a.Kind == device.RoomGrow {
			if err := r.d.Grow(); err != nil {
				r.t.Fatalf("grow for value %d: %v", s.Value, err)
			}
			continue
		}
		if a.Kind != device.RoomLater || i > 10000 {
			r.t.Fatalf("room of value %d (word %d): %+v", s.Value, r.d.Signaled(), a)
		}
		r.pump()
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		r.t.Fatalf("submit: %+v", a)
	}
	r.d.Kick(r.v)
	return r.v
}

// wait waits for the word to reach v, sleeping as rig does.
func (r *raw) wait(v uint64) {
	r.t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !device.AtLeast(r.d.Signaled(), v) {
		if time.Now().After(end) {
			r.t.Fatalf("the word reads %d, not %d, after 10 s; notifiers %x %x", r.d.Signaled(), v,
				r.d.ch[0].notifierWords(), r.d.ch[1].notifierWords())
		}
		if err := r.d.Sleep(r.d.Signaled(), time.Millisecond); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *raw) alloc(k device.Memory, n int) *nvidia.Memory {
	r.t.Helper()
	g, err := r.d.Alloc(k, n)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mems = append(r.mems, g.(*nvidia.Memory))
	return g.(*nvidia.Memory)
}

// layOwnImage lays the test cubin in the device's own memory, which the
// test unloads at its close.
func layOwnImage(r *raw) device.Image {
	r.t.Helper()
	code, err := r.d.Image(cubin(r.t))
	if err != nil {
		r.t.Fatal(err)
	}
	img, err := code.Lay(nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.imgs = append(r.imgs, img)
	return img
}

func (r *raw) entry(name string) *device.Entry {
	r.t.Helper()
	e, err := r.d.Entry(layOwnImage(r), name)
	if err != nil {
		r.t.Fatal(err)
	}
	return e
}

func launch(e *device.Entry, groups, threads uint32, params []byte) device.Part {
	return device.Part{Kind: device.Launch, Queue: qCompute, Entry: e, Groups: [3]uint32{groups, 1, 1},
		Threads: [3]uint32{threads, 1, 1}, Params: params}
}

func copyPart(q int, src, dst *nvidia.Memory, so, do, n uint64) device.Part {
	return device.Part{Kind: device.CopyRows, Queue: q, Src: src, Dst: dst, SrcOffset: so, DstOffset: do,
		RowBytes: n, Rows: 1, SrcPitch: n, DstPitch: n}
}

func fillPart(q int, dst *nvidia.Memory, off, n uint64, b byte) device.Part {
	return device.Part{Kind: device.CopyRows, Queue: q, Dst: dst, DstOffset: off, RowBytes: n, Rows: 1, DstPitch: n,
		Filling: true, Byte: b}
}

func hostOf(m *nvidia.Memory) []byte { return hostBytes(m, 0, m.Size) }

// TestGoldenWords checks the words of a launch's submission on the compute
// channel, the first after a lay and an entry: the caches' invalidation,
// the local memory, the launch, the release of the value into the word;
// in a channel group of its own, and in a subcontext of the shared group,
// whose wait for idle before the release covers the subcontext alone and
// whose words end by passing the PBDMA to the group's next channel.
func TestGoldenWords(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(map[bool]string{true: "own group", false: "subcontext"}[own], func(t *testing.T) { goldenWords(t, own) })
	}
}

func goldenWords(t *testing.T, own bool) {
	r := openRaw(t, Config{NoOwnRelease: true, SharedGroup: !own})
	e := r.entry("twice")
	r.f.trace = map[string][]hw.Write{}
	x := r.alloc(device.DeviceMemory, 1024)
	v := r.submit(nil, launch(e, 1, 256, u64s(x.Address)))
	r.wait(v)
	d := r.d
	l := d.local.Load()
	qmd := d.launchMem.Address + 768 // after a constant bank 0 of 0x218 bytes, rounded to 256
	want := []hw.Write{
		{Subchannel: hw.SubCompute, Method: hw.ComputeInvalidateShaderCachesNoWFI, Value: hw.InvalidateInstruction | hw.InvalidateConstant},
		{Subchannel: hw.SubCompute, Method: hw.ComputeLocalMemoryA, Value: uint32(l.mem.Address >> 32)},
		{Subchannel: hw.SubCompute, Method: hw.ComputeLocalMemoryB, Value: uint32(l.mem.Address)},
		{Subchannel: hw.SubCompute, Method: hw.ComputeLocalNonThrottledA, Value: uint32(l.perTPC >> 32)},
		{Subchannel: hw.SubCompute, Method: hw.ComputeLocalNonThrottledB, Value: uint32(l.perTPC)},
		{Subchannel: hw.SubCompute, Method: hw.ComputeLocalNonThrottledC, Value: 0xff},
		{Subchannel: hw.SubCompute, Method: hw.ComputeSendPcasA, Value: uint32(qmd >> 8)},
		{Subchannel: hw.SubCompute, Method: hw.ComputeSendSignalingPcas2B, Value: hw.PcasInvalidatePrefetchCopySchedule},
		{Subchannel: hw.SubHost, Method: hw.HostSemAddrLo, Value: uint32(d.wordGPU)},
		{Subchannel: hw.SubHost, Method: hw.HostSemAddrHi, Value: uint32(d.wordGPU >> 32)},
		{Subchannel: hw.SubHost, Method: hw.HostSemPayloadLo, Value: uint32(v)},
		{Subchannel: hw.SubHost, Method: hw.HostSemPayloadHi, Value: uint32(v >> 32)},
		{Subchannel: hw.SubHost, Method: hw.HostSemExecute, Value: hw.SemRelease | hw.SemReleaseWFI | hw.SemPayload64},
	}
	if !own {
		n := len(want)
		want = append(want[:n-5:n-5], hw.Write{Subchannel: hw.SubHost, Method: hw.HostWFI, Value: hw.WFIScopeSubcontext})
		want = append(want, hw.Write{Subchannel: hw.SubHost, Method: hw.HostSemAddrLo, Value: uint32(d.wordGPU)},
			hw.Write{Subchannel: hw.SubHost, Method: hw.HostSemAddrHi, Value: uint32(d.wordGPU >> 32)},
			hw.Write{Subchannel: hw.SubHost, Method: hw.HostSemPayloadLo, Value: uint32(v)},
			hw.Write{Subchannel: hw.SubHost, Method: hw.HostSemPayloadHi, Value: uint32(v >> 32)},
			hw.Write{Subchannel: hw.SubHost, Method: hw.HostSemExecute, Value: hw.SemRelease | hw.SemPayload64},
			hw.Write{Subchannel: hw.SubHost, Method: hw.HostYield, Value: hw.YieldOpChannel})
	}
	got := r.f.trace["channel 0"]
	if len(got) != len(want) {
		t.Fatalf("%d writes, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("write %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The descriptor and constant bank 0 the launch ring holds.
	q := hw.QmdOf(hw.QmdV04, hostWords(d.launchMem, 768, hw.QmdV04.Words))
	if g, b := q.Grid(), q.Block(); g != [3]uint32{1, 1, 1} || b != [3]uint32{256, 1, 1} {
		t.Errorf("grid %v block %v", g, b)
	}
	if _, a, _, _ := q.ConstantBuffer(0); a != d.launchMem.Address {
		t.Errorf("constant bank 0 at 0x%x", a)
	}
	bank := hostBytes(d.launchMem, 0, 0x218)
	if p := binary.LittleEndian.Uint64(bank[0x210:]); p != x.Address {
		t.Errorf("parameter 0x%x, want 0x%x", p, x.Address)
	}
	// A second launch owes nothing: the same launch and release words (and
	// in the shared group the yield).
	r.f.trace = map[string][]hw.Write{}
	v = r.submit(nil, launch(e, 1, 256, u64s(x.Address)))
	r.wait(v)
	if got := r.f.trace["channel 0"]; len(got) != map[bool]int{true: 7, false: 9}[own] || got[0].Method != hw.ComputeSendPcasA {
		t.Errorf("second launch: %v", got)
	}
}

func u64s(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// TestRoomNever checks each refusal, with its part.
func TestRoomNever(t *testing.T) {
	r := openRaw(t, Config{})
	e := r.entry("twice")
	m := r.alloc(device.PinnedMemory, 4096)
	w2 := new(uint64)
	for _, c := range []struct {
		name  string
		parts []device.Part
		waits []device.Wait
		part  int
		why   string
	}{
		{"fill function", []device.Part{{Kind: device.Fill, Queue: qCopy}}, nil, 0, "no words, copy or launch"},
		{"queue", []device.Part{launch(e, 1, 1, u64s(0)), {Kind: device.Words, Queue: 2}}, nil, 1, "neither queue"},
		{"params", []device.Part{launch(e, 1, 1, make([]byte, 7))}, nil, 0, "fewer parameter bytes than the function reads (7 of 8)"},
		{"launch on copy", []device.Part{func() device.Part { p := launch(e, 1, 1, nil); p.Queue = qCopy; return p }()}, nil, 0, "launch on COPY:0"},
		{"odd words", []device.Part{{Kind: device.Words, Queue: qCompute, Words: []uint32{1, 2, 3}}}, nil, 0, "odd number"},
		{"after", []device.Part{{Kind: device.Words, Queue: qCompute, After: 1}}, nil, 0, "after index"},
		{"after below 0", []device.Part{fillPart(qCopy, m, 0, 8, 1), {Kind: device.Words, Queue: qCompute, After: -1}}, nil, 1, "after index below 0"},
		{"grid axis 0", []device.Part{launch(e, 0, 1, nil)}, nil, 0, "axis"},
		{"threads", []device.Part{launch(e, 1, 2048, nil)}, nil, 0, ""},
		{"dynamic shared", []device.Part{func() device.Part { p := launch(e, 1, 1, nil); p.Shared = 1 << 20; return p }()}, nil, 0, "dynamic shared"},
		{"foreign entry", []device.Part{launch(&device.Entry{Name: "x"}, 1, 1, nil)}, nil, 0, "did not make"},
		{"foreign region", []device.Part{{Kind: device.CopyRows, Queue: qCopy, Src: m, Dst: "elsewhere", RowBytes: 8, Rows: 1}}, nil, 0, "did not make"},
		{"wait", nil, []device.Wait{{Word: w2, Value: 1}}, -1, "does not map"},
	} {
		s := device.Submission{Parts: c.parts, Waits: c.waits}
		a := r.room(&s)
		if a.Kind != device.RoomNever || a.Part != c.part || !strings.Contains(a.Reason, c.why) {
			t.Errorf("%s: %+v", c.name, a)
		}
	}
	// Without a copy engine on the compute channel, a copy of bytes there
	// is refused, and one of no bytes keeps its place.
	r2 := openRaw(t, Config{NoComputeCopies: true})
	m2 := r2.alloc(device.PinnedMemory, 4096)
	if a := r2.room(&device.Submission{Parts: []device.Part{fillPart(qCompute, m2, 0, 0, 1), fillPart(qCompute, m2, 0, 8, 1)}}); a.Kind != device.RoomNever || a.Part != 1 || !strings.Contains(a.Reason, "no copy engine") {
		t.Errorf("a copy on COMPUTE:0 without a copy engine: %+v", a)
	}
	r2.wait(r2.submit(nil, fillPart(qCompute, m2, 0, 0, 1), fillPart(qCopy, m2, 0, 8, 1)))
	if hostOf(m2)[7] != 1 {
		t.Error("the fill on COPY:0 did not run")
	}
	// Nothing was submitted: a submission of no parts writes the next value.
	v := r.submit(nil)
	if v != r.d.base+1 {
		t.Errorf("value %d after refusals, base %d", v, r.d.base)
	}
	r.wait(v)
}

// TestRoomLater checks the bound of values in flight and the rings' room
// while the GPU runs nothing.
func TestRoomLater(t *testing.T) {
	r := openRaw(t, Config{})
	r.f.pause()
	for i := 0; i < maxInFlight; i++ {
		r.submit(nil)
	}
	s := device.Submission{}
	if a := r.room(&s); a.Kind != device.RoomLater {
		t.Fatalf("room with %d values in flight: %+v", maxInFlight, a)
	}
	r.f.resume()
	if a := r.room(&s); a.Kind != device.RoomOK {
		t.Fatalf("room once the GPU ran: %+v", a)
	}
	if got := r.d.Signaled(); got != r.v {
		t.Errorf("the word reads %d, want %d", got, r.v)
	}
	// A small ring: room waits for entries, not values.
	r = openRaw(t, Config{RingEntries: 16})
	r.f.pause()
	for i := 0; i < 15; i++ {
		r.submit(nil)
	}
	if a := r.room(&s); a.Kind != device.RoomLater {
		t.Fatalf("room with the ring full: %+v", a)
	}
	r.f.resume()
	r.wait(r.v)
}

// TestWrap runs many values through small rings: launches, copies and
// fills on both queues, the word monotonic.
func TestWrap(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64, SegmentBytes: 4096, LaunchBytes: 8192})
	e := r.entry("twice")
	a := r.alloc(device.PinnedMemory, 1<<16)
	b := r.alloc(device.DeviceMemory, 1<<16)
	c := r.alloc(device.PinnedMemory, 1<<16)
	src := hostOf(a)
	for i := range src {
		src[i] = byte(i * 13)
	}
	last := r.d.Signaled()
	for i := 0; i < 3000; i++ {
		var parts []device.Part
		switch i % 4 {
		case 0:
			parts = []device.Part{launch(e, 2, 32, u64s(b.Address))}
		case 1:
			parts = []device.Part{copyPart(qCopy, a, b, 0, 0, 1000), copyPart(qCompute, b, c, 0, uint64(i%7), 1000)}
		case 2:
			parts = []device.Part{fillPart(qCompute, c, 3, 17, byte(i)), launch(e, 1, 32, u64s(b.Address)), fillPart(qCopy, c, 1, 2, 1)}
		case 3:
			parts = []device.Part{copyPart(qCopy, a, c, 5, 6, 100), after(launch(e, 1, 32, u64s(b.Address)), 0)}
		}
		r.submit(nil, parts...)
		if w := r.d.Signaled(); !device.AtLeast(w, last) {
			t.Fatalf("the word went from %d to %d", last, w)
		} else {
			last = w
		}
	}
	r.wait(r.v)
	if r.f.launches != 3*3000/4 {
		t.Errorf("%d launches", r.f.launches)
	}
}

func after(p device.Part, i int) device.Part { p.After = i + 1; return p }

// TestCopiesBothQueues copies and fills on each queue, pitched rows too,
// and a launch that runs after a copy of the other queue sees its bytes.
func TestCopiesBothQueues(t *testing.T) {
	r := openRaw(t, Config{})
	a := r.alloc(device.PinnedMemory, 1<<16)
	b := r.alloc(device.DeviceMemory, 1<<16)
	c := r.alloc(device.PinnedMemory, 1<<16)
	src := hostOf(a)
	for i := range src {
		src[i] = byte(i * 7)
	}
	for q := range 2 {
		clear(hostOf(c))
		v := r.submit(nil, copyPart(q, a, b, 0, 0, 1<<16), fillPart(q, b, 101, 50, 0xab), copyPart(q, b, c, 0, 0, 1<<16))
		r.wait(v)
		want := append([]byte(nil), src...)
		for i := 101; i < 151; i++ {
			want[i] = 0xab
		}
		if !bytes.Equal(hostOf(c), want) {
			t.Fatalf("queue %d: the copies and the fill moved the wrong bytes", q)
		}
		clear(hostOf(c))
		rows := device.Part{Kind: device.CopyRows, Queue: q, Src: a, Dst: c, RowBytes: 100, Rows: 8, SrcPitch: 256, DstPitch: 128}
		fill := device.Part{Kind: device.CopyRows, Queue: q, Dst: c, DstOffset: 2, RowBytes: 5, Rows: 8, DstPitch: 128, Filling: true, Byte: 9}
		r.wait(r.submit(nil, rows, fill))
		for row := range 8 {
			got := hostOf(c)[128*row : 128*row+100]
			w := append([]byte(nil), src[256*row:256*row+100]...)
			copy(w[2:7], []byte{9, 9, 9, 9, 9})
			if !bytes.Equal(got, w) {
				t.Fatalf("queue %d: row %d", q, row)
			}
		}
	}
	// A launch after a copy of the other queue sees the copy's bytes.
	e := r.entry("twice")
	var seen byte
	r.f.onLaunch = func(hw.Qmd, []byte) { seen = r.f.mem(c.Address+3, 1)[0] }
	r.f.pause()
	v := r.submit(nil, fillPart(qCopy, c, 0, 64, 0x5a), after(launch(e, 1, 32, u64s(b.Address)), 0))
	r.f.resume()
	r.wait(v)
	if seen != 0x5a {
		t.Errorf("the launch saw 0x%x before the fill of the other queue", seen)
	}
}

// TestWaitHostWord holds work back until the host writes a word of rig's
// array.
func TestWaitHostWord(t *testing.T) { holdOnHostWord(t, openRaw(t, Config{}), 2*time.Millisecond) }

// takeWord takes a word of rig's array for the test, given back at its end.
func takeWord(tb testing.TB) *uint64 {
	tb.Helper()
	slot, w, err := timeline.Take()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { timeline.Give(slot) })
	return w
}

// holdOnHostWord submits a fill on COPY:0 that waits for a word of rig's
// array to reach 5, checks that it has not run after hold, writes the word
// and checks that the fill ran.
func holdOnHostWord(t *testing.T, r *raw, hold time.Duration) {
	t.Helper()
	w := takeWord(t)
	atomic.StoreUint64(w, 0)
	m := r.alloc(device.PinnedMemory, 4096)
	v := r.submit([]device.Wait{{Word: w, Value: 5}}, fillPart(qCopy, m, 0, 8, 1))
	_ = r.d.Sleep(r.d.Signaled(), hold)
	if r.d.Signaled() == v || hostOf(m)[0] != 0 {
		t.Fatal("the work ran before the word it waits for")
	}
	atomic.StoreUint64(w, 5)
	r.wait(v)
	if hostOf(m)[0] != 1 {
		t.Error("the fill did not run")
	}
}

// TestFault has the RM report an MMU fault in the compute channel's
// notifier: Sleep raises a fault with the notifier's line, and raises it
// again; ReadFault returns the debugger's lines.
func TestFault(t *testing.T) {
	r := openRaw(t, Config{})
	r.f.mmu = []nvidia.MMUFaultInfoEntry{{FaultAddress: 0x7ff_0000_0000, FaultType: 2, AccessType: 1}}
	r.f.pause()
	v := r.submit(nil)
	r.f.fail(r.f.chans[0], 31)
	err := r.d.Sleep(r.d.Signaled(), 10*time.Millisecond)
	f, ok := device.AsFault(err)
	if !ok {
		t.Fatalf("Sleep: %v", err)
	}
	if want := []string{"error 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT) on the COMPUTE channel, GR, status 0xffff"}; !slices.Equal(f.Detail, want) {
		t.Errorf("the fault's lines: %q, want the notifier's alone, %q", f.Detail, want)
	}
	more := strings.Join(r.d.ReadFault(f), "\n")
	for _, s := range []string{"SM 3: global ESR 0x10", "MMU fault at 0x7ff00000000: type 2, access 1"} {
		if !strings.Contains(more, s) {
			t.Errorf("ReadFault lacks %q:\n%s", s, more)
		}
	}
	if err2 := r.d.Sleep(r.d.Signaled(), 0); err2 != error(f) {
		t.Errorf("the second Sleep: %v", err2)
	}
	if err := r.d.Stop(f.Why); err != nil {
		t.Fatal(err)
	}
	if got := r.d.Signaled(); got != v {
		t.Errorf("after stop the word reads %d, want %d", got, v)
	}
}

// TestFaultReadsEverySM: the RM refuses a read of the SMs' errors past
// the SMs the GPU has, fewer than the chip's count the device reads by;
// ReadFault still reads every SM the GPU has, the last among them, and
// reports no refusal. Where the RM refuses every read (-1), ReadFault says
// so.
func TestFaultReadsEverySM(t *testing.T) {
	for _, sms := range []int{132, 100, 40, 1, -1} {
		t.Run(fmt.Sprint(sms), func(t *testing.T) {
			r := openRaw(t, Config{})
			r.f.mu.Lock()
			r.f.smCount = sms
			r.f.mu.Unlock()
			r.f.pause()
			r.submit(nil)
			r.f.fail(r.f.chans[0], 31)
			f, ok := device.AsFault(r.d.Sleep(r.d.Signaled(), 10*time.Millisecond))
			if !ok {
				t.Fatal("Sleep raised no fault")
			}
			more := strings.Join(r.d.ReadFault(f), "\n")
			want := []string{fmt.Sprintf("SM %d: global ESR 0x10", sms-1)}
			if sms > 3 {
				want = append(want, "SM 3: global ESR 0x10")
			}
			if sms < 0 {
				want = []string{"SM errors: the RM refused to read them"}
			} else if strings.Contains(more, "refused") {
				t.Errorf("ReadFault reports a refusal:\n%s", more)
			}
			for _, s := range want {
				if !strings.Contains(more, s) {
					t.Errorf("ReadFault lacks %q:\n%s", s, more)
				}
			}
			if err := r.d.Stop(f.Why); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStop stops a device with work in flight: the word reads the last
// value, the channels are gone, and the device's own memory with them.
func TestStop(t *testing.T) {
	r := openRaw(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	r.f.pause()
	for range 10 {
		r.submit(nil, fillPart(qCopy, m, 0, 8, 1))
	}
	if err := r.d.Stop(""); err != nil {
		t.Fatal(err)
	}
	if got := r.d.Signaled(); got != r.v {
		t.Errorf("the word reads %d, want %d", got, r.v)
	}
	if n := r.f.objectsOf(r.f.gpu.Channel); n != 0 {
		t.Errorf("%d channels after stop", n)
	}
	if n := r.f.live(); n != 1 {
		t.Errorf("%d memories after stop, want rig's one", n)
	}
	if a := r.room(&device.Submission{}); a.Kind != device.RoomNever {
		t.Errorf("room after stop: %+v", a)
	}
}

// TestStopRefused stops a device whose channel groups the RM does not
// free and whose path does not stop: its work may still run, so the
// memory stays, and Stop says so; where either stops the work, Stop
// answers nil.
func TestStopRefused(t *testing.T) {
	for _, tc := range []struct {
		name        string
		refuse, die bool
		fails       bool
	}{
		{"both stop", false, false, false},
		{"the path alone stops", true, false, false},
		{"the RM alone stops", false, true, false},
		{"neither stops", true, true, true},
	} {
		r := openRaw(t, Config{})
		live := r.f.live()
		if tc.refuse {
			r.f.refuseFree = map[uint32]bool{nvidia.ClassChannelGroup: true}
		}
		if tc.die {
			r.f.stopErr = errors.New("fake: the device's work may still run")
		}
		err := r.d.Stop("")
		if (err != nil) != tc.fails || (err != nil && !strings.Contains(err.Error(), "may still run")) {
			t.Errorf("%s: stop: %v", tc.name, err)
		}
		if _, ok := device.AsFault(err); err != nil && !ok {
			t.Errorf("%s: stop: %T, not a fault", tc.name, err)
		}
		if n := r.f.live(); (n == live) != tc.fails {
			t.Errorf("%s: %d memories of %d after stop", tc.name, n, live)
		}
	}
}

// TestMakeFails refuses each RM object a make allocates in turn: the make
// fails and gives back everything it made.
func TestMakeFails(t *testing.T) {
	for _, class := range []uint32{nvidia.ClassChannelGroup, nvidia.ClassContextShare, hw.HopperChannelGpfifoA, hw.HopperComputeA, hw.HopperDmaCopyA} {
		f := newFake()
		f.refuse[class] = true
		w := new(uint64)
		if _, err := f.open(w, Config{}); err == nil {
			t.Errorf("make succeeded with 0x%x refused", class)
		} else if !strings.Contains(err.Error(), "nvdev: make") {
			t.Errorf("0x%x refused: %v", class, err)
		}
		if n := f.live(); n != 0 {
			t.Errorf("0x%x refused: %d memories left", class, n)
		}
		if len(f.objects) != 0 {
			t.Errorf("0x%x refused: objects left %v", class, f.objects)
		}
	}
	// The own word: a word outside rig's array.
	f := newFake()
	w := new(uint64)
	*w = 41
	d, err := f.open(w, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d.facts.Word != nil || d.facts.OwnWord == nil || d.Signaled() != 41 || d.facts.Waits != 0 {
		t.Errorf("own word: facts %+v, signaled %d", d.facts, d.Signaled())
	}
	if err := d.Stop(""); err != nil {
		t.Fatal(err)
	}
	if err := d.Free(d.facts.OwnWord); err != nil {
		t.Fatal(err)
	}
	if n := f.live(); n != 0 {
		t.Errorf("%d memories left", n)
	}
}

// TestWords hands raw ring entries to the compute channel between the
// driver's words: a release that compiled code wrote.
func TestWords(t *testing.T) {
	r := openRaw(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	seg := hostWords(m, 256, 6)
	b := hw.Release(seg[:0], r.d.gen, m.Address, 0xfeed)
	e := hw.Segment(m.Address+256, uint32(len(b)), hw.Subroutine, false)
	e0, e1 := e.Words()
	v := r.submit(nil, fillPart(qCompute, m, 64, 8, 3), device.Part{Kind: device.Words, Queue: qCompute, Words: []uint32{e0, e1}})
	r.wait(v)
	if got := binary.LittleEndian.Uint64(hostOf(m)); got != 0xfeed || hostOf(m)[64] != 3 {
		t.Errorf("the words released 0x%x", got)
	}
}

// TestOwnRelease checks the launch that releases its own value: an untimed
// value of launches on COMPUTE:0 whose last part is a launch ends with no
// semaphore of the channel, its descriptor's release slot writes the value,
// and the next value's first part waits for idle first.
func TestOwnRelease(t *testing.T) {
	if !ownRelease.on {
		t.Skip("launches release nothing (NVDEV_RELEASE)")
	}
	r := openRaw(t, Config{NoLinkLaunches: true})
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 1024)
	r.wait(r.submit(nil, launch(e, 1, 32, u64s(x.Address))))
	r.f.trace = map[string][]hw.Write{}
	releases := r.f.ownReleases
	v := r.submit(nil, launch(e, 1, 32, u64s(x.Address)), launch(e, 1, 32, u64s(x.Address)))
	r.wait(v)
	got := r.f.trace["channel 0"]
	want := []hw.Write{
		{Subchannel: hw.SubHost, Method: hw.HostWFI, Value: 1},
		{Subchannel: hw.SubCompute, Method: hw.ComputeSendPcasA},
		{Subchannel: hw.SubCompute, Method: hw.ComputeSendSignalingPcas2B},
		{Subchannel: hw.SubHost, Method: hw.HostWFI, Value: 1},
		{Subchannel: hw.SubCompute, Method: hw.ComputeSendPcasA},
		{Subchannel: hw.SubCompute, Method: hw.ComputeSendSignalingPcas2B},
	}
	if len(got) != len(want) {
		t.Fatalf("%d writes, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Subchannel != want[i].Subchannel || got[i].Method != want[i].Method || (want[i].Value != 0 && got[i].Value != want[i].Value) {
			t.Errorf("write %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := r.f.ownReleases - releases; n != 1 {
		t.Errorf("%d launches released the word, want 1", n)
	}
	// The descriptor of the last launch releases v into the word.
	qa := uint64(got[4].Value) << 8
	q := hw.QmdOf(hw.QmdV04, hostWords(r.d.launchMem, int(qa-r.d.launchMem.Address), hw.QmdV04.Words))
	if on, p64, a, val := q.Release(0); !on || p64 != ownRelease.payload64 || a != r.d.wordGPU || val != v {
		t.Errorf("release slot: %v %v 0x%x %d, want the word 0x%x and %d", on, p64, a, val, r.d.wordGPU, v)
	}
	// Not for a value with a part on COPY:0, one whose last part is no
	// launch, a timed one, nor one whose low 32 bits are 0.
	m := r.alloc(device.PinnedMemory, 4096)
	for _, parts := range [][]device.Part{
		{launch(e, 1, 32, u64s(x.Address)), fillPart(qCompute, m, 0, 8, 1)},
		{fillPart(qCopy, m, 0, 8, 1), launch(e, 1, 32, u64s(x.Address))},
	} {
		releases = r.f.ownReleases
		r.wait(r.submit(nil, parts...))
		if r.f.ownReleases != releases {
			t.Errorf("%v: a launch released the word", parts)
		}
	}
	releases = r.f.ownReleases
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{launch(e, 1, 32, u64s(x.Address))}, Timed: true}
	for r.d.Room(&s).Kind == device.RoomGrow {
		if err := r.d.Grow(); err != nil {
			t.Fatal(err)
		}
	}
	r.v++
	r.d.Submit(&s)
	r.d.Kick(r.v)
	r.wait(r.v)
	if r.f.ownReleases != releases {
		t.Error("a timed value's launch released the word")
	}
	// A value whose low 32 bits are 0, on a device whose word starts
	// below it.
	r2 := openRawAt(t, Config{}, 1<<32-2)
	e2 := r2.entry("twice")
	releases = r2.f.ownReleases
	for range 4 {
		r2.wait(r2.submit(nil, launch(e2, 1, 32, u64s(x.Address))))
	}
	if n := r2.f.ownReleases - releases; n != 3 {
		t.Errorf("%d of 4 launches across 2^32 released the word, want 3", n)
	}
}

// TestOwnReleaseThenLocal: a value whose launch released itself, then a
// growth of the local memory, then a launch. The launch before may still
// run in the local memory being replaced, so the compute channel waits for
// idle before it takes the new local memory, not only before the launch.
func TestOwnReleaseThenLocal(t *testing.T) {
	if !ownRelease.on {
		t.Skip("launches release nothing (NVDEV_RELEASE)")
	}
	r := openRaw(t, Config{})
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 1024)
	r.wait(r.submit(nil, launch(e, 1, 32, u64s(x.Address))))
	releases := r.f.ownReleases
	r.wait(r.submit(nil, launch(e, 1, 32, u64s(x.Address))))
	if r.f.ownReleases == releases || !r.d.lastOwn {
		t.Fatal("the launch did not release its own value")
	}
	old := r.d.local.Load()
	if err := r.d.growLocal(old.perThread + 4096); err != nil {
		t.Fatal(err)
	}
	r.f.trace = map[string][]hw.Write{}
	r.wait(r.submit(nil, launch(e, 1, 32, u64s(x.Address))))
	got := r.f.trace["channel 0"]
	wfi, local := -1, -1
	for i, w := range got {
		if w.Subchannel == hw.SubHost && w.Method == hw.HostWFI && wfi < 0 {
			wfi = i
		}
		if w.Subchannel == hw.SubCompute && w.Method == hw.ComputeLocalMemoryA && local < 0 {
			local = i
		}
	}
	if local < 0 || wfi < 0 || wfi > local {
		t.Fatalf("the wait for idle at write %d, the local memory at write %d: %v", wfi, local, got)
	}
	for _, w := range got[local:] {
		if w.Subchannel == hw.SubHost && w.Method == hw.HostWFI {
			t.Errorf("a second wait for idle after the local memory: %v", got)
		}
	}
}

// TestLocalCubin reads testdata/local.sm_90.cubin, which
// TestGPULocalAcrossGrowth runs: local_hold keeps an array of 64 words in
// each thread's local memory, less than local_mem of the test kernels
// needs, so that local_mem's entry grows the local memory after it.
func TestLocalCubin(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "local.sm_90.cubin"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := c.Kernel("local_hold")
	if !ok || k.Stack() != 256 || len(k.Params) != 2 {
		t.Fatalf("local_hold: %v, %+v", ok, k)
	}
	m, err := hw.Parse(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := m.Kernel("local_mem")
	if !ok {
		t.Fatal("no local_mem")
	}
	if l.Stack() <= k.Stack() {
		t.Fatalf("local_mem's stack of %d bytes, local_hold's %d", l.Stack(), k.Stack())
	}
}

// TestCapabilityLocal grows the compute channel's local memory through
// the capability's Local, as compiled code does: the next submission on
// the compute channel, here of Words parts compiled code wrote, gives the
// channel the new memory before its parts; one on COPY:0 does not.
func TestCapabilityLocal(t *testing.T) {
	r := openRaw(t, Config{})
	g, ok := r.d.Capability().(*hw.Gpu)
	if !ok || g.Local == nil {
		t.Fatal("no capability with Local")
	}
	m := r.alloc(device.PinnedMemory, 4096)
	words := func(q int, v uint64) device.Part {
		seg := hostWords(m, 256+64*q, 6)
		b := hw.Release(seg[:0], r.d.gen, m.Address+uint64(8*q), v)
		e := hw.Segment(m.Address+uint64(256+64*q), uint32(len(b)), hw.Subroutine, false)
		e0, e1 := e.Words()
		return device.Part{Kind: device.Words, Queue: q, Words: []uint32{e0, e1}}
	}
	r.wait(r.submit(nil, words(qCompute, 1)))
	if err := g.Local(4096); err != nil {
		t.Fatal(err)
	}
	l := r.d.local.Load()
	if l == nil || l.perThread != 4096 {
		t.Fatalf("local memory %+v", l)
	}
	r.f.trace = map[string][]hw.Write{}
	r.wait(r.submit(nil, words(qCopy, 2)))
	if got := r.f.trace["channel 0"]; len(got) != 0 {
		t.Errorf("a value on COPY:0 wrote on the compute channel: %v", got)
	}
	r.wait(r.submit(nil, words(qCompute, 3)))
	got := r.f.trace["channel 0"]
	at, words3 := -1, -1
	for i, w := range got {
		if w.Subchannel == hw.SubCompute && w.Method == hw.ComputeLocalMemoryA && at < 0 {
			at = i
		}
		if w.Subchannel == hw.SubHost && w.Method == hw.HostSemPayloadLo && w.Value == 3 && words3 < 0 {
			words3 = i
		}
	}
	if at < 0 || words3 < at || got[at].Value != uint32(l.mem.Address>>32) ||
		got[at+1].Method != hw.ComputeLocalMemoryB || got[at+1].Value != uint32(l.mem.Address) {
		t.Errorf("the compute channel's words after the growth: %v", got)
	}
	if a, b := binary.LittleEndian.Uint64(hostOf(m)), binary.LittleEndian.Uint64(hostOf(m)[8:]); a != 3 || b != 2 {
		t.Errorf("the words released %d and %d", a, b)
	}
	// A smaller need changes nothing.
	if err := g.Local(16); err != nil || r.d.local.Load() != l {
		t.Errorf("a smaller local memory: %v", err)
	}
}

// TestCapabilityLocalBounds asks the capability's Local, on a device that
// has no local memory yet, for none, for less than none, and for more than
// a thread's local window holds, where the sizes of the memory overflow 64
// bits: it allocates nothing, refuses the last, and the device runs on.
func TestCapabilityLocalBounds(t *testing.T) {
	r := openRaw(t, Config{CopyKernels: -1})
	g := r.d.Capability().(*hw.Gpu)
	live := r.f.live()
	for _, n := range []int{0, -1, math.MinInt} {
		if err := g.Local(n); err != nil {
			t.Errorf("Local(%d): %v", n, err)
		}
	}
	for _, n := range []int{1 << 58, 1 << 50, math.MaxInt} {
		if err := g.Local(n); err == nil {
			t.Errorf("Local(%d) took it", n)
		}
	}
	if l := r.d.local.Load(); l != nil || r.f.live() != live {
		t.Errorf("local memory %+v, %d memories then %d", l, live, r.f.live())
	}
	if err := g.Local(4096); err != nil {
		t.Fatal(err)
	}
	if l := r.d.local.Load(); l == nil || l.perThread != 4096 {
		t.Errorf("local memory %+v after Local(4096)", l)
	}
	m := r.alloc(device.PinnedMemory, 4096)
	r.wait(r.submit(nil, fillPart(qCompute, m, 0, 8, 7)))
	if hostOf(m)[7] != 7 {
		t.Errorf("the fill wrote %d", hostOf(m)[7])
	}
}

// TestLinkLaunches links the launches of a value (the default): the first
// is sent, each later one is the dependent of the one before and ends with
// the GPU's membar, the last ends with the system's and releases the
// value, and a part after them waits for idle first. Every launch
// prefetches its constant bank 0.
func TestLinkLaunches(t *testing.T) {
	r := openRaw(t, Config{})
	c, _ := hw.Parse(cubin(t))
	k, _ := c.Kernel("twice")
	r.f.twice(k.ParamOffset)
	e := r.entry("twice")
	x := r.alloc(device.PinnedMemory, 4096)
	putF32(hostOf(x), 0, 1)
	parts := make([]device.Part, 20)
	for i := range parts {
		parts[i] = launch(e, 1, 1, u64s(x.Address))
	}
	r.wait(r.submit(nil))
	r.f.trace = map[string][]hw.Write{}
	n0, l0 := r.f.launches, r.f.linked
	g0, s0, b0 := r.f.gpuMembars, r.f.sysMembars, r.f.bank0Ahead
	r.wait(r.submit(nil, parts...))
	if n, l := r.f.launches-n0, r.f.linked-l0; n != 20 || l != 19 {
		t.Errorf("%d launches, %d linked; want 20 and 19", n, l)
	}
	if g, s, b := r.f.gpuMembars-g0, r.f.sysMembars-s0, r.f.bank0Ahead-b0; g != 19 || s != 1 || b != 20 {
		t.Errorf("%d launches with the GPU's membar, %d with the system's, %d prefetching bank 0; want 19, 1 and 20", g, s, b)
	}
	pcas := 0
	for _, w := range r.f.trace["channel 0"] {
		if w.Method == hw.ComputeSendPcasA {
			pcas++
		}
	}
	if pcas != 1 {
		t.Errorf("%d descriptors sent, want 1", pcas)
	}
	if got := f32(hostOf(x), 0); got != 1<<20 {
		t.Errorf("x = %v, want 2^20", got)
	}
	// A fill between launches breaks the link.
	l0 = r.f.linked
	m := r.alloc(device.PinnedMemory, 4096)
	r.wait(r.submit(nil, parts[0], parts[1], fillPart(qCompute, m, 0, 8, 1), parts[2], parts[3]))
	if l := r.f.linked - l0; l != 2 {
		t.Errorf("%d linked around a fill, want 2", l)
	}
}

// TestPinnedRings keeps every ring in Pinned memory: the values run, and
// the device writes no Mapped memory.
func TestPinnedRings(t *testing.T) {
	r := openRaw(t, Config{PinnedRings: true})
	if r.d.mapped() {
		t.Error("the device reads the flush word")
	}
	kinds := []device.Memory{r.d.launchMem.Kind, r.d.copyK.img.mem.Kind}
	for _, ch := range r.d.ch {
		kinds = append(kinds, ch.ring.Kind, ch.seg0.Kind)
	}
	for i, k := range kinds {
		if k != device.PinnedMemory {
			t.Errorf("ring %d in %v memory", i, k)
		}
	}
	e := r.entry("twice")
	m := r.alloc(device.PinnedMemory, 4096)
	r.wait(r.submit(nil, launch(e, 1, 32, u64s(m.Address)), fillPart(qCopy, m, 0, 8, 3)))
	if hostOf(m)[7] != 3 {
		t.Error("the fill did not run")
	}
}

// TestSharedGroupYields checks that in a subcontext of the shared group a
// value's words end, on each channel the value used, with the YIELD that
// passes the PBDMA to the group's next channel, after the value's release
// and interrupt; and that a device of a group of its own writes none.
func TestSharedGroupYields(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run(map[bool]string{true: "own group", false: "subcontext"}[own], func(t *testing.T) {
			r := openRaw(t, Config{SharedGroup: !own})
			e := r.entry("twice")
			x := r.alloc(device.DeviceMemory, 1024)
			m := r.alloc(device.PinnedMemory, 4096)
			yield := hw.Write{Subchannel: hw.SubHost, Method: hw.HostYield, Value: hw.YieldOpChannel}
			for _, tc := range []struct {
				name  string
				parts []device.Part
				chans []string
			}{
				{"a launch", []device.Part{launch(e, 1, 256, u64s(x.Address))}, []string{"channel 0"}},
				{"a fill", []device.Part{fillPart(qCopy, m, 0, 8, 1)}, []string{"channel 1"}},
				{"a fill, then a launch", []device.Part{fillPart(qCopy, m, 0, 8, 1), launch(e, 1, 256, u64s(x.Address))},
					[]string{"channel 0", "channel 1"}},
			} {
				r.f.trace = map[string][]hw.Write{}
				r.wait(r.submit(nil, tc.parts...))
				for _, ch := range tc.chans {
					got := r.f.trace[ch]
					n := 0
					for _, w := range got {
						if w == yield {
							n++
						}
					}
					switch {
					case own && n != 0:
						t.Errorf("%s: %s wrote %d yields in a group of its own", tc.name, ch, n)
					case !own && (n != 1 || got[len(got)-1] != yield):
						t.Errorf("%s: %s wrote %d yields, the last of its words %+v; want one, last", tc.name, ch, n, got[len(got)-1])
					}
				}
			}
		})
	}
}

// TestHangBound opens devices on the fake through openPath, as Open does
// on a GPU, and checks the rule that turns Config.Hang into the path's
// hang_ms and the device's Facts.HangMs: 0 and negative bounds are none,
// a positive one counts its whole milliseconds and at least 1, and a bound
// whose milliseconds do not fit an int (past about 24.8 days, where an int
// has 32 bits) is refused, naming it, before the path is dialed.
func TestHangBound(t *testing.T) {
	for _, tc := range testutil.HangCases() {
		f := newFake()
		dialed := false
		dial := func(o *nvidia.Options) (path, rmAPI, error) {
			dialed = true
			f.hangMs = o.HangMs
			return f, fakeRM{f}, nil
		}
		slot, w, err := timeline.Take()
		if err != nil {
			t.Fatal(err)
		}
		drv, err := openPath(w, Config{Hang: tc.Hang}, dial)
		if tc.Refused {
			switch {
			case err == nil:
				(&raw{t: t, f: f, d: drv.(*gpu), slot: slot, v: atomic.LoadUint64(w)}).close()
				t.Errorf("a hang bound of %v opened, where an int has %d bits", tc.Hang, strconv.IntSize)
				continue
			case !strings.Contains(err.Error(), "hang bound of "+tc.Hang.String()):
				t.Errorf("a hang bound of %v answered %v, want an error naming the bound", tc.Hang, err)
			case dialed:
				t.Errorf("a hang bound of %v dialed the path before its refusal", tc.Hang)
			}
			timeline.Give(slot)
			continue
		}
		if err != nil {
			timeline.Give(slot)
			t.Errorf("a hang bound of %v: %v", tc.Hang, err)
			continue
		}
		r := &raw{t: t, f: f, d: drv.(*gpu), slot: slot, v: atomic.LoadUint64(w)}
		if got := r.d.Facts().HangMs; got != tc.Want {
			t.Errorf("a hang bound of %v: Facts.HangMs %d, want %d", tc.Hang, got, tc.Want)
		}
		r.wait(r.submit(nil))
		r.close()
	}
}
