package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/profile"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runJSON runs rigbench in the process with args and -json, and returns
// its report; it fails the test where the exit code is not 0.
func runJSON(t *testing.T, ctx context.Context, args ...string) *Report {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(ctx, append(args, "-json"), &out, &errOut); code != 0 {
		t.Fatalf("%q: exit %d\nstdout: %s\nstderr: %s", args, code, out.String(), errOut.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, out.String())
	}
	if r.Schema != schema {
		t.Fatalf("schema %q", r.Schema)
	}
	return &r
}

// TestRunHostEverything runs a short load test on hostdev with every
// output: the JSON report, the baseline, the plot and the trace.
func TestRunHostEverything(t *testing.T) {
	dir := t.TempDir()
	plot, trace := filepath.Join(dir, "lat.svg"), filepath.Join(dir, "trace.json")
	r := runJSON(t, context.Background(), "-device", "host", "-duration", "200ms", "-compare", "-plot", plot, "-trace", trace)

	if r.Workload != "empty" || len(r.Devices) != 1 || r.Devices[0].Arch != "host" || r.Devices[0].Spec != "host" {
		t.Errorf("report %+v", r)
	}
	g := r.Rig
	if g.Submissions == 0 || g.Errors != 0 || g.PerSecond <= 0 || g.Latency.Count != g.Submissions {
		t.Errorf("rig's result %+v", g)
	}
	if l := g.Latency; !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("latencies out of order: %+v", l)
	}
	if r.Baseline == nil || r.Baseline.Submissions == 0 || r.Ratio == nil || r.Ratio.PerSecond <= 0 {
		t.Errorf("baseline %+v, ratio %+v, note %q", r.Baseline, r.Ratio, r.BaselineNote)
	}
	if r.Plot != plot || r.Trace != trace || r.Profile == nil {
		t.Fatalf("plot %q, trace %q, profile %v", r.Plot, r.Trace, r.Profile)
	}
	if r.Profile.Spans != int(g.Submissions) || r.Profile.Devices[0].Count != int(g.Submissions) {
		t.Errorf("the profile holds %d spans for %d submissions", r.Profile.Spans, g.Submissions)
	}

	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	if n := svgElements(t, svg); n["polyline"] != 2 {
		t.Errorf("the plot has %d lines, want rig's and the baseline's", n["polyline"])
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr profile.Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	slices := 0
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" {
			slices++
			if e.Name != "empty" {
				t.Fatalf("slice %+v: want the launch of empty", e)
			}
		}
	}
	if slices != int(g.Submissions) {
		t.Errorf("%d slices for %d submissions", slices, g.Submissions)
	}
}

// TestRunWorkloads runs each workload for a count of submissions.
func TestRunWorkloads(t *testing.T) {
	for _, w := range workloadNames() {
		args := []string{"-device", "host", "-workload", w, "-n", "120", "-c", "2", "-depth", "3"}
		if workloads[w].sized {
			args = append(args, "-size", "8KiB")
		}
		r := runJSON(t, context.Background(), args...)
		g := r.Rig
		if g.Submissions != 120 || g.Errors != 0 || g.Latency.Count != 120 {
			t.Errorf("%s: %+v", w, g)
		}
		switch w {
		case "empty", "twice":
			if g.BytesPerS != 0 {
				t.Errorf("%s moves %v bytes/s", w, g.BytesPerS)
			}
		case "mixed":
			if len(r.Devices) != 2 || r.Devices[1].Spec != "host:1" {
				t.Errorf("mixed ran on %+v", r.Devices)
			}
			fallthrough
		default:
			if g.BytesPerS <= 0 || r.Config.Size != 8<<10 {
				t.Errorf("%s: %v bytes/s of %d bytes", w, g.BytesPerS, r.Config.Size)
			}
		}
	}
}

