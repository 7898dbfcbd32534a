package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is what the flags ask for.
type config struct {
	// Devices are the -device specs, in order; empty for the default.
	Devices  []spec
	Workload string
	// Size is the bytes of a copy or fill, or of twice's array; 0 where
	// -size was not given (the workload's default).
	Size int64
	// Levels are the -c levels, in order: the run measures each in turn.
	Levels []int
	// C is the submitting goroutines per device of the level that runs.
	C     int
	Depth int
	// Split makes a submitter at -depth 1 submit and then wait in two
	// calls (Run.Submit, Point.Wait) rather than one (Run.Do).
	Split    bool
	Rate     float64 // submissions/s over all submitters; 0: as fast as possible
	Duration time.Duration
	N        int64
	Timeout  time.Duration
	JSON     bool
	Plot     string
	Trace    string
	Compare  bool
	// Baseline is the baseline -compare runs: "auto", "driver" or
	// "pipeline".
	Baseline string
	Rounds   int
	// Timelines is the timelines opened of each device (timelines.go); 0
	// or 1 opens the device alone.
	Timelines int
	// CPUProfile is the file -cpuprofile writes the run's CPU profile to.
	CPUProfile string
	// MemProfile is the file -memprofile writes the run's allocations to.
	MemProfile string
	// GoTrace is the file -gotrace writes the run's Go execution trace to.
	GoTrace string
	// SlowTrace is the file -slowtrace writes the flight recorder's window
	// to, at the first submission slower than Slow.
	SlowTrace string
	Slow      time.Duration

	// paceFrom is where a round of -compare begins in its side's schedule
	// of -rate arrivals: the rounds before it of that side took that much
	// of -duration, and their arrivals are not this round's.
	paceFrom time.Duration
}

// usageError is a bad command line: rigbench says why and exits with 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// defaultDuration is how long a run lasts where neither -duration nor -n
// says.
const defaultDuration = 3 * time.Second

// maxSubmitters bounds -c, and the submitters of a level over all the
// devices the run opens; maxLevels bounds the levels -c lists.
const (
	maxSubmitters = 100_000
	maxLevels     = 64
)

// maxSlow bounds -slow: the flight recorder keeps at least twice -slow and
// a second of the trace, within its 256 MiB, which a busy run fills in
// seconds to minutes, so that a longer window holds no more; and past
// about 146 years that window overflows a time.Duration.
const maxSlow = time.Hour

// maxWaitSpin bounds -waitspin: a wait that outlasts its spin holds a CPU
// for all of it, and a GPU's round trip takes microseconds, so that a
// spin past a second burns CPU that the run's figures then count. 0 parks
// every wait at once; a negative spin, which Device.SetWaitSpin reads as
// 0, is refused, as the other duration flags refuse one.
const maxWaitSpin = time.Second

// maxInFlight bounds the submissions a level keeps in flight over all its
// submitters: each submitter's window of -depth is allocated as it starts
// (32 bytes a submission, more with -compare's baseline), so that -c and
// -depth within their own bounds could ask for terabytes together.
const maxInFlight = 1 << 22

