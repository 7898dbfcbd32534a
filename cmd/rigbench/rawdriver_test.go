package main

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
)

// roundTrip encodes r as JSON and decodes it again: the report a reader
// gets is the one rigbench wrote.
func roundTrip(t *testing.T, r *Report) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*r, back) {
		t.Errorf("the report changed through JSON:\n%+v\n%+v", *r, back)
	}
}

// TestRunDriverBaseline runs each workload on hostdev against the driver
// alone.
func TestRunDriverBaseline(t *testing.T) {
	for _, w := range workloadNames() {
		args := []string{"-device", "host", "-workload", w, "-n", "120", "-c", "2", "-depth", "3", "-compare", "-baseline", "driver", "-rounds", "2"}
		if workloads[w].sized {
			args = append(args, "-size", "8KiB")
		}
		r := runJSON(t, context.Background(), args...)
		roundTrip(t, r)
		if g := r.Rig; g.Submissions != 120 || g.Errors != 0 {
			t.Errorf("%s: rig %+v", w, g)
		}
		if w == "mixed" {
			if r.Baseline != nil || !strings.Contains(r.BaselineNote, "no baseline of the driver alone") {
				t.Errorf("mixed: baseline %+v, note %q", r.Baseline, r.BaselineNote)
			}
			continue
		}
		b := r.Baseline
		if b == nil {
			t.Errorf("%s: no baseline: %q", w, r.BaselineNote)
			continue
		}
		if b.Name != rawName || b.Submissions != 120 || b.Errors != 0 || b.Latency.Count != 120 || r.Ratio == nil {
			t.Errorf("%s: baseline %+v, ratio %+v", w, b, r.Ratio)
		}
		if moves := w != "empty" && w != "twice"; moves != (b.BytesPerS > 0) {
			t.Errorf("%s: the baseline moves %v bytes/s", w, b.BytesPerS)
		}
	}
}

// exclusiveHost makes the host driver open one device at a time for the
// test, as cudadev does a GPU, so that the rounds close and open rig's
// devices around the baseline's.
func exclusiveHost(t *testing.T) {
	d := drivers["host"]
	d.exclusive = true
	t.Cleanup(func() { d.exclusive = false })
}

// TestRunDriverBaselineExclusive runs the rounds that close rig's devices
// for the baseline's rounds and open them again for rig's.
func TestRunDriverBaselineExclusive(t *testing.T) {
	exclusiveHost(t)
	for _, w := range []string{"twice", "d2h"} {
		r := runJSON(t, context.Background(), "-device", "host,host:1", "-workload", w, "-size", "4KiB", "-n", "301", "-c", "2", "-compare", "-baseline", "driver", "-rounds", "3")
		roundTrip(t, r)
		if r.Rig.Submissions != 301 || r.Rig.Errors != 0 || r.Baseline == nil || r.Baseline.Submissions != 301 || r.Baseline.Errors != 0 {
			t.Fatalf("%s: rig %+v, baseline %+v, note %q", w, r.Rig, r.Baseline, r.BaselineNote)
		}
		if !strings.Contains(r.BaselineNote, "3 alternating rounds") || !strings.Contains(r.BaselineNote, "closed before each of the baseline's rounds") {
			t.Errorf("%s: note %q", w, r.BaselineNote)
		}
	}
	// -trace keeps rig's devices open: no baseline.
	trace := t.TempDir() + "/trace.json"
	r := runJSON(t, context.Background(), "-device", "host", "-n", "50", "-compare", "-baseline", "driver", "-trace", trace)
	if r.Baseline != nil || !strings.Contains(r.BaselineNote, "-trace") || r.Rig.Submissions != 50 {
		t.Errorf("baseline %+v, note %q", r.Baseline, r.BaselineNote)
	}
}

// TestRunDriverBaselineInterrupt ends an exclusive run by its context in
// the baseline's round: the baseline's devices close, and the report holds
// both sides.
func TestRunDriverBaselineInterrupt(t *testing.T) {
	exclusiveHost(t)
	// rig's round takes 1 s, and the context ends half-way through the
	// baseline's: a loaded machine (the race detector) still reaches it.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	r := runJSON(t, ctx, "-device", "host", "-duration", "2s", "-rounds", "2", "-compare", "-baseline", "driver")
	if r.Rig.Submissions == 0 || r.Rig.Errors != 0 {
		t.Errorf("rig %+v", r.Rig)
	}
	if b := r.Baseline; b == nil || !b.Interrupted || b.Submissions == 0 || b.Errors != 0 {
		t.Errorf("baseline %+v, note %q", b, r.BaselineNote)
	}
}

// TestNewBaselineChoice checks which baseline -baseline picks.
func TestNewBaselineChoice(t *testing.T) {
	_, err := newBaseline(&env{cfg: &config{Baseline: "pipeline", Workload: "empty"}, devs: []opened{{spec: spec{Driver: "nv"}}}})
	if err == nil || !strings.Contains(err.Error(), "host driver's baseline") {
		t.Errorf("pipeline on nv: %v", err)
	}
	_, err = newBaseline(&env{cfg: &config{Baseline: "auto", Workload: "empty"}, devs: []opened{{spec: spec{Driver: "host"}}, {spec: spec{Driver: "nv"}}}})
	if err == nil || !strings.Contains(err.Error(), "several drivers") {
		t.Errorf("host and nv: %v", err)
	}
}

// TestRawDevice drives a host device through its driver alone with a ring
// of 4 values and arenas that start small, so that Room returns later and
// grow, and with an image that asks for its place.
func TestRawDevice(t *testing.T) {
	drivers["hostsmall"] = &driver{
		what: "a host driver of a small ring",
		opener: func(i int) (device.Opener, error) {
			return hostdev.Open(hostdev.Config{Name: "hostsmall", Ring: 4, Grow: true, OwnWord: i == 1}), nil
		},
		image: func(_, _, k string) ([]byte, error) { return hostdev.PlacedImageOf(8192, k), nil },
	}
	defer delete(drivers, "hostsmall")
	for i := range 2 {
		r, err := openRaw(spec{Driver: "hostsmall", Index: i}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if (r.word == nil) != (i == 1) {
			t.Errorf("own word %v: word %p", i == 1, r.word)
		}
		ctx := context.Background()
		var subs []*device.Submission
		for _, w := range []string{"twice", "fill", "empty"} {
			s, _, err := rawLanes[w](r, 64<<10)
			if err != nil {
				t.Fatal(w, err)
			}
			subs = append(subs, s)
		}
		// Six fills in one value: more parts than the small ring's arena.
		many := &device.Submission{}
		for range 6 {
			many.Parts = append(many.Parts, subs[1].Parts[0])
		}
		subs = append(subs, many)
		var last uint64
		for k := range 300 {
			v, err := r.submit(ctx, subs[k%len(subs)])
			if err != nil {
				t.Fatal(k, err)
			}
			if k > 0 && v != last+1 {
				t.Fatalf("value %d after %d", v, last)
			}
			last = v
		}
		if err := r.wait(ctx, last); err != nil {
			t.Fatal(err)
		}
		if len(r.images) != 2 || len(r.regions) != 4 {
			t.Errorf("%d images, %d regions: want 2 placed images and 2 buffers", len(r.images), len(r.regions))
		}
		if err := r.close(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// A wait that the work does not reach ends with its context.
	r, err := openRaw(spec{Driver: "host"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.close(time.Second) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.wait(ctx, r.last.Load()+1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait past the last value: %v", err)
	}
}
