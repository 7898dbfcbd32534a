package rig

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

func launchOn(t *testing.T, d *Device, refs ...Ref) *Submission {
	t.Helper()
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := img.Resolve("k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubmission(d, Launch(f, 16, refs...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHazardWaits checks the waits rig hands the driver: a read waits for
// the last write, a write for the last write and the reads since, waits on
// the same device cost nothing, and waits on one word keep the latest value.
func TestHazardWaits(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.held, fb.held, fa.peer, fb.peer = true, true, true, true
	a, b := openFake(t, "HA", fa), openFake(t, "HB", fb)
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	aw, ar := launchOn(t, a, Write(0, 0)), launchOn(t, a, Read(0, 0))
	bw, br := launchOn(t, b, Write(0, 0)), launchOn(t, b, Read(0, 0))
	steps := []struct {
		name  string
		s     *Submission
		f     *fake
		waits func(pts []Point) []device.Wait
	}{
		{"a writes", aw, fa, func([]Point) []device.Wait { return nil }},
		{"b reads: waits for a's write", br, fb, func(p []Point) []device.Wait { return []device.Wait{{Word: a.word, Value: p[0].v}} }},
		{"b reads again", br, fb, func(p []Point) []device.Wait { return []device.Wait{{Word: a.word, Value: p[0].v}} }},
		{"a reads: its own write costs nothing", ar, fa, func([]Point) []device.Wait { return nil }},
		{"b writes: waits for a's write and a's read, one wait", bw, fb, func(p []Point) []device.Wait { return []device.Wait{{Word: a.word, Value: p[3].v}} }},
		{"a writes: waits for b's write", aw, fa, func(p []Point) []device.Wait { return []device.Wait{{Word: b.word, Value: p[4].v}} }},
	}
	var pts []Point
	for _, st := range steps {
		p := submit(t, st.s, x)
		pts = append(pts, p)
		st.f.mu.Lock()
		got := st.f.submitted[len(st.f.submitted)-1].Waits
		st.f.mu.Unlock()
		want := st.waits(pts)
		if len(got) != len(want) {
			t.Fatalf("%s: waits %v, want %v", st.name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: waits %v, want %v", st.name, got, want)
			}
		}
	}
	// Once every point is reached, nothing waits.
	fa.complete(a.Last().v)
	fb.complete(b.Last().v)
	submit(t, br, x)
	if w := fb.submitted[len(fb.submitted)-1].Waits; len(w) != 0 {
		t.Fatalf("waits on reached points: %v", w)
	}
}

// TestHostWait checks that a device whose work cannot wait on the other's
// word waits on the host before it submits.
func TestHostWait(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.held, fa.peer, fb.peer = true, true, true
	fb.facts.Waits = 0
	a, b := openFake(t, "WA", fa), openFake(t, "WB", fb)
	x, _ := a.Alloc(device.DeviceMemory, 64)
	pa := submit(t, launchOn(t, a, Write(0, 0)), x)
	done := make(chan Point, 1)
	go func() { done <- submit(t, launchOn(t, b, Read(0, 0)), x) }()
	select {
	case <-done:
		t.Fatal("b submitted before a's write was reached")
	case <-time.After(20 * time.Millisecond):
	}
	fa.complete(pa.v)
	<-done
	if w := fb.submitted[0].Waits; len(w) != 0 {
		t.Fatalf("a host-waited submission carries waits %v", w)
	}
	// A host wait honours the context.
	submit(t, launchOn(t, a, Write(0, 0)), x)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := launchOn(t, b, Read(0, 0)).Take().Submit(ctx, x); err != context.DeadlineExceeded {
		t.Fatalf("host wait past its deadline: %v", err)
	}
	fa.complete(a.Last().v)
}

// TestWaitCommitsOther checks that a device-side wait on a point of a
// device that commits lazily (Submit returns Pending) has that device
// commit the point before the waiting submission reaches its driver:
// otherwise its word would never reach the value, or reach it only behind
// later work of its device that waits on the waiting submission, and the
// two devices would wait on each other for ever.
func TestWaitCommitsOther(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.held, fa.pending, fa.peer, fb.peer = true, true, true, true
	a, b := openFake(t, "CA", fa), openFake(t, "CB", fb)
	x, _ := a.Alloc(device.DeviceMemory, 64)
	pa := submit(t, launchOn(t, a, Write(0, 0)), x)
	fa.mu.Lock()
	before := len(fa.commits)
	fa.mu.Unlock()
	fb.mu.Lock()
	fb.onSubmit = func() {
		if len(fa.commits) == before {
			t.Error("b's submission reached its driver before a committed the point it waits for")
		}
	}
	fb.mu.Unlock()
	submit(t, launchOn(t, b, Read(0, 0)), x)
	fa.mu.Lock()
	got := fa.commits[before:]
	fa.mu.Unlock()
	if len(got) != 1 || got[0] != pa.v {
		t.Fatalf("a's commits after b's submission waited on it: %v, want [%d]", got, pa.v)
	}
	// Once committed, a second wait on it commits nothing more.
	submit(t, launchOn(t, b, Read(0, 0)), x)
	if len(fa.commits) != before+1 {
		t.Fatalf("a committed again: %v", fa.commits)
	}
	fa.complete(pa.v)
}

// TestOwedLossReturned: where the device that a submission waits on, on
// the device side, is lost between the hazards' look at its point and the
// debt's record, the waiting device is lost, and its Submit returns that
// loss with the point, as a failed Submit does, rather than nil.
func TestOwedLossReturned(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.held, fa.peer, fb.peer = true, true, true
	a, b := openFake(t, "OA", fa), openFake(t, "OB", fb)
	x, _ := a.Alloc(device.DeviceMemory, 64)
	pa := submit(t, launchOn(t, a, Write(0, 0)), x)
	fb.mu.Lock()
	fb.onSubmit = func() { a.lose("lost for the test", nil) }
	fb.mu.Unlock()
	p, err := launchOn(t, b, Read(0, 0)).Take().Submit(context.Background(), x)
	var le *LostError
	if !errors.As(err, &le) || le.Device != b.name || !strings.Contains(err.Error(), a.name) {
		t.Fatalf("Submit on b, whose work waits on a's point %d, lost meanwhile: point %v, error %v; want b's loss naming a", pa.v, p, err)
	}
	if werr := p.Wait(context.Background()); !errors.Is(werr, ErrLost) {
		t.Fatalf("the point's Wait: %v, want b's loss", werr)
	}
}