// TestRunMixedTrace checks that the trace of the mixed workload draws its
// waits across devices.
func TestRunMixedTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "mixed.json")
	r := runJSON(t, context.Background(), "-device", "host,host:1", "-workload", "mixed", "-n", "200", "-trace", trace)
	if r.Rig.Submissions != 200 || len(r.Profile.Devices) != 2 {
		t.Fatalf("%+v", r)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr profile.Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, e := range tr.TraceEvents {
		names[e.Ph+" "+strings.Fields(e.Name + " x")[0]]++
	}
	if names["X fill"] != 50 || names["X copy"] != 100 || names["X empty"] != 50 {
		t.Errorf("slices %v", names)
	}
	t.Logf("%d flows of waits across the devices", names["s host"]+names["s host:1"])
}

// TestRunRate runs open loop at a rate, and checks the count it reached
// and that the report states the load generator's lateness for each one.
func TestRunRate(t *testing.T) {
	r := runJSON(t, context.Background(), "-device", "host", "-rate", "2000", "-duration", "250ms", "-c", "2")
	if n := r.Rig.Submissions; n < 150 || n > 520 {
		t.Errorf("%d submissions at 2000/s for 250ms", n)
	}
	if l := r.Rig.Lateness; l == nil || l.Count < r.Rig.Submissions {
		t.Errorf("lateness %+v for %d submissions", l, r.Rig.Submissions)
	}
}

// TestRunRateWithN: an open loop bounded by -n reads at its -rate, not
// above it: its run spans the slot of each arrival it took, the last one's
// too, as a run bounded by -duration does. Five arrivals at 100/s span
// 50 ms, not the 40 ms from the first to the last plus the last one's
// latency; and in rounds of one arrival each (-compare), a round spans its
// arrival's 10 ms, not the arrival's latency, which read as thousands a
// second and made the ratio of the two sides' rates that of their
// latencies.
func TestRunRateWithN(t *testing.T) {
	for _, args := range [][]string{
		{"-device", "host", "-rate", "100", "-n", "5"},
		{"-device", "host", "-rate", "100", "-n", "5", "-depth", "1", "-c", "2"},
		{"-device", "host", "-rate", "100", "-n", "5", "-compare", "-rounds", "5"},
	} {
		r := runJSON(t, context.Background(), args...)
		sides := []Result{r.Rig}
		if r.Baseline != nil {
			sides = append(sides, *r.Baseline)
		}
		for _, x := range sides {
			if x.Submissions != 5 || x.Errors != 0 || x.PerSecond > 100*1.001 {
				t.Errorf("%q: %s sent %d submissions in %v with %d errors: %.1f/s, want 5 at 100/s at most",
					args, x.Name, x.Submissions, time.Duration(x.ElapsedNs), x.Errors, x.PerSecond)
			}
		}
	}
}

// TestRunRateWithFewN: an open loop of -n below -c takes arrivals 0 to
// N-1, each its own lane's, and reads at its -rate. Where the lanes that
// came first took the N, their arrivals lay up to -c periods in: two
// arrivals at 20/s over 32 lanes spanned up to 1.6 s and read as 1.25/s.
func TestRunRateWithFewN(t *testing.T) {
	for _, depth := range []string{"1", "8"} {
		r := runJSON(t, context.Background(), "-device", "host", "-rate", "20", "-n", "2", "-c", "32", "-depth", depth)
		if x := r.Rig; x.Submissions != 2 || x.Errors != 0 || x.PerSecond < 20*0.8 || x.PerSecond > 20*1.001 {
			t.Errorf("-depth %s: %d submissions in %v with %d errors: %.2f/s, want 2 at 20/s",
				depth, x.Submissions, time.Duration(x.ElapsedNs), x.Errors, x.PerSecond)
		}
	}
}