// parseFlags parses rigbench's command line. It returns flag.ErrHelp for
// -h, having written the usage to out, and a *usageError for a bad line.
func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("rigbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("device", "a device: host, host:N, cuda:N or nv:N; several by repeating the flag or by commas (default: the first GPU where one is, host otherwise)", func(v string) error {
		for t := range strings.SplitSeq(v, ",") {
			s, err := parseSpec(strings.TrimSpace(t))
			if err != nil {
				return err
			}
			c.Devices = append(c.Devices, s)
		}
		return nil
	})
	fs.StringVar(&c.Workload, "workload", "empty", "the work: "+strings.Join(workloadNames(), ", "))
	size := sizeFlag{}
	fs.Var(&size, "size", "bytes of a copy or fill, or of twice's array, such as 4096, 64KiB, 1MiB (K, M, G are powers of 1024) (default: 4KiB for twice, 64KiB for mixed, 1MiB for copies and fills)")
	fs.Func("c", fmt.Sprintf("submitting goroutines per device (for mixed: in all), or a list of such levels, such as 1,4,16,64, which the run measures in turn, a report line each; at most %d submitters over all devices and %d submissions in flight with -depth (default 1)", maxSubmitters, maxInFlight), func(v string) error {
		levels, err := parseLevels(v)
		c.Levels = levels
		return err
	})
	fs.IntVar(&c.Depth, "depth", 8, "submissions each submitter keeps in flight")
	fs.BoolVar(&c.Split, "split", false, "at -depth 1, submit and then wait in two calls (Run.Submit, Point.Wait) rather than in one (Run.Do)")
	rate := rateFlag{}
	fs.Var(&rate, "rate", "target submissions per second over all submitters, open loop (latency from the intended send time), such as 5000 or 20k; 0 for as fast as possible")
	fs.DurationVar(&c.Duration, "duration", defaultDuration, "how long to submit; 0 for no bound (then -n or Ctrl-C ends the run)")
	fs.Int64Var(&c.N, "n", 0, "submissions in all; 0 for no bound")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "the longest a wait for a point may take")
	fs.BoolVar(&c.JSON, "json", false, "write the report as JSON")
	fs.StringVar(&c.Plot, "plot", "", "draw the latency distribution into this SVG file")
	fs.StringVar(&c.Trace, "trace", "", "take a profile and export it into this JSON file (Chrome trace events; Perfetto opens it)")
	fs.BoolVar(&c.Compare, "compare", false, "run the same workload through a baseline too (-baseline says which), and print rig's figures over its figures")
	fs.StringVar(&c.Baseline, "baseline", "auto", "with -compare, the baseline: driver (the workload driven straight through the device's driver, no rig core between), "+
		"pipeline (a bare goroutine pipeline, the host driver's only), or auto (pipeline on the host driver, driver on the GPU drivers)")
	fs.IntVar(&c.Timelines, "timelines", 0, "K timelines of each device: its timelines 1 to K-1 open beside it as devices of their own, each with -c submitters, and the report adds each one's figures; 0 or 1 for the device alone")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the run into this file (go tool pprof reads it)")
	fs.StringVar(&c.MemProfile, "memprofile", "", "write the run's allocations, sampled one in 4 KiB, into this file (go tool pprof -sample_index=alloc_objects reads it): where the allocations a submission reports come from")
	fs.Func("waitspin", fmt.Sprintf("how long a wait reads the device's word before it parks (Device.SetWaitSpin), such as 0 (park at once), 5us or 50us; at most %v, as each wait that spins holds a CPU that long (default: the device's)", maxWaitSpin), func(v string) error {
		// The flag package names the flag and the value before the
		// error: invalid value "1000h" for flag -waitspin: want ...
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxWaitSpin {
			return fmt.Errorf("want a duration from 0 (park at once) to %v, such as 20us", maxWaitSpin)
		}
		waitSpin = d
		return nil
	})
	fs.StringVar(&c.GoTrace, "gotrace", "", "write a Go execution trace of the run into this file (go tool trace reads it): where goroutines waited for a processor, a lock or a wake-up")
	fs.StringVar(&c.SlowTrace, "slowtrace", "", "keep a flight recorder of the run's Go execution trace, and write the last seconds of it into this file at the first submission slower than -slow (go tool trace reads it); where none is, no file is written, and one that was there stays as it was")
	fs.DurationVar(&c.Slow, "slow", 10*time.Millisecond, "with -slowtrace, the latency that counts as slow; at most 1h, as the flight recorder keeps twice it and a second of the trace within 256 MiB, which a busy run fills in seconds to minutes")
	fs.IntVar(&c.Rounds, "rounds", 5, "with -compare, the rounds that alternate rig and the baseline, each a share of -duration or -n, so that both meet the machine's other load alike")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(fs, out)
			return nil, flag.ErrHelp
		}
		return nil, &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q: rigbench takes flags only", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if len(c.Levels) == 0 {
		c.Levels = []int{1}
	}
	c.C = c.Levels[0]
	c.Size, c.Rate = size.n, rate.v
	if c.N > 0 && !set["duration"] {
		c.Duration = 0
	}
	if err := c.check(set); err != nil {
		return nil, err
	}
	return c, nil
}

