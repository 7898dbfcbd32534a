package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rig-go/rig/profile"
)

// sampleReport is a report with every field set.
func sampleReport() *Report {
	base := Result{Name: "baseline (a bare goroutine pipeline)", ElapsedNs: 1e9, Submissions: 2000, PerSecond: 2000, BytesPerS: 4e9,
		Latency: Latency{Count: 2000, Min: 900, Mean: 1500.5, P50: 1400, P90: 1900, P99: 4000, P999: 9000, Max: 12000}}
	return &Report{
		Schema: schema, Workload: "d2d", What: "a copy of 1MiB from Device to Device memory",
		Config: ConfigReport{Submitters: 2, Depth: 8, Rate: 5000, DurationNs: 3e9, N: 10000, Size: 1 << 20, TimeoutNs: 1e10, GOMAXPROCS: 8},
		Devices: []DeviceFacts{{Spec: "host", Name: "host", Arch: "host", Budget: 1 << 30, Queues: []string{"COMPUTE:0", "COPY:0"},
			CopyEngine: 1, Completion: "store", Waits: []string{"stores", "hosts"}, MayBlock: true, HangMs: 5000, MapsHost: true,
			HostAddresses: true, Alignment: 4096, CacheBytes: 1 << 20, Bus: "0000:41:00.0", FaultDomain: "cuda"}},
		Rig: Result{Name: "rig", ElapsedNs: 1_000_000_123, Submissions: 1000, PerSecond: 999.9, BytesPerS: 2e9,
			Latency:             Latency{Count: 1000, Min: 1000, Mean: 2500.25, P50: 2000, P90: 3000, P99: 8000, P999: 20000, Max: 30000},
			AllocsPerSubmission: 0.5, AllocBytesPerSubmission: 12.5, CPUNs: 1_500_000_000, CPUPerSubmissionNs: 1.5e6, CPUPerSecond: 1.5,
			Lateness: &Latency{Count: 1000, Min: 10, Mean: 30, P50: 25_000, P90: 40_000, P99: 90_000, P999: 200_000, Max: 400_000}, Errors: 1, FirstError: "wait on host: wait timed out after 10s", Interrupted: true},
		Baseline:     &base,
		BaselineNote: "a note",
		Ratio:        &Ratio{PerSecond: 0.49995, P50: 1.43, P99: 2},
		Profile: &profile.Summary{From: 10, To: 1000, Spans: 3, Dropped: 1, Devices: []profile.DeviceSummary{{
			Device: "host", Count: 3, Busy: 0.5, BusyNs: 495, Gaps: 2, GapNs: 100, GapP50: 40, GapMax: 60, Mean: 165, P50: 150, P99: 300, Max: 300,
			Queues: []profile.QueueSummary{{Queue: "COMPUTE:0", Count: 3, Busy: 0.5}}}}},
		Trace: "t.json", Plot: "p.svg",
		Notes: []string{"the default device is the host's"},
	}
}

// TestReportJSONRoundTrip writes a report as JSON and reads it back: the
// same report, under the key names of the schema.
func TestReportJSONRoundTrip(t *testing.T) {
	r := sampleReport()
	var buf bytes.Buffer
	if err := r.writeJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*r, back) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, *r)
	}

	// The schema's keys, as a reader that knows no Go would look for them.
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"schema", "workload", "what", "config.submitters", "config.depth", "config.rate", "config.duration_ns",
		"config.n", "config.size", "config.timeout_ns", "config.gomaxprocs",
		"rig.name", "rig.elapsed_ns", "rig.submissions", "rig.submissions_per_s", "rig.bytes_per_s",
		"rig.latency.count", "rig.latency.min_ns", "rig.latency.mean_ns", "rig.latency.p50_ns", "rig.latency.p90_ns",
		"rig.latency.p99_ns", "rig.latency.p99_9_ns", "rig.latency.max_ns",
		"rig.allocs_per_submission", "rig.alloc_bytes_per_submission", "rig.cpu_ns", "rig.cpu_per_submission_ns", "rig.cpu_per_s",
		"rig.lateness.p50_ns", "rig.lateness.max_ns", "rig.errors", "rig.first_error", "rig.interrupted",
		"baseline.submissions_per_s", "baseline_note", "ratio.submissions_per_s", "ratio.latency_p50", "ratio.latency_p99",
		"profile.spans", "profile.devices", "trace", "plot", "notes", "devices",
	} {
		if !has(m, path) {
			t.Errorf("the JSON lacks %s", path)
		}
	}
	dev := m["devices"].([]any)[0].(map[string]any)
	for _, k := range []string{"spec", "name", "arch", "budget", "queues", "copy_engine", "completion", "waits",
		"may_block", "hang_ms", "maps_host", "host_addresses", "alignment", "cache_bytes", "bus", "fault_domain"} {
		if _, ok := dev[k]; !ok {
			t.Errorf("the device's facts lack %s", k)
		}
	}
	if m["schema"] != "rigbench/1" {
		t.Errorf("schema %v", m["schema"])
	}
}

