package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/profile"
	rig "github.com/rig-go/rig/runtime"
)

// schema names the report's JSON layout; a change that breaks a reader
// changes it.
const schema = "rigbench/1"

// Report is what rigbench prints: as text, or as JSON with -json.
type Report struct {
	Schema   string        `json:"schema"`
	Workload string        `json:"workload"`
	What     string        `json:"what"`
	Config   ConfigReport  `json:"config"`
	Devices  []DeviceFacts `json:"devices"`
	// Rig is the run through rig.
	Rig Result `json:"rig"`
	// PerDevice is each device's part of Rig, where the run had several
	// (timelines.go).
	PerDevice []DeviceResult `json:"per_device,omitempty"`
	// Baseline is the same workload through plain Go, with -compare where
	// one exists; BaselineNote says what it is, or why there is none.
	Baseline     *Result `json:"baseline,omitempty"`
	BaselineNote string  `json:"baseline_note,omitempty"`
	// Ratio is rig's figures over the baseline's; nil where either run
	// met errors, as BaselineNote then says.
	Ratio *Ratio `json:"ratio,omitempty"`
	// Profile summarizes the profile -trace took, exported to Trace.
	Profile *profile.Summary `json:"profile,omitempty"`
	Trace   string           `json:"trace,omitempty"`
	Plot    string           `json:"plot,omitempty"`
	// Notes says what else the reader should know, such as a default
	// device that did not open.
	Notes []string `json:"notes,omitempty"`
}

// ConfigReport is the run's configuration.
type ConfigReport struct {
	// Submitters is -c: the submitting goroutines of each device, and of
	// the two devices together for the mixed workload.
	Submitters int `json:"submitters"`
	Depth      int `json:"depth"`
	// Split says that at depth 1 each submitter submitted and waited in
	// two calls (-split) rather than by Run.Do.
	Split      bool    `json:"split,omitempty"`
	Rate       float64 `json:"rate"` // 0: as fast as possible
	DurationNs int64   `json:"duration_ns"`
	N          int64   `json:"n"`
	Size       int64   `json:"size"`
	TimeoutNs  int64   `json:"timeout_ns"`
	GOMAXPROCS int     `json:"gomaxprocs"`
}

// DeviceFacts is a device's facts as the report gives them.
type DeviceFacts struct {
	Spec          string   `json:"spec"`
	Name          string   `json:"name"`
	Arch          string   `json:"arch"`
	Budget        int64    `json:"budget"`
	Queues        []string `json:"queues"`
	CopyEngine    int      `json:"copy_engine"`
	Completion    string   `json:"completion"`
	Waits         []string `json:"waits"`
	MayBlock      bool     `json:"may_block"`
	HangMs        int      `json:"hang_ms"`
	MapsHost      bool     `json:"maps_host"`
	HostAddresses bool     `json:"host_addresses"`
	Alignment     int      `json:"alignment"`
	CacheBytes    int64    `json:"cache_bytes"`
	Bus           string   `json:"bus,omitempty"`
	FaultDomain   string   `json:"fault_domain,omitempty"`
}