// check returns a *usageError where the flags do not make a run.
func (c *config) check(set map[string]bool) error {
	if workloads[c.Workload] == nil {
		return usagef("unknown workload %q: want one of %s", c.Workload, strings.Join(workloadNames(), ", "))
	}
	switch {
	case len(c.Levels) > 1 && (c.Compare || c.Trace != "" || c.Plot != ""):
		return usagef("-c lists %d levels: -compare, -trace and -plot take one level", len(c.Levels))
	case c.Depth < 1 || c.Depth > 1<<16:
		return usagef("-depth %d: want 1 to %d submissions in flight", c.Depth, 1<<16)
	case c.Duration < 0:
		return usagef("-duration %v: want a duration of 0 or more", c.Duration)
	case c.N < 0:
		return usagef("-n %d: want a count of 0 or more", c.N)
	case c.Timeout <= 0:
		return usagef("-timeout %v: want a positive duration", c.Timeout)
	case c.Timelines < 0 || c.Timelines > maxTimelines:
		return usagef("-timelines %d: want 0 to %d timelines", c.Timelines, maxTimelines)
	case c.Rounds < 1 || c.Rounds > 1000:
		return usagef("-rounds %d: want 1 to 1000 rounds", c.Rounds)
	case c.Slow <= 0 || c.Slow > maxSlow:
		return usagef("-slow %v: want a positive duration of at most %v", c.Slow, maxSlow)
	case set["slow"] && c.SlowTrace == "":
		return usagef("-slow applies to -slowtrace, which is not set")
	case c.Split && c.Depth != 1:
		return usagef("-split applies to -depth 1, and -depth is %d", c.Depth)
	case set["rounds"] && !c.Compare:
		return usagef("-rounds applies to -compare, which is not set")
	case set["baseline"] && !c.Compare:
		return usagef("-baseline applies to -compare, which is not set")
	case c.Baseline != "auto" && c.Baseline != "driver" && c.Baseline != "pipeline":
		return usagef("-baseline %q: want auto, driver or pipeline", c.Baseline)
	}
	if set["size"] && !workloads[c.Workload].sized {
		return usagef("-size does not apply to workload %s", c.Workload)
	}
	if c.Workload == "twice" && c.Size != 0 && c.Size%4 != 0 {
		return usagef("-size %d: twice's array holds float32 values, so its size is a multiple of 4", c.Size)
	}
	if n := max(len(c.Devices), 1) * max(c.Timelines, 1); c.Workload == "mixed" && n > 2 {
		return usagef("-workload mixed runs on two devices, A and B: the %d that -device and -timelines open would leave %d idle", n, n-2)
	}
	if err := c.checkLoad(); err != nil {
		return err
	}
	files := map[string]string{}
	for _, o := range []struct{ flag, name string }{
		{"-cpuprofile", c.CPUProfile}, {"-memprofile", c.MemProfile}, {"-gotrace", c.GoTrace},
		{"-slowtrace", c.SlowTrace}, {"-plot", c.Plot}, {"-trace", c.Trace},
	} {
		if o.name == "" {
			continue
		}
		// The absolute path, so that a name and its path from / meet;
		// where the working folder is gone, the name as it is.
		clean, err := filepath.Abs(o.name)
		if err != nil {
			clean = filepath.Clean(o.name)
		}
		if other, ok := files[clean]; ok {
			return usagef("%s and %s name the same file, %s: each writes a file of its own", other, o.flag, o.name)
		}
		files[clean] = o.flag
	}
	seen := map[string]bool{}
	for _, s := range c.Devices {
		if seen[s.String()] {
			return usagef("-device %s named twice", s)
		}
		seen[s.String()] = true
	}
	return nil
}

// checkLoad returns a *usageError where a level of -c makes more than
// maxSubmitters submitters over the devices -device and -timelines open
// (mixed's -c counts them in all), or keeps more than maxInFlight
// submissions in flight at -depth.
func (c *config) checkLoad() error {
	devs := int64(max(len(c.Devices), 1) * max(c.Timelines, 1))
	if c.Workload == "mixed" {
		devs = 1
	}
	top := int64(slices.Max(c.Levels))
	if n := top * devs; n > maxSubmitters {
		return usagef("-c %d on %d device(s) makes %d submitters: want at most %d in all", top, devs, n, maxSubmitters)
	}
	if n := top * devs * int64(c.Depth); n > maxInFlight {
		return usagef("-c %d at -depth %d on %d device(s) keeps %d submissions in flight: want at most %d in all", top, c.Depth, devs, n, maxInFlight)
	}
	return nil
}

// writeUsage writes the command's usage.
func writeUsage(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprint(out, `rigbench load-tests rig's devices: submissions/s, bytes/s, and the latency
from submit to reached point.

usage: rigbench [flags]

`)
	fs.SetOutput(out)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(out, "\nworkloads (one submission each):\n")
	for _, n := range workloadNames() {
		w := workloads[n]
		what := w.what
		if w.sized {
			what = fmt.Sprintf(what, "-size bytes")
		}
		fmt.Fprintf(out, "  %-6s %s\n", n, what)
	}
}

