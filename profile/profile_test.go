package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openHost opens a host device named name and closes it at the test's end.
func openHost(t testing.TB, name string) *rig.Device {
	t.Helper()
	return testutil.Open(t, hostdev.Open(hostdev.Config{Name: name}))
}

// resolve loads hostdev's built-in kernel name on d and resolves it.
func resolve(t testing.TB, d *rig.Device, name string) *rig.Function {
	t.Helper()
	return testutil.Functions(t, d, hostdev.ImageOf(name), name)[0]
}

var submission = testutil.Submission

// alloc allocates n bytes of Device memory on d.
func alloc(t testing.TB, d *rig.Device, n int) *rig.Buffer {
	t.Helper()
	return testutil.Alloc(t, d, device.DeviceMemory, n)
}

// TestProfileHostdev takes a profile of two host devices whose work waits
// on each other, and checks the spans, the summary and the trace.
func TestProfileHostdev(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := openHost(t, "profile-a")
	b := openHost(t, "profile-b")
	empty := resolve(t, a, "empty")
	launch := submission(t, a, rig.Launch(empty, 0))
	bufA, bufB := alloc(t, a, 4096), alloc(t, b, 4096)
	fillA := submission(t, a, rig.FillBytes(0, 0, 4096, 7))
	copyB := submission(t, b, rig.Copy(0, 0, 1, 0, 4096))

	// Values before the profile are not in it.
	if _, err := launch.Take().Submit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Last().Wait(ctx); err != nil {
		t.Fatal(err)
	}

	p, err := Start(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(a); err == nil {
		t.Fatal("a second profile of a device started")
	}
	const rounds = 50
	for range rounds {
		if _, err := launch.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
		pf, err := fillA.Take().Submit(ctx, bufA)
		if err != nil {
			t.Fatal(err)
		}
		// The copy on b reads a's buffer: b's work waits for a's fill.
		if _, err := copyB.Take().Submit(ctx, bufA, bufB); err != nil {
			t.Fatal(err)
		}
		_ = pf
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// Values after the profile are not in it.
	if _, err := launch.Take().Submit(ctx); err != nil {
		t.Fatal(err)
	}

	spans := p.Spans()
	count := map[string]int{}
	waits := 0
	for i, sp := range spans {
		count[sp.Device]++
		if sp.End < sp.Start {
			t.Errorf("span %d ends before it starts: %+v", i, sp)
		}
		waits += len(sp.Waits)
		for _, w := range sp.Waits {
			if w.Device == sp.Device {
				t.Errorf("span %d waits on its own device: %+v", i, sp)
			}
		}
		if len(sp.Parts) != 1 {
			t.Fatalf("span %d has parts %+v, want one", i, sp.Parts)
		}
		switch pt := sp.Parts[0]; {
		case sp.Device == "profile-a" && pt.Kind == "launch":
			if pt.Name != "empty" || sp.Queue != "COMPUTE:0" {
				t.Errorf("span %d: %+v", i, sp)
			}
		case sp.Device == "profile-a" && pt.Kind == "fill":
			if pt.Bytes != 4096 || sp.Queue != "COPY:0" {
				t.Errorf("span %d: %+v", i, sp)
			}
		case sp.Device == "profile-b" && pt.Kind == "copy":
			if pt.Bytes != 4096 {
				t.Errorf("span %d: %+v", i, sp)
			}
			if len(sp.Waits) > 1 {
				t.Errorf("span %d waits on %+v", i, sp.Waits)
			}
		default:
			t.Errorf("span %d unexpected: %+v", i, sp)
		}
		if i > 0 && spans[i-1].Start > sp.Start {
			t.Errorf("spans %d and %d out of order", i-1, i)
		}
	}
	if count["profile-a"] != 2*rounds || count["profile-b"] != rounds {
		t.Errorf("spans per device %v, want %d and %d", count, 2*rounds, rounds)
	}
	// The fills on a wait for b's copies that read the buffer before, and
	// the copies on b for a's fills, where they had not completed.
	t.Logf("%d waits across the devices", waits)

	s := p.Summary()
	if len(s.Devices) != 2 || s.Devices[0].Count != 2*rounds || s.Devices[1].Count != rounds {
		t.Errorf("summary %+v", s)
	}
	for _, d := range s.Devices {
		if d.Busy <= 0 || d.Busy > 1 {
			t.Errorf("busy fraction of %s: %v", d.Device, d.Busy)
		}
	}
	t.Log("\n" + s.String())

	var buf bytes.Buffer
	if err := p.WriteTrace(&buf); err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	checkTrace(t, &tr)
	flows := 0
	for _, e := range tr.TraceEvents {
		if e.Ph == "s" {
			flows++
		}
	}
	if flows != waits {
		t.Errorf("%d flows for %d waits", flows, waits)
	}

	// The devices can be profiled again.
	p2, err := Start(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(p2.Spans()); n != 0 {
		t.Errorf("an empty profile holds %d spans", n)
	}
}

// TestProfileMaxSpans drops the spans over Options.MaxSpans.
func TestProfileMaxSpans(t *testing.T) {
	ctx := context.Background()
	d := openHost(t, "profile-max")
	s := submission(t, d, rig.Launch(resolve(t, d, "empty"), 0))
	p, err := StartOptions(Options{Every: time.Millisecond, MaxSpans: 5}, d)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := s.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	spans := p.Spans()
	if len(spans) != 5 || p.Dropped() != 5 {
		t.Fatalf("%d spans and %d dropped, want 5 and 5", len(spans), p.Dropped())
	}
	for _, sp := range spans {
		if Label(&sp) != "empty" {
			t.Errorf("span %+v is labelled %q, want empty", sp, Label(&sp))
		}
	}
}

func TestStartErrors(t *testing.T) {
	d := openHost(t, "profile-errors")
	if _, err := Start(); err == nil {
		t.Error("a profile of no device started")
	}
	if _, err := Start(d, d); err == nil {
		t.Error("a profile of a device named twice started")
	}
	if _, err := Start(nil); err == nil {
		t.Error("a profile of a nil device started")
	}
	if _, err := StartOptions(Options{Every: -1}, d); err == nil {
		t.Error("a profile with negative options started")
	}
}

// TestProfileDeviceClosed closes a device while a profile of it is taken:
// Stop ends, and the profile keeps what it settled.
func TestProfileDeviceClosed(t *testing.T) {
	ctx := context.Background()
	d := openHost(t, "profile-closed")
	s := submission(t, d, rig.Launch(resolve(t, d, "empty"), 0))
	p, err := StartOptions(Options{Every: time.Millisecond}, d)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := s.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Last().Wait(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	if err := p.Stop(ctx); err != nil {
		t.Errorf("stop after the device closed: %v", err)
	}
	if n := len(p.Spans()); n != 20 {
		t.Errorf("%d spans, want the 20 settled before the close", n)
	}
}

// TestProfileClosedUnsettled closes a device right after its work, before
// the profile settled it, and stops the profile at once: the settles after
// the close answer rig.ErrClosed, which is no error of the profile.
func TestProfileClosedUnsettled(t *testing.T) {
	ctx := context.Background()
	d := openHost(t, "profile-closed-early")
	s := submission(t, d, rig.Launch(resolve(t, d, "empty"), 0))
	p, err := StartOptions(Options{Every: time.Hour}, d)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Errorf("stop after the device closed: %v", err)
	}
	if n := len(p.Spans()); n > 5 {
		t.Errorf("%d spans of 5 values", n)
	}
}

// TestProfileStopRace stops profiles while values are submitted: every
// value timed is in the profile, in one run of values, and no stamp is
// left to the driver after Stop.
func TestProfileStopRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := openHost(t, "profile-race")
	s := submission(t, d, rig.Launch(resolve(t, d, "empty"), 0))
	for round := range 20 {
		p, err := StartOptions(Options{Every: time.Millisecond}, d)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				if _, err := s.Take().Submit(ctx); err != nil {
					done <- err
					return
				}
			}
		}()
		time.Sleep(2 * time.Millisecond)
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := d.Last().Wait(ctx); err != nil {
			t.Fatal(err)
		}
		left, err := d.Settle(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Fatalf("round %d: %d stamps left after Stop, the first of value %d", round, len(left), left[0].Value)
		}
		spans := p.Spans()
		if len(spans) == 0 {
			continue
		}
		lo, hi := spans[0].Value, spans[0].Value
		for _, sp := range spans {
			lo, hi = min(lo, sp.Value), max(hi, sp.Value)
			if len(sp.Parts) != 1 {
				t.Fatalf("round %d: span %+v has parts %+v", round, sp, sp.Parts)
			}
		}
		if int(hi-lo+1) != len(spans) {
			t.Fatalf("round %d: %d spans of values %d to %d", round, len(spans), lo, hi)
		}
	}
}