// Result is what one run measured.
type Result struct {
	// Name says what ran: "rig", or the baseline's name.
	Name        string  `json:"name"`
	ElapsedNs   int64   `json:"elapsed_ns"`
	Submissions int64   `json:"submissions"`
	PerSecond   float64 `json:"submissions_per_s"`
	BytesPerS   float64 `json:"bytes_per_s,omitempty"`
	// Latency is from submit to reached point: from the intended send
	// time with -rate.
	Latency Latency `json:"latency"`
	// AllocsPerSubmission and AllocBytesPerSubmission are the process's
	// heap allocations during the run over its submissions.
	AllocsPerSubmission     float64 `json:"allocs_per_submission"`
	AllocBytesPerSubmission float64 `json:"alloc_bytes_per_submission"`
	// CPUNs is the process's CPU time (user + system, from getrusage)
	// over the run; CPUPerSubmissionNs is it over the submissions, and
	// CPUPerSecond over the run's time: the cores the process kept busy.
	CPUNs              int64   `json:"cpu_ns"`
	CPUPerSubmissionNs float64 `json:"cpu_per_submission_ns"`
	CPUPerSecond       float64 `json:"cpu_per_s"`
	// Runnable is the goroutines waiting for a processor over the run.
	Runnable *Runnable `json:"runnable,omitempty"`
	// Lateness is the load generator's own, with -rate: from each
	// arrival's intended send time to when its submitter took it up.
	Lateness *Latency `json:"lateness,omitempty"`
	// Waits is how the waits ended, for the run through rig.
	Waits *Waits `json:"waits,omitempty"`
	// Interrupts are the machine's GPU interrupts over the run through
	// rig, where the system lists them.
	Interrupts *Interrupts `json:"gpu_interrupts,omitempty"`
	Errors     int64       `json:"errors"`
	FirstError string      `json:"first_error,omitempty"`
	// Interrupted is true where Ctrl-C ended the run early.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Ratio is rig's figures over the baseline's: above 1 means rig is
// faster for PerSecond, and slower for the latencies.
type Ratio struct {
	PerSecond float64 `json:"submissions_per_s"`
	P50       float64 `json:"latency_p50"`
	P99       float64 `json:"latency_p99"`
}

// result is m as a Result.
func result(name string, m *measure) Result {
	r := Result{Name: name, ElapsedNs: int64(m.elapsed), Submissions: m.done, Errors: m.errors, Interrupted: m.interrupted}
	if m.firstErr != nil {
		r.FirstError = m.firstErr.Error()
	}
	if s := m.elapsed.Seconds(); s > 0 {
		r.PerSecond = float64(m.done) / s
		r.BytesPerS = float64(m.bytes) / s
	}
	r.Latency = summarize(m.lat.merged())
	if late := summarize(m.late.merged()); late.Count > 0 {
		r.Lateness = &late
	}
	r.CPUNs = int64(m.cpu)
	r.Runnable = m.runnable.summary()
	if s := m.elapsed.Seconds(); s > 0 {
		r.CPUPerSecond = m.cpu.Seconds() / s
	}
	if m.done > 0 {
		r.AllocsPerSubmission = float64(m.mallocs) / float64(m.done)
		r.AllocBytesPerSubmission = float64(m.allocBytes) / float64(m.done)
		r.CPUPerSubmissionNs = float64(m.cpu) / float64(m.done)
	}
	return r
}

// ratio is a's figures over b's, or nil where b has none.
func ratio(a, b Result) *Ratio {
	if b.PerSecond == 0 || b.Latency.P50 == 0 || b.Latency.P99 == 0 {
		return nil
	}
	return &Ratio{
		PerSecond: a.PerSecond / b.PerSecond,
		P50:       float64(a.Latency.P50) / float64(b.Latency.P50),
		P99:       float64(a.Latency.P99) / float64(b.Latency.P99),
	}
}

// facts is the report's facts of d, opened for s.
func facts(s spec, d *rig.Device) DeviceFacts {
	f := d.Facts()
	df := DeviceFacts{
		Spec: s.String(), Name: d.Name(), Arch: f.Arch, Budget: f.Budget, Queues: f.Queues,
		CopyEngine: f.CopyEngine, MayBlock: f.MayBlock, HangMs: f.HangMs, MapsHost: f.MapsHost,
		HostAddresses: f.HostAddresses, Alignment: f.Alignment, CacheBytes: f.CacheBytes,
		Bus: f.Bus, FaultDomain: f.FaultDomain, Completion: "store", Waits: []string{},
	}
	if f.Completion == device.Host {
		df.Completion = "host"
	}
	if f.Waits.Has(device.WaitStores) {
		df.Waits = append(df.Waits, "stores")
	}
	if f.Waits.Has(device.WaitHosts) {
		df.Waits = append(df.Waits, "hosts")
	}
	return df
}

// calls says how a submitter of depth 1 submitted and waited: by one call
// of Run.Do, or by two (-split); nothing at other depths.
func calls(c ConfigReport) string {
	switch {
	case c.Depth != 1:
		return ""
	case c.Split:
		return " (Submit, then Wait)"
	}
	return " (Run.Do)"
}

// writeJSON writes the report as indented JSON.
func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeText writes the report for a reader.
func (r *Report) writeText(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	mode := "as fast as possible"
	if c.Rate > 0 {
		mode = fmt.Sprintf("open loop at %s/s", rateText(c.Rate))
	}
	fmt.Fprintf(&b, "rigbench %s: %s\n", r.Workload, r.What)
	fmt.Fprintf(&b, "  %s of depth %d%s, %s, %s, GOMAXPROCS %d\n", submitters(r), c.Depth, calls(c), mode, bound(c), c.GOMAXPROCS)
	for _, d := range r.Devices {
		fmt.Fprintf(&b, "device %s: %s, arch %s, queues %s, budget %s, completion by %s, waits on %s, alignment %d",
			d.Spec, d.Name, d.Arch, strings.Join(d.Queues, " "), profile.Bytes(uint64(max(d.Budget, 0))), d.Completion, orNone(d.Waits), d.Alignment)
		if d.HangMs > 0 {
			fmt.Fprintf(&b, ", hang bound %d ms", d.HangMs)
		}
		if d.Bus != "" {
			fmt.Fprintf(&b, ", bus %s", d.Bus)
		}
		b.WriteString("\n")
	}
	writeResult(&b, &r.Rig)
	writeDeviceResults(&b, r.PerDevice)
	if r.Baseline != nil {
		writeResult(&b, r.Baseline)
	}
	if r.BaselineNote != "" {
		fmt.Fprintf(&b, "baseline: %s\n", r.BaselineNote)
	}
	if x := r.Ratio; x != nil {
		fmt.Fprintf(&b, "rig / baseline: %.2fx the submissions/s, %.2fx the p50 latency, %.2fx the p99 latency\n", x.PerSecond, x.P50, x.P99)
	}
	if r.Profile != nil {
		b.WriteString(r.Profile.String())
	}
	if r.Trace != "" {
		fmt.Fprintf(&b, "trace: %s (open it in https://ui.perfetto.dev or chrome://tracing)\n", r.Trace)
	}
	if r.Plot != "" {
		fmt.Fprintf(&b, "plot: %s\n", r.Plot)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// submitters says how many goroutines submitted in the run of r:
// Config.Submitters is -c, the submitters of each device, and of all of
// them for the mixed workload, which spans its two devices: "2
// submitter(s)", or "2 submitter(s) on each of 4 devices (8 in all)".
func submitters(r *Report) string {
	c, n := r.Config.Submitters, len(r.Devices)
	if n < 2 || r.Workload == "mixed" {
		return fmt.Sprintf("%d submitter(s)", c)
	}
	return fmt.Sprintf("%d submitter(s) on each of %d devices (%d in all)", c, n, c*n)
}

// bound says what ends a run of c: "for 3s", "for 1000 submissions",
// "for 1000 submissions or 3s", or "until interrupted".
func bound(c ConfigReport) string {
	switch {
	case c.N > 0 && c.DurationNs > 0:
		return fmt.Sprintf("for %d submissions or %v", c.N, time.Duration(c.DurationNs))
	case c.N > 0:
		return fmt.Sprintf("for %d submissions", c.N)
	case c.DurationNs > 0:
		return "for " + time.Duration(c.DurationNs).String()
	}
	return "until interrupted"
}

// Levels is the JSON report of a run of several -c levels: a Report for
// each level, in the order -c lists them.
type Levels struct {
	Schema string    `json:"schema"`
	Levels []*Report `json:"levels"`
}

// writeLevelsJSON writes the reports of a run's levels as indented JSON.
func writeLevelsJSON(w io.Writer, reps []*Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Levels{Schema: schema, Levels: reps})
}

// writeLevelsText writes the reports of a run's levels for a reader: the
// workload, configuration and devices once, from the first, then a line
// for each level, followed where the run has several devices by each
// device's figures (writeDeviceResults), and by its waits, interrupts and
// errors, then the notes of every level once.
func writeLevelsText(w io.Writer, reps []*Report) error {
	var b strings.Builder
	r := reps[0]
	c := r.Config
	mode := "as fast as possible"
	if c.Rate > 0 {
		mode = fmt.Sprintf("open loop at %s/s", rateText(c.Rate))
	}
	fmt.Fprintf(&b, "rigbench %s: %s\n", r.Workload, r.What)
	fmt.Fprintf(&b, "  submitters of depth %d%s, %s, each level %s, GOMAXPROCS %d\n", c.Depth, calls(c), mode, bound(c), c.GOMAXPROCS)
	for _, d := range r.Devices {
		fmt.Fprintf(&b, "device %s: %s, arch %s, completion by %s\n", d.Spec, d.Name, d.Arch, d.Completion)
	}
	seen := map[string]bool{}
	var notes []string
	for _, r := range reps {
		x := &r.Rig
		l := x.Latency
		// A level in which no submission completed has no latency, as
		// writeResult leaves out its line.
		lat := "no latency measured"
		if l.Count > 0 {
			lat = fmt.Sprintf("p50 %s  p99 %s  max %s", profile.Nanos(l.P50), profile.Nanos(l.P99), profile.Nanos(l.Max))
		}
		fmt.Fprintf(&b, "-c %d: %s/s (%s in %s)  %s  CPU %s per submission, %.2f s per s  allocs %.2f per submission",
			r.Config.Submitters, rateText(x.PerSecond), count(float64(x.Submissions)), profile.Nanos(x.ElapsedNs), lat,
			profile.Nanos(int64(x.CPUPerSubmissionNs)), x.CPUPerSecond, x.AllocsPerSubmission)
		if t := x.Lateness; t != nil {
			fmt.Fprintf(&b, "  lateness p50 %s  p99 %s", profile.Nanos(t.P50), profile.Nanos(t.P99))
		}
		if x.Interrupted {
			b.WriteString(" (interrupted)")
		}
		b.WriteString("\n")
		writeDeviceResults(&b, r.PerDevice)
		if x.Waits != nil {
			b.WriteString(x.Waits.text())
		}
		if x.Interrupts != nil {
			b.WriteString(x.Interrupts.text())
		}
		if x.Errors > 0 {
			fmt.Fprintf(&b, "  errors %d, the first: %s\n", x.Errors, x.FirstError)
		}
		for _, n := range r.Notes {
			if !seen[n] {
				seen[n] = true
				notes = append(notes, n)
			}
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeResult(b *strings.Builder, r *Result) {
	fmt.Fprintf(b, "%s: %s submissions in %s: %s/s", r.Name, count(float64(r.Submissions)), profile.Nanos(r.ElapsedNs), rateText(r.PerSecond))
	if r.BytesPerS > 0 {
		fmt.Fprintf(b, ", %s/s", profile.Bytes(uint64(r.BytesPerS)))
	}
	if r.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n")
	l := r.Latency
	if l.Count > 0 {
		fmt.Fprintf(b, "  latency p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (min %s, mean %s)\n",
			profile.Nanos(l.P50), profile.Nanos(l.P90), profile.Nanos(l.P99), profile.Nanos(l.P999), profile.Nanos(l.Max),
			profile.Nanos(l.Min), profile.Nanos(int64(l.Mean)))
	}
	if l := r.Lateness; l != nil {
		fmt.Fprintf(b, "  the load generator's lateness p50 %s  p99 %s  max %s\n", profile.Nanos(l.P50), profile.Nanos(l.P99), profile.Nanos(l.Max))
	}
	fmt.Fprintf(b, "  CPU time (user + system) %s: %s per submission, %.2f s per s\n",
		profile.Nanos(r.CPUNs), profile.Nanos(int64(r.CPUPerSubmissionNs)), r.CPUPerSecond)
	if r.Runnable != nil {
		b.WriteString(r.Runnable.text())
	}
	fmt.Fprintf(b, "  allocations %.2f per submission (%.1f B)\n", r.AllocsPerSubmission, r.AllocBytesPerSubmission)
	if r.Waits != nil {
		b.WriteString(r.Waits.text())
	}
	if r.Interrupts != nil {
		b.WriteString(r.Interrupts.text())
	}
	if r.Errors > 0 {
		fmt.Fprintf(b, "  errors %d, the first: %s\n", r.Errors, r.FirstError)
	}
}

// count formats x for a reader: as an integer below ten thousand, and
// with three significant digits and k, M or G above: "812", "12.3k",
// "4.56M".
func count(x float64) string {
	switch {
	case x < 1e4:
		return fmt.Sprintf("%.0f", x)
	case x < 999.5e3:
		return sig3(x/1e3) + "k"
	case x < 999.5e6:
		return sig3(x/1e6) + "M"
	default:
		return sig3(x/1e9) + "G"
	}
}

// sig3 formats x, from 1 up, with three significant digits.
func sig3(x float64) string {
	switch {
	case x < 9.995:
		return fmt.Sprintf("%.2f", x)
	case x < 99.95:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
