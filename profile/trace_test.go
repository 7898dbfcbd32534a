package profile

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// checkTrace checks what Perfetto needs of a trace: every event has a name,
// a phase and a process; metadata names every process and thread that
// holds events; slices have a time and a length that is not negative;
// each flow has exactly one start and one end, each inside a slice of its
// own thread.
func checkTrace(t *testing.T, tr *Trace) {
	t.Helper()
	type track struct{ pid, tid int }
	procNames := map[int]string{}
	threadNames := map[track]string{}
	slices := map[track][][2]float64{}
	type flow struct{ s, f []TraceEvent }
	flows := map[int]*flow{}
	for i, e := range tr.TraceEvents {
		if e.Name == "" || e.Ph == "" || e.Pid <= 0 {
			t.Fatalf("event %d lacks a name, a phase or a process: %+v", i, e)
		}
		tk := track{e.Pid, e.Tid}
		switch e.Ph {
		case "M":
			args, _ := e.Args.(map[string]any)
			switch e.Name {
			case "process_name":
				procNames[e.Pid], _ = args["name"].(string)
			case "thread_name":
				threadNames[tk], _ = args["name"].(string)
			case "process_sort_index", "thread_sort_index":
				if _, ok := args["sort_index"].(float64); !ok {
					t.Errorf("event %d: sort index %v", i, args)
				}
			default:
				t.Errorf("event %d: unknown metadata %q", i, e.Name)
			}
		case "X":
			if e.Dur == nil || *e.Dur < 0 || e.Ts < 0 || e.Tid <= 0 {
				t.Errorf("slice %d: %+v", i, e)
				continue
			}
			args, _ := e.Args.(map[string]any)
			if _, ok := args["value"].(float64); !ok {
				t.Errorf("slice %d lacks its value: %v", i, e.Args)
			}
			slices[tk] = append(slices[tk], [2]float64{e.Ts, e.Ts + *e.Dur})
		case "s", "f":
			if e.ID <= 0 || e.Cat == "" {
				t.Errorf("flow event %d lacks an id or a category: %+v", i, e)
			}
			fl := flows[e.ID]
			if fl == nil {
				fl = &flow{}
				flows[e.ID] = fl
			}
			if e.Ph == "s" {
				fl.s = append(fl.s, e)
			} else {
				fl.f = append(fl.f, e)
				if e.Bp != "e" {
					t.Errorf("flow end %d binds to the next slice: %+v", i, e)
				}
			}
		default:
			t.Errorf("event %d of phase %q", i, e.Ph)
		}
	}
	for tk := range slices {
		if procNames[tk.pid] == "" || threadNames[tk] == "" {
			t.Errorf("track %+v has slices but no name", tk)
		}
	}
	inside := func(e TraceEvent) bool {
		for _, s := range slices[track{e.Pid, e.Tid}] {
			if e.Ts >= s[0] && e.Ts <= s[1] {
				return true
			}
		}
		return false
	}
	for id, fl := range flows {
		if len(fl.s) != 1 || len(fl.f) != 1 {
			t.Errorf("flow %d has %d starts and %d ends", id, len(fl.s), len(fl.f))
			continue
		}
		if !inside(fl.s[0]) || !inside(fl.f[0]) {
			t.Errorf("flow %d is not bound to slices: %+v", id, fl)
		}
		if fl.s[0].Ts > fl.f[0].Ts {
			t.Errorf("flow %d goes back in time: %+v", id, fl)
		}
	}
}

