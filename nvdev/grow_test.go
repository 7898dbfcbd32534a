package nvdev

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
)

// TestGrow runs values whose words exceed the segment rings and whose
// launches exceed the launch ring: Room returns RoomGrow, Grow makes rings
// of the least power of two that holds twice the parts, the values run
// right, and the rings a later growth replaced go back once the word
// passed them.
func TestGrow(t *testing.T) {
	r := openRaw(t, Config{SegmentBytes: 4096, LaunchBytes: 8192, NoLinkLaunches: true})
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 4096)
	m := r.alloc(device.PinnedMemory, 1<<16)
	launches := func(n int) []device.Part {
		ps := make([]device.Part, n)
		for i := range ps {
			ps[i] = launch(e, 1, 32, u64s(x.Address))
		}
		return ps
	}
	fills := func(n int) []device.Part {
		ps := make([]device.Part, n)
		for i := range ps {
			ps[i] = fillPart(qCopy, m, uint64(i), 1, byte(i))
		}
		return ps
	}
	// Room asks for a growth, and submits nothing.
	s := device.Submission{Value: r.v + 1, Parts: launches(300)}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 300 launches: %+v", a)
	}
	if a := r.d.Submit(&s); a.Kind != device.Failed {
		t.Fatalf("a submit after RoomGrow: %+v", a)
	}
	n0 := r.f.launches
	r.wait(r.submit(nil, launches(300)...))
	if n := r.f.launches - n0; n != 300 {
		t.Fatalf("%d launches ran, want 300", n)
	}
	ch := r.d.ch[qCompute]
	if ch.segMem == nil || r.d.launchMem == r.d.launch0 {
		t.Fatal("no grown rings in use")
	}
	for _, sz := range []int{ch.segMem.Size, r.d.launchMem.Size} {
		if sz&(sz-1) != 0 || sz < 4096 {
			t.Errorf("a grown ring of %d bytes", sz)
		}
	}
	if got, want := r.d.launchMem.Size, ringBytes(r.d.plan.launches); got != want {
		t.Errorf("launch ring of %d bytes, want %d", got, want)
	}
	// Copies on COPY:0: its segment ring grows too, and both channels run
	// in order.
	r.wait(r.submit(nil, append(fills(600), launches(10)...)...))
	b := hostOf(m)
	for i := range 600 {
		if b[i] != byte(i) {
			t.Fatalf("byte %d is %d", i, b[i])
		}
	}
	if r.d.ch[qCopy].segMem == nil {
		t.Error("the copy channel's segment ring did not grow")
	}
	// Small values wrap the grown rings, then a larger growth replaces
	// them; the replaced ones go back at the next allocation once the
	// word passed them.
	for i := range 500 {
		r.submit(nil, launch(e, 1, 32, u64s(x.Address)), fillPart(qCopy, m, uint64(i%64), 1, 7))
	}
	r.wait(r.submit(nil, launches(2000)...))
	r.d.retMu.Lock()
	held := len(r.d.retired)
	r.d.retMu.Unlock()
	if held == 0 {
		t.Fatal("no ring retired by the second growth")
	}
	live := r.f.live()
	r.alloc(device.PinnedMemory, 4096)
	if got := r.f.live(); got != live+1-held {
		t.Errorf("%d memories after an allocation, want %d: the retired rings stayed", got, live+1-held)
	}
	// No memory for a growth: Short, and the device keeps running.
	r.f.mu.Lock()
	r.f.noMemory = true
	r.f.mu.Unlock()
	s = device.Submission{Value: r.v + 1, Parts: launches(20000)}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 20,000 launches: %+v", a)
	}
	var short *device.Short
	if err := r.d.Grow(); !errors.As(err, &short) || short.N <= 0 {
		t.Fatalf("grow without memory: %v", err)
	}
	r.f.mu.Lock()
	r.f.noMemory = false
	r.f.mu.Unlock()
	r.wait(r.submit(nil, launches(3)...))
}

// TestSegmentChunks runs a value whose words on one channel pass 4 MiB:
// they close into an entry for each 4 MiB.
func TestSegmentChunks(t *testing.T) {
	r := openRaw(t, Config{})
	m := r.alloc(device.PinnedMemory, 1<<20)
	ps := make([]device.Part, 0, 160000)
	for i := range 160000 {
		ps = append(ps, fillPart(qCopy, m, uint64(i%(1<<20)), 1, byte(i)))
	}
	r.wait(r.submit(nil, ps...))
	if w := len(r.d.ch[qCopy].seg); w <= segChunk {
		t.Fatalf("a segment ring of %d words after %d fills", w, len(ps))
	}
	if b := hostOf(m); b[159999] != byte(159999%256) {
		t.Error("the last fill did not run")
	}
}