func has(m map[string]any, path string) bool {
	var v any = m
	for k := range strings.SplitSeq(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = mm[k]; !ok {
			return false
		}
	}
	return true
}

func TestReportText(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().writeText(&buf); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		"rigbench d2d: a copy of 1MiB",
		"2 submitter(s) of depth 8, open loop at 5000/s, for 10000 submissions or 3s",
		"device host: host, arch host, queues COMPUTE:0 COPY:0, budget 1GiB",
		"rig: 1000 submissions in 1.00s: 1000/s, 1.86GiB/s (interrupted)",
		"latency p50 2.00µs  p90 3.00µs  p99 8.00µs  p99.9 20.0µs  max 30.0µs",
		"allocations 0.50 per submission (12.5 B)",
		"the load generator's lateness p50 25.0µs  p99 90.0µs  max 400µs",
		"CPU time (user + system) 1.50s: 1.50ms per submission, 1.50 s per s",
		"errors 1, the first: wait on host: wait timed out",
		"baseline (a bare goroutine pipeline): 2000 submissions",
		"rig / baseline: 0.50x the submissions/s, 1.43x the p50 latency, 2.00x the p99 latency",
		"profile of 990ns, 3 spans (1 dropped",
		"trace: t.json",
		"plot: p.svg",
		"note: the default device is the host's",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the text lacks %q:\n%s", want, s)
		}
	}
}

// TestLevelsText writes a run of two levels: the header once, a line per
// level with its CPU time, and each note once.
func TestLevelsText(t *testing.T) {
	a, b := sampleReport(), sampleReport()
	b.Config.Submitters = 64
	b.Rig.PerSecond, b.Rig.CPUPerSubmissionNs, b.Rig.CPUPerSecond, b.Rig.Errors = 250e3, 7_900, 1.98, 0
	var buf bytes.Buffer
	if err := writeLevelsText(&buf, []*Report{a, b}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		"rigbench d2d: a copy of 1MiB",
		"submitters of depth 8, open loop at 5000/s, each level for 10000 submissions or 3s,",
		"\n-c 2: 1000/s (1000 in 1.00s)  p50 2.00µs  p99 8.00µs  max 30.0µs  CPU 1.50ms per submission, 1.50 s per s  allocs 0.50 per submission  lateness p50 25.0µs  p99 90.0µs (interrupted)\n  errors 1,",
		"\n-c 64: 250k/s (1000 in 1.00s)  p50 2.00µs  p99 8.00µs  max 30.0µs  CPU 7.90µs per submission, 1.98 s per s",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the text lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "note: the default device is the host's"); n != 1 {
		t.Errorf("the note appears %d times:\n%s", n, s)
	}
}

// TestLevelsTextBound writes the header of levels bounded by -n alone, or
// by nothing: it says so, rather than a duration of 0s.
func TestLevelsTextBound(t *testing.T) {
	for _, c := range []struct {
		n, duration int64
		want        string
	}{
		{1000, 0, "each level for 1000 submissions,"},
		{0, 0, "each level until interrupted,"},
		{1000, 2e9, "each level for 1000 submissions or 2s,"},
	} {
		a, b := sampleReport(), sampleReport()
		for _, r := range []*Report{a, b} {
			r.Config.N, r.Config.DurationNs = c.n, c.duration
		}
		var buf bytes.Buffer
		if err := writeLevelsText(&buf, []*Report{a, b}); err != nil {
			t.Fatal(err)
		}
		if s := buf.String(); !strings.Contains(s, c.want) {
			t.Errorf("-n %d -duration %v: the text lacks %q:\n%s", c.n, c.duration, c.want, s)
		}
	}
}