func TestWriteTraceSynthetic(t *testing.T) {
	spans := []Span{
		{Device: "gpu0", Queue: "COMPUTE:0", QueueIndex: 0, Value: 1, Start: 1000, End: 5000,
			Parts: []Part{{Kind: "launch", Name: "twice", Groups: [3]uint32{4, 1, 1}, Threads: [3]uint32{256, 1, 1}}}},
		{Device: "gpu0", Queue: "COPY:0", QueueIndex: 1, Value: 2, Start: 5000, End: 9000,
			Parts: []Part{{Kind: "copy", Queue: 1, Bytes: 1 << 20}}},
		{Device: "gpu1", Queue: "COMPUTE:0", QueueIndex: 0, Value: 7, Start: 9500, End: 9501,
			Parts: []Part{{Kind: "fill", Queue: 1, Bytes: 4096}, {Kind: "launch", Name: "empty"}},
			Waits: []Wait{{Device: "gpu0", Value: 2}, {Device: "gpu0", Value: 99}}},
		{Device: "gpu1", Queue: "", QueueIndex: 3, Value: 8, Start: 9600, End: 9700},
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, spans, "gpu1", "gpu2"); err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if tr.DisplayTimeUnit != "ns" {
		t.Errorf("display time unit %q", tr.DisplayTimeUnit)
	}
	checkTrace(t, &tr)

	var names []string
	pids := map[string]int{}
	flows := 0
	for _, e := range tr.TraceEvents {
		switch {
		case e.Ph == "X":
			names = append(names, e.Name)
		case e.Name == "process_name":
			pids[e.Args.(map[string]any)["name"].(string)] = e.Pid
		case e.Ph == "s":
			flows++
		}
	}
	want := []string{"twice", "copy 1MiB", "fill 4KiB + empty", "value"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("slice names %q, want %q", names, want)
	}
	// The devices named come first, in their order; the wait on a value
	// not in the spans has no flow.
	if pids["gpu1"] != 1 || pids["gpu2"] != 2 || pids["gpu0"] != 3 {
		t.Errorf("processes %v", pids)
	}
	if flows != 1 {
		t.Errorf("%d flows, want 1", flows)
	}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Name == "twice" && (e.Ts != 1 || *e.Dur != 4) {
			t.Errorf("slice twice at %v for %v µs, want 1 for 4", e.Ts, *e.Dur)
		}
	}
}

func TestWriteTraceEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTrace(&buf, nil); err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(tr.TraceEvents) != 0 {
		t.Errorf("events %+v", tr.TraceEvents)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 512: "512B", 4096: "4KiB", 1536: "1.5KiB", 1 << 30: "1GiB", 3 << 20: "3MiB",
		// Values whose three digits round up to 1000 of their unit.
		1<<20 - 1: "1MiB", 1023*1024 + 512: "1MiB", 1000*1024 + 1: "0.977MiB", 1000 << 20: "1000MiB",
		1_070_000_000: "0.997GiB", 1<<40 - 1: "1TiB", 1500 << 40: "1500TiB", 1500<<40 + 1<<39: "1500TiB", 2<<50 + 1<<30: "2048TiB", 1<<64 - 1: "16777216TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWriteTraceLongSpans writes spans longer than an int64 of
// nanoseconds holds, and spans that end before they start: each slice's
// length is the span's, never negative, and a flow's ends lie within
// their slices.
func TestWriteTraceLongSpans(t *testing.T) {
	spans := []Span{
		{Device: "a", Value: 1, Start: math.MinInt64, End: math.MaxInt64},
		{Device: "a", Value: 2, Start: -1, End: math.MaxInt64},
		{Device: "b", Value: 1, Start: 10, End: 4, Waits: []Wait{{Device: "a", Value: 1}}},
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, spans); err != nil {
		t.Fatal(err)
	}
	var tr Trace
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	var durs []float64
	var flowTs []float64
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "X":
			durs = append(durs, *e.Dur)
		case "s", "f":
			flowTs = append(flowTs, e.Ts)
		}
	}
	want := []float64{math.Exp2(64) / 1e3, math.Exp2(63) / 1e3, 0}
	if len(durs) != len(want) {
		t.Fatalf("%d slices, want %d", len(durs), len(want))
	}
	for i := range want {
		if math.Abs(durs[i]-want[i]) > want[i]*1e-9 {
			t.Errorf("slice %d lasts %g µs, want %g", i, durs[i], want[i])
		}
	}
	// The flow from the longest span starts at its middle, -0.5 ns.
	if len(flowTs) != 2 || math.Abs(flowTs[0]) > 1e-3 || flowTs[1] != 0.01 {
		t.Errorf("flow at %v µs, want about 0 and 0.01", flowTs)
	}
	for i, c := range []struct {
		s    Span
		want int64
	}{
		{spans[0], math.MaxInt64},
		{spans[1], math.MaxInt64},
		{spans[2], 0},
		{Span{Start: -5, End: 7}, 12},
	} {
		if got := c.s.Duration(); got != c.want {
			t.Errorf("span %d: Duration %d, want %d", i, got, c.want)
		}
	}
}