// spec is a device as -device names it: a driver and an index, and the
// timeline -timelines opens of it.
type spec struct {
	Driver   string // "host", "cuda" or "nv"
	Index    int
	Timeline int
}

func (s spec) String() string {
	name := fmt.Sprintf("%s:%d", s.Driver, s.Index)
	if s.Driver == "host" && s.Index == 0 {
		name = "host"
	}
	if s.Timeline > 0 {
		name = fmt.Sprintf("%s/%d", name, s.Timeline)
	}
	return name
}

// parseSpec parses host, host:N, cuda:N or nv:N.
func parseSpec(t string) (spec, error) {
	drv, idx, hasIdx := strings.Cut(t, ":")
	switch drv {
	case "host", "cuda", "nv":
	case "":
		return spec{}, fmt.Errorf("empty device: want host, host:N, cuda:N or nv:N")
	default:
		return spec{}, fmt.Errorf("unknown device %q: want host, host:N, cuda:N or nv:N", t)
	}
	if !hasIdx {
		if drv != "host" {
			return spec{}, fmt.Errorf("device %q lacks its index: want %s:N, such as %s:0", t, drv, drv)
		}
		return spec{Driver: drv}, nil
	}
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || n > 1023 {
		return spec{}, fmt.Errorf("device %q: the index %q is not a number from 0 to 1023", t, idx)
	}
	return spec{Driver: drv, Index: n}, nil
}

// parseLevels parses -c: a count of submitters, or several separated by
// commas.
func parseLevels(v string) ([]int, error) {
	var out []int
	for t := range strings.SplitSeq(v, ",") {
		t = strings.TrimSpace(t)
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 || n > maxSubmitters {
			return nil, fmt.Errorf("%q is not a count of submitters from 1 to %d", t, maxSubmitters)
		}
		out = append(out, n)
	}
	if len(out) > maxLevels {
		return nil, fmt.Errorf("%d levels, over %d", len(out), maxLevels)
	}
	return out, nil
}

// sizeFlag is a count of bytes with an optional binary unit.
type sizeFlag struct{ n int64 }

func (s *sizeFlag) String() string { return strconv.FormatInt(s.n, 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	s.n = n
	return nil
}

// parseSize parses a positive count of bytes: digits, then optionally K,
// M or G (powers of 1024), with or without "iB" or "B" after them.
func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	shift := 0
	low := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		shift  int
	}{{"kib", 10}, {"mib", 20}, {"gib", 30}, {"kb", 10}, {"mb", 20}, {"gb", 30}, {"k", 10}, {"m", 20}, {"g", 30}, {"b", 0}} {
		if strings.HasSuffix(low, u.suffix) {
			t, shift = t[:len(t)-len(u.suffix)], u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("size %q: want a positive count of bytes, such as 4096, 64KiB or 1MiB", v)
	}
	if n > math.MaxInt64>>shift || n<<shift > 1<<40 {
		return 0, fmt.Errorf("size %q: over 1TiB", v)
	}
	return n << shift, nil
}

// rateFlag is a rate in submissions per second, with an optional k or M.
type rateFlag struct{ v float64 }

func (r *rateFlag) String() string { return strconv.FormatFloat(r.v, 'g', -1, 64) }

func (r *rateFlag) Set(v string) error {
	t := strings.TrimSpace(v)
	mul := 1.0
	switch {
	case strings.HasSuffix(t, "k"), strings.HasSuffix(t, "K"):
		t, mul = t[:len(t)-1], 1e3
	case strings.HasSuffix(t, "M"):
		t, mul = t[:len(t)-1], 1e6
	}
	x, err := strconv.ParseFloat(t, 64)
	x *= mul
	if err != nil || math.IsNaN(x) || x < 0 || x > 1e9 || (x > 0 && x < minRate) {
		return fmt.Errorf("rate %q: want submissions per second from %g to 1e9, such as 5000 or 20k, or 0 for as fast as possible", v, minRate)
	}
	r.v = x
	return nil
}

// minRate is the lowest positive -rate: one submission in 1000 s. The
// pacer's schedule of nanoseconds holds a run at any rate from it up.
const minRate = 1e-3

// rateText formats a -rate for a reader: as count does, and with up to
// three significant digits below 100 submissions/s where it has a
// fraction, so that 0.25 reads as 0.25 and not 0.
func rateText(r float64) string {
	if r < 100 && r != math.Trunc(r) {
		return strconv.FormatFloat(r, 'g', 3, 64)
	}
	return count(r)
}
