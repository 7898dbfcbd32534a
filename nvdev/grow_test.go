package nvdev

import (
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestGrow runs values whose words exceed the segment rings and whose
// launches exceed the launch ring: Room answers RoomGrow, Grow makes rings
// of the least power of two that holds twice the parts, the values run
// right, and the rings a later growth replaced go back once the word
// passed them.
func TestGrow(t *testing.T) {
	r := openRaw(t, Config{SegmentBytes: 4096, LaunchBytes: 8192, NoLinkLaunches: true})
	e := r.entry("twice")
	x := r.alloc(device.Device, 4096)
	m := r.alloc(device.Pinned, 1<<16)
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
	r.alloc(device.Pinned, 4096)
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
	m := r.alloc(device.Pinned, 1<<20)
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