// TestRegrow runs a value whose Words take more entries than a channel's
// ring: Grow opens two channels anew in a new channel group, the device
// switches to them once every value before is reached, they owe the
// binding, the windows and the local memory, and the replaced set goes
// back at the next allocation.
func TestRegrow(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64})
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 4096)
	m := r.alloc(device.PinnedMemory, 4096)
	seg := hostWords(m, 256, 6)
	b := hw.Release(seg[:0], r.d.gen, m.Address+64, 0xfeed)
	e0, e1 := hw.Segment(m.Address+256, uint32(len(b)), hw.Subroutine, false).Words()
	words := make([]uint32, 0, 200)
	for range 100 {
		words = append(words, e0, e1)
	}
	big := device.Part{Kind: device.Words, Queue: qCompute, Words: words}

	// A value the copy channel holds until the host writes a word.
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	defer timeline.Give(slot)
	atomic.StoreUint64(w, 0)
	held := r.submit([]device.Wait{{Word: w, Value: 1}}, fillPart(qCopy, m, 0, 8, 1))
	r.f.pump()

	chans := r.f.objectsOf(r.f.gpu.Channel)
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{big}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 100 entries on rings of 64: %+v", a)
	}
	// No memory: Short, and the device keeps its channels.
	r.f.mu.Lock()
	r.f.noMemory = true
	r.f.mu.Unlock()
	var short *device.Short
	if err := r.d.Grow(); !errors.As(err, &short) {
		t.Fatalf("a regrowth without memory: %v", err)
	}
	r.f.mu.Lock()
	r.f.noMemory = false
	r.f.mu.Unlock()
	if n := r.f.objectsOf(r.f.gpu.Channel); n != chans {
		t.Fatalf("%d channels after a failed regrowth, want %d", n, chans)
	}
	// Room again, as rig does after a Short, then Grow.
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 100 entries on rings of 64 after a Short: %+v", a)
	}
	if err := r.d.Grow(); err != nil {
		t.Fatal(err)
	}
	if n := r.f.objectsOf(r.f.gpu.Channel); n != chans+2 {
		t.Fatalf("%d channels after the regrowth, want %d", n, chans+2)
	}
	// Value held is not reached: the new channels wait.
	if a := r.d.Room(&s); a.Kind != device.RoomLater {
		t.Fatalf("room with a value in flight: %+v", a)
	}
	old := r.d.ch
	atomic.StoreUint64(w, 1)
	r.wait(held)
	r.f.trace = map[string][]hw.Write{}
	r.wait(r.submit(nil, big, launch(e, 1, 32, u64s(x.Address)), fillPart(qCopy, m, 8, 8, 2)))
	if r.d.ch == old || r.d.ch[qCompute].entries != 256 || r.d.ch[qCopy].entries != 256 {
		t.Fatalf("channels of %d and %d entries", r.d.ch[qCompute].entries, r.d.ch[qCopy].entries)
	}
	if got := binary.LittleEndian.Uint64(hostOf(m)[64:]); got != 0xfeed || hostOf(m)[15] != 2 {
		t.Errorf("the words released 0x%x, the fill wrote %d", got, hostOf(m)[15])
	}
	// The new compute channel got the local memory before its parts.
	local := false
	for _, w := range r.f.trace[fmt.Sprintf("channel %d", len(r.f.chans)-2)] {
		local = local || w.Method == hw.ComputeLocalMemoryA
	}
	if !local {
		t.Error("the new compute channel got no local memory")
	}
	// The next allocation gives the replaced set back.
	r.alloc(device.PinnedMemory, 4096)
	if n := r.f.objectsOf(r.f.gpu.Channel); n != chans {
		t.Errorf("%d channels after the allocation, want %d", n, chans)
	}
	for range 300 {
		r.submit(nil, launch(e, 1, 32, u64s(x.Address)), fillPart(qCopy, m, 8, 8, 3))
	}
	r.wait(r.v)
}