// TestProfileWaitOutside profiles one of two devices: its waits on the
// other, which is not in the profile, are left out, and the observer is
// removed at Stop.
func TestProfileWaitOutside(t *testing.T) {
	ctx := context.Background()
	a := openHost(t, "profile-in")
	b := openHost(t, "profile-out")
	bufA, bufB := alloc(t, a, 4096), alloc(t, b, 4096)
	fillA := submission(t, a, rig.FillBytes(0, 0, 4096, 7))
	copyB := submission(t, b, rig.Copy(0, 0, 1, 0, 4096))
	p, err := Start(b)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := fillA.Take().Submit(ctx, bufA); err != nil {
			t.Fatal(err)
		}
		if _, err := copyB.Take().Submit(ctx, bufA, bufB); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	spans := p.Spans()
	if len(spans) != 20 {
		t.Fatalf("%d spans, want 20", len(spans))
	}
	for _, sp := range spans {
		if sp.Device != "profile-out" || len(sp.Waits) != 0 || len(sp.Parts) != 1 || sp.Parts[0].Kind != "copy" {
			t.Errorf("span %+v", sp)
		}
	}
	rec := p.observers[0]
	rec.mu.Lock()
	n := len(rec.recs)
	rec.mu.Unlock()
	if _, err := copyB.Take().Submit(ctx, bufA, bufB); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != n {
		t.Errorf("the observer recorded a submission after Stop")
	}
}

// TestRecorderNoAlloc checks that the observer allocates nothing per
// submission once its queues have grown.
func TestRecorderNoAlloc(t *testing.T) {
	var word uint64
	s := device.Submission{
		Parts: []device.Part{{Kind: device.Launch, Entry: &device.Entry{Name: "f"}}, {Kind: device.CopyRows, RowBytes: 64, Rows: 2}},
		Waits: []device.Wait{{Word: &word, Value: 3}},
	}
	var r recorder
	for range 64 {
		s.Value++
		r.Submitted(nil, &s)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		s.Value++
		r.Submitted(nil, &s)
		r.mu.Lock()
		r.head = len(r.recs) // as the settling takes them
		r.mu.Unlock()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per submission", allocs)
	}
}