// TestRunLevels runs two -c levels: a report of each, in order, each with
// the CPU time the process used.
func TestRunLevels(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-device", "host", "-c", "1,3", "-depth", "1", "-duration", "100ms", "-json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var ls Levels
	if err := json.Unmarshal(out.Bytes(), &ls); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if ls.Schema != schema || len(ls.Levels) != 2 {
		t.Fatalf("schema %q, %d levels", ls.Schema, len(ls.Levels))
	}
	for i, want := range []int{1, 3} {
		r := ls.Levels[i]
		g := r.Rig
		if r.Config.Submitters != want || g.Submissions == 0 || g.Errors != 0 {
			t.Errorf("level %d: submitters %d, %+v", i, r.Config.Submitters, g)
		}
		if g.CPUNs <= 0 || g.CPUPerSubmissionNs <= 0 || g.CPUPerSecond <= 0 {
			t.Errorf("level %d: CPU %d ns, %v ns per submission, %v per s", i, g.CPUNs, g.CPUPerSubmissionNs, g.CPUPerSecond)
		}
		if g.Lateness != nil {
			t.Errorf("level %d: a lateness in closed loop", i)
		}
		if g.Runnable == nil || g.Runnable.Looks < 10 {
			t.Errorf("level %d: runnable goroutines %+v, want about a look each millisecond of 100", i, g.Runnable)
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"-device", "host", "-c", "2,1", "-duration", "50ms"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	s := out.String()
	if i, j := strings.Index(s, "\n-c 2: "), strings.Index(s, "\n-c 1: "); i < 0 || j < i || !strings.Contains(s, "CPU ") {
		t.Errorf("the text lacks a line per level, in order:\n%s", s)
	}
}

// TestRunLevelSetupFails runs two levels of which the second cannot set
// up its lanes (600 lanes of two 1MiB buffers are over the host device's
// budget): the run exits with 1, says why, and still reports the level it
// measured.
func TestRunLevelSetupFails(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-device", "host", "-workload", "d2d", "-c", "1,600", "-n", "10", "-json"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "setting up d2d") {
		t.Fatalf("exit %d, stderr %q, want 1 and the setup's error", code, errOut.String())
	}
	var ls Levels
	if err := json.Unmarshal(out.Bytes(), &ls); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(ls.Levels) != 1 || ls.Levels[0].Config.Submitters != 1 || ls.Levels[0].Rig.Submissions != 10 {
		t.Fatalf("the report of the level measured is missing or wrong: %s", out.String())
	}
}

// TestRunInterrupt ends a run with no bound by its context, as Ctrl-C
// does: it stops, and reports what it measured.
func TestRunInterrupt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-device", "host", "-duration", "0", "-compare", "-json"}, &out, &errOut)
	}()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", c, out.String(), errOut.String())
		}
	case <-time.After(60 * time.Second):
		// A bound on a run with no end of its own, not a measure of speed.
		t.Fatal("a run whose context ended did not stop")
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !r.Rig.Interrupted || r.Rig.Submissions == 0 || r.Rig.Errors != 0 {
		t.Errorf("rig's result %+v", r.Rig)
	}
	if r.Baseline != nil || !strings.Contains(r.BaselineNote, "interrupted") {
		t.Errorf("baseline %+v, note %q", r.Baseline, r.BaselineNote)
	}
}

// TestRunDefaultText runs the command as CI does, on the default device,
// and reads its text report.
func TestRunDefaultText(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-duration", "100ms"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"rigbench empty:", "\ndevice ", "\nrig: ", "latency p50", "allocations"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr %q: no progress line where stderr is not a terminal", errOut.String())
	}
}

// TestRunTimeout bounds the waits with a timeout shorter than the work,
// which the report counts as errors, with exit code 1.
func TestRunTimeout(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-device", "host", "-workload", "fill", "-size", "32MiB", "-n", "2", "-timeout", "1ms", "-json"}, &out, &errOut)
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s %s", err, out.String(), errOut.String())
	}
	if r.Rig.Errors == 0 {
		t.Skipf("fills of 32MiB ended within 1ms: %+v", r.Rig)
	}
	if code != 1 || !strings.Contains(r.Rig.FirstError, "timed out") {
		t.Errorf("exit %d, result %+v", code, r.Rig)
	}
}