func TestCount(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 812: "812", 9999: "9999", 12345: "12.3k", 999_400: "999k",
		999_600: "1.00M", 4_560_000: "4.56M", 2.5e9: "2.50G"} {
		if got := count(x); got != want {
			t.Errorf("count(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestRateText: a -rate below 100/s keeps its fraction, so that the
// report's header never reads "open loop at 0/s" for a rate above 0.
func TestRateText(t *testing.T) {
	for x, want := range map[float64]string{0.001: "0.001", 0.25: "0.25", 0.5: "0.5", 1: "1", 12.5: "12.5", 250: "250", 20e3: "20.0k", 1.5e6: "1.50M"} {
		if got := rateText(x); got != want {
			t.Errorf("rateText(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestLevelsTextNoLatency writes a level in which no submission completed
// (interrupted at once): its line says so, rather than latencies of 0ns,
// as the report of one level leaves out its latency line.
func TestLevelsTextNoLatency(t *testing.T) {
	a, b := sampleReport(), sampleReport()
	b.Config.Submitters = 64
	b.Rig = Result{Name: "rig", ElapsedNs: 30_000, CPUNs: 40_000, CPUPerSecond: 1.33, Interrupted: true}
	var buf bytes.Buffer
	if err := writeLevelsText(&buf, []*Report{a, b}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	want := "\n-c 64: 0/s (0 in 30.0µs)  no latency measured  CPU 0ns per submission, 1.33 s per s  allocs 0.00 per submission (interrupted)\n"
	if !strings.Contains(s, want) {
		t.Errorf("the text lacks %q:\n%s", want, s)
	}
}

// TestLevelsTextPerDevice writes levels of a run of several devices
// (-timelines, or -device named more than once): each level's line is
// followed by each device's figures, as the report of one level and the
// JSON of every level give them.
func TestLevelsTextPerDevice(t *testing.T) {
	a, b := sampleReport(), sampleReport()
	b.Config.Submitters = 64
	a.PerDevice = []DeviceResult{
		{Device: "host", Submissions: 600, PerSecond: 600, Latency: Latency{Count: 600, P50: 2000, P99: 7000, Max: 30000}},
		{Device: "host/1", Submissions: 400, PerSecond: 400, Latency: Latency{Count: 400, P50: 2100, P99: 8000, Max: 20000}},
	}
	b.PerDevice = []DeviceResult{
		{Device: "host", Submissions: 520, PerSecond: 520, Latency: Latency{Count: 520, P50: 3000, P99: 9000, Max: 40000}},
		{Device: "host/1", Submissions: 480, PerSecond: 480, Latency: Latency{Count: 480, P50: 3100, P99: 9500, Max: 41000}},
	}
	var buf bytes.Buffer
	if err := writeLevelsText(&buf, []*Report{a, b}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	second := strings.Index(s, "\n-c 64:")
	if second < 0 {
		t.Fatalf("the text lacks the level -c 64:\n%s", s)
	}
	for _, c := range []struct {
		at   string // the text of the level, or of the levels after it
		want string
	}{
		{s[:second], "\n  host: 600 submissions, 600/s, latency p50 2.00µs  p99 7.00µs  max 30.0µs\n"},
		{s[:second], "\n  host/1: 400 submissions, 400/s, latency p50 2.10µs  p99 8.00µs  max 20.0µs\n"},
		{s[second:], "\n  host: 520 submissions, 520/s, latency p50 3.00µs  p99 9.00µs  max 40.0µs\n"},
		{s[second:], "\n  host/1: 480 submissions, 480/s, latency p50 3.10µs  p99 9.50µs  max 41.0µs\n"},
	} {
		if !strings.Contains(c.at, c.want) {
			t.Errorf("the text lacks %q in its level:\n%s", c.want, s)
		}
	}
}

// A measured rate below one submission a second (an open loop at -rate
// 0.5, or a slow workload) reads as its JSON does, not as 0/s.
func TestRateBelowOne(t *testing.T) {
	r := &Report{Workload: "empty", What: "w", Config: ConfigReport{Submitters: 1, Depth: 8, Rate: 0.5, DurationNs: 4e9},
		Rig: Result{Name: "rig", ElapsedNs: 4e9, Submissions: 2, PerSecond: 0.5}}
	var b bytes.Buffer
	if err := r.writeText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), ": 0/s") || !strings.Contains(b.String(), ": 0.5/s") {
		t.Errorf("2 submissions in 4 s read as 0/s:\n%s", b.String())
	}
	b.Reset()
	if err := writeLevelsText(&b, []*Report{r, r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "-c 1: 0.5/s") {
		t.Errorf("levels: 2 submissions in 4 s read as 0/s:\n%s", b.String())
	}
}

// TestReportCalls: the report says how a submitter of depth 1 submitted
// and waited, in the text and the JSON, and nothing of it at other depths.
func TestReportCalls(t *testing.T) {
	for _, c := range []struct {
		depth int
		split bool
		want  string
	}{
		{1, false, "2 submitter(s) of depth 1 (Run.Do), open loop"},
		{1, true, "2 submitter(s) of depth 1 (Submit, then Wait), open loop"},
		{8, false, "2 submitter(s) of depth 8, open loop"},
	} {
		r := sampleReport()
		r.Config.Depth, r.Config.Split = c.depth, c.split
		var text, js bytes.Buffer
		if err := r.writeText(&text); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), c.want) {
			t.Errorf("depth %d, split %v: the text lacks %q:\n%s", c.depth, c.split, c.want, text.String())
		}
		if err := r.writeJSON(&js); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(js.String(), `"split": true`); got != c.split {
			t.Errorf("depth %d, split %v: the JSON says split %v", c.depth, c.split, got)
		}
	}
}