// TestRetiredRingWaitsForUpload checks that a grown segment ring of the
// copy channel that a later growth replaces stays until the copy channel
// ran an image upload whose words lie in it, even once the word has
// reached every value submitted before the upload.
func TestRetiredRingWaitsForUpload(t *testing.T) {
	r := openRaw(t, Config{SegmentBytes: 4096})
	m := r.alloc(device.PinnedMemory, 1<<16)
	fills := func(n int) []device.Part {
		ps := make([]device.Part, n)
		for i := range ps {
			ps[i] = fillPart(qCopy, m, uint64(i), 1, byte(i))
		}
		return ps
	}
	r.wait(r.submit(nil, fills(100)...))
	old := r.d.ch[qCopy].segMem
	if old == nil {
		t.Fatal("the copy channel's segment ring did not grow")
	}
	code, err := r.d.Image(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	region := r.alloc(device.DeviceMemory, code.Place)
	// The upload's words go into the grown ring; the copy channel has
	// yet to run them.
	r.f.pause()
	img, err := code.Lay(region)
	if err != nil {
		t.Fatal(err)
	}
	r.imgs = append(r.imgs, img)
	// A larger growth replaces the ring, and an allocation reaps.
	s := device.Submission{Value: r.v + 1, Parts: fills(400)}
	for a := r.d.Room(&s); a.Kind != device.RoomOK; a = r.d.Room(&s) {
		if a.Kind != device.RoomGrow {
			t.Fatalf("room: %+v", a)
		}
		if err := r.d.Grow(); err != nil {
			t.Fatal(err)
		}
	}
	if r.d.ch[qCopy].segMem == old {
		t.Fatal("the copy channel's segment ring was not replaced")
	}
	r.alloc(device.PinnedMemory, 4096)
	r.f.mu.Lock()
	_, live := r.f.mems[old.Handle]
	r.f.mu.Unlock()
	if !live {
		t.Error("the replaced ring went back before the copy channel ran the upload in it")
	}
	r.f.resume()
	if w := r.d.ch[qCopy].notifierWords(); w[3]>>16 != 0 {
		t.Fatalf("the copy channel failed: error %d", w[2])
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		t.Fatalf("submit: %+v", a)
	}
	r.d.Kick(r.v)
	r.wait(r.v)
	// Once the upload ran, the next reap gives the ring back.
	r.alloc(device.PinnedMemory, 4096)
	r.f.mu.Lock()
	_, live = r.f.mems[old.Handle]
	r.f.mu.Unlock()
	if live {
		t.Error("the replaced ring stayed after the upload ran")
	}
}

// TestFillRowsFewLaunches runs one fill of 80,000 rows with gaps between
// them: whatever the rows' count, it takes a multi-line launch for each
// of a row's pieces (here its body alone), every row is filled and every
// gap between rows left; and rows of 10 bytes that start 1 byte past a
// multiple of 4 take three, their heads, bodies and tails.
func TestFillRowsFewLaunches(t *testing.T) {
	const rows, pitch = 80000, 8
	r := openRaw(t, Config{})
	m := r.alloc(device.PinnedMemory, rows*pitch)
	p := fillPart(qCopy, m, 0, 4, 0x5a)
	p.Rows, p.DstPitch = rows, pitch
	r.wait(r.submit(nil, p))
	b := hostOf(m)
	for i := range rows {
		if row, gap := b[i*pitch:i*pitch+4], b[i*pitch+4:i*pitch+8]; !bytes.Equal(row, []byte{0x5a, 0x5a, 0x5a, 0x5a}) || !bytes.Equal(gap, make([]byte, 4)) {
			t.Fatalf("row %d reads % x, its gap % x", i, row, gap)
		}
	}
	r.f.mu.Lock()
	dmas := r.f.dmas
	r.f.mu.Unlock()
	if dmas != 1 {
		t.Errorf("the fill took %d launches of the copy engine, want 1", dmas)
	}
	p = fillPart(qCopy, m, 1, 10, 0xa5)
	p.Rows, p.DstPitch = rows/2, 2*pitch
	r.wait(r.submit(nil, p))
	want := []byte{0x5a, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0x5a, 0, 0, 0, 0}
	for i := range rows / 2 {
		if got := b[i*2*pitch : (i+1)*2*pitch]; !bytes.Equal(got, want) {
			t.Fatalf("row %d and its gap read % x, want % x", i, got, want)
		}
	}
	r.f.mu.Lock()
	dmas = r.f.dmas - dmas
	r.f.mu.Unlock()
	if dmas != 3 {
		t.Errorf("the fill of rows 1 byte in took %d launches of the copy engine, want 3", dmas)
	}
}

// TestGrowNeedsOfTwo: rig calls Grow outside its submit lock, so that
// another submission's Room may run between a Room that answered RoomGrow
// and its Grow. That Grow grows what both need: the first submission's
// next Room does not answer RoomGrow again.
func TestGrowNeedsOfTwo(t *testing.T) {
	r := openRaw(t, Config{SegmentBytes: 4096, LaunchBytes: 8192})
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 4096)
	m := r.alloc(device.PinnedMemory, 1<<16)
	var pa, pb []device.Part
	for range 300 {
		pa = append(pa, launch(e, 1, 32, u64s(x.Address)))
	}
	for i := range 600 {
		pb = append(pb, fillPart(qCopy, m, uint64(i), 1, byte(i)))
	}
	sa := device.Submission{Value: r.v + 1, Parts: pa}
	if a := r.d.Room(&sa); a.Kind != device.RoomGrow {
		t.Fatalf("room of 300 launches: %+v", a)
	}
	// Another submitter's goroutine, in the submit lock while the first
	// grows outside it.
	done := make(chan device.RoomAnswer)
	go func() {
		sb := device.Submission{Value: r.v + 1, Parts: pb}
		done <- r.d.Room(&sb)
	}()
	if a := <-done; a.Kind != device.RoomGrow {
		t.Fatalf("room of 600 fills: %+v", a)
	}
	if err := r.d.Grow(); err != nil {
		t.Fatalf("grow: %v", err)
	}
	if a := r.d.Room(&sa); a.Kind == device.RoomGrow {
		t.Errorf("Grow answered Grown for the 300 launches, yet their Room answers RoomGrow again: it grew the other submission's rings")
	}
}