// TestRunRounds splits -n into rounds that alternate rig and the baseline:
// each side makes all of -n.
func TestRunRounds(t *testing.T) {
	r := runJSON(t, context.Background(), "-device", "host", "-workload", "d2d", "-size", "4KiB", "-n", "101", "-compare", "-rounds", "3")
	if r.Rig.Submissions != 101 || r.Baseline == nil || r.Baseline.Submissions != 101 {
		t.Fatalf("rig %+v, baseline %+v", r.Rig, r.Baseline)
	}
	if r.Baseline.BytesPerS <= 0 || !strings.Contains(r.BaselineNote, "3 alternating rounds") {
		t.Errorf("baseline %+v, note %q", r.Baseline, r.BaselineNote)
	}
}

// TestRunRoundsShortDuration: a -duration shorter than a nanosecond per
// round still bounds each round, rather than leaving it unbounded.
func TestRunRoundsShortDuration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := runJSON(t, ctx, "-device", "host", "-duration", "4ns", "-compare", "-rounds", "5")
	if r.Rig.Interrupted || r.Baseline == nil || r.Baseline.Interrupted {
		t.Fatalf("the run ended only at its context's end: rig %+v, baseline %+v, note %q", r.Rig, r.Baseline, r.BaselineNote)
	}
}

// TestRunMixedCompare runs the mixed workload and its baseline in many
// short rounds: each side makes all of -n, with no error.
func TestRunMixedCompare(t *testing.T) {
	r := runJSON(t, context.Background(), "-device", "host", "-workload", "mixed", "-size", "4KiB", "-n", "2000", "-c", "2", "-compare", "-rounds", "10")
	if r.Rig.Submissions != 2000 || r.Rig.Errors != 0 || r.Baseline == nil || r.Baseline.Submissions != 2000 || r.Baseline.Errors != 0 {
		t.Fatalf("rig %+v, baseline %+v", r.Rig, r.Baseline)
	}
}

// TestRunMemProfile: -memprofile writes the run's allocations as a
// profile go tool pprof reads (gzip-compressed protocol buffers).
func TestRunMemProfile(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	name := filepath.Join(t.TempDir(), "mem.pprof")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-device", "host", "-c", "4", "-duration", "100ms", "-memprofile", name}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("the profile is %d bytes, starting % x: not a gzip-compressed pprof profile", len(b), b[:min(len(b), 4)])
	}
	if runtime.MemProfileRate != memProfileRate {
		t.Errorf("MemProfileRate %d during and after the run, want %d", runtime.MemProfileRate, memProfileRate)
	}
	if code := run(context.Background(), []string{"-device", "host", "-duration", "10ms", "-memprofile", filepath.Join(t.TempDir(), "no", "such", "dir")}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "-memprofile") {
		t.Errorf("an uncreatable -memprofile file: exit %d, %q", code, errOut.String())
	}
}

// TestTwiceWhat runs twice at sizes that are no whole groups of 256
// threads: the report states the array the launch runs over and its
// threads a group, as twiceShape makes them, and the -size it rounded up.
func TestTwiceWhat(t *testing.T) {
	for _, c := range []struct{ size, want string }{
		{"4096", "a launch of twice over a float32 array of 4KiB, 256 threads a group"},
		{"4100", "a launch of twice over a float32 array of 5KiB, 256 threads a group (-size 4100 rounded up to 5 whole groups)"},
		{"64", "a launch of twice over a float32 array of 64B, 16 threads a group"},
		{"4", "a launch of twice over a float32 array of 4B, 1 thread a group"},
	} {
		r := runJSON(t, context.Background(), "-device", "host", "-workload", "twice", "-size", c.size, "-n", "2")
		if r.What != c.want || r.Rig.Errors != 0 {
			t.Errorf("-size %s: the report says %q, errors %d; want %q", c.size, r.What, r.Rig.Errors, c.want)
		}
	}
}
