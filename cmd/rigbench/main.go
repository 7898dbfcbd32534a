// Command rigbench load-tests rig's devices: it submits a workload from
// goroutines, as fast as possible or at a target rate, and reports
// submissions/s, bytes/s, the latency from submit to reached point at p50,
// p90, p99, p99.9 and max, the allocations per submission, the process's
// CPU time (user + system, from getrusage over the measured interval) per
// submission and per second, so that spinning shows, the machine's GPU
// interrupts over the run where /proc/interrupts lists them (a flood of
// them holds the processor that serves them), how the waits ended, and
// the device's facts. A -compare run whose baseline ran between rig's
// rounds reports neither the waits nor the interrupts: the baseline's
// rounds may reopen rig's devices, whose counters then start again, and
// the machine's interrupts count the baseline's too.
//
//	go run ./cmd/rigbench                      # the default device, 3 s of empty launches
//	go run ./cmd/rigbench -workload d2d -size 64MiB -c 4 -duration 10s
//	go run ./cmd/rigbench -rate 20k -plot lat.svg -trace trace.json -json
//	go run ./cmd/rigbench -device host -device host:1 -workload mixed -compare
//	go run ./cmd/rigbench -device cuda:0 -workload d2d -compare    # rig over cudadev alone
//	go run ./cmd/rigbench -device host -c 10,100,1000,10000 -depth 1 -duration 2s
//	go run ./cmd/rigbench -device nv:0 -timelines 4 -c 16          # 4 timelines of GPU 0, 16 submitters each
//
// -c takes a count of submitting goroutines, or a list of them: the run
// measures each level in turn on the same devices, and prints a line for
// each (JSON: {"schema", "levels": [a report per level]}). A level makes at
// most 100,000 submitters over all the devices the run opens, and keeps at
// most 4,194,304 submissions in flight (-c × -depth × devices).
//
// -device names the devices: host (host:N for more host devices), cuda:N
// (cudadev, through libcuda) and nv:N (nvdev, through NVIDIA's kernel
// driver). The default device is the first GPU that opens, through cudadev
// and then nvdev, and the host driver's otherwise, with a note of why no
// GPU opened. -timelines K opens beside each device its timelines 1 to
// K-1 (nv:0/1 …), devices of their own on the same GPU, runs the workload
// on each with -c submitters, and reports each device's figures beside
// the aggregate.
//
// With -rate the run is open loop: each submission has an intended send
// time, and its latency counts from that time, so that a stall of the
// device shows in the latency of every submission it delayed, rather than
// hiding behind a submitter that waited (coordinated omission). One pacer
// goroutine keeps every submitter's schedule by absolute deadlines: it
// sleeps in the kernel until 50 µs before the next arrival (Go's timers
// wake up to a millisecond late where the process has nothing else to
// run), yields for the rest, and releases together every arrival due by
// then; the report states its lateness, from intended send time to when
// the submitter took the arrival up. A run that -n ends lasts until the
// slot of its last arrival ends, 1/R after it was due, or its last
// submission's point is reached, whichever is later, so that N arrivals
// at R a second read as R a second. Without -rate each submitter keeps
// -depth submissions in flight, and latency counts from the call of
// Submit.
//
// -compare runs the same workload through a baseline in the same process,
// and prints rig's figures over the baseline's. The baseline of the GPU
// drivers (and of the host driver with -baseline driver) is the driver
// alone: the device's driver, opened with a timeline word of its own; each
// submitter builds the device.Submission of its workload's item once and
// hands it, with each new value, to Room and Submit (and Commit where a
// wait needs a pending value) under the device's mutex, and a wait spins
// on the word, with no supervisor, hazards or pools: the ratio is rig's
// own cost on that driver. The host driver's default baseline is
// a bare goroutine pipeline (-baseline pipeline; -baseline driver picks
// the driver alone there). The mixed workload has no baseline of the
// driver alone. The two run in -rounds alternating rounds, each a share of
// -duration or -n, so that the machine's other load weighs on both alike.
// Where the driver opens one device of a GPU at a time (cudadev), rig's
// devices close before each of the baseline's rounds and open again after
// it, and -trace leaves out the baseline.
//
// rigbench exits with 2 on a bad flag (two of the output flags naming one
// file among them), a device that does not open (rig's, or with -compare
// the baseline's where it opens before the run), or an output file
// (-cpuprofile, -memprofile, -gotrace, -slowtrace, -plot, -trace) that
// cannot be created, before the run; 1 where the run met errors (rig's,
// or with -compare the baseline's, a round of it that did not start or
// end among them, and no ratio then compares the two), where a baseline
// that exists did not set up before the run, or where an output file
// could not be written in full, its write or its close failing (the
// message names the flag and the file); and 0 otherwise, a -compare whose
// workload or devices have no baseline included (the report says why).
// Ctrl-C (SIGINT) or SIGTERM stops the run, which still reports what it
// measured; a second one ends the process at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/rig-go/rig/profile"
	rig "github.com/rig-go/rig/runtime"
)

func main() {
	ctx, _ := signalContext()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// stopSignals are the signals that stop a run, which then reports what
// it measured: Ctrl-C's, and SIGTERM, which timeout(1), kill and service
// managers send to stop a command.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// signalContext returns a context that ends at the first of stopSignals,
// after which the signals are the system's again: a second one ends the
// process at once. Its cancel function ends it and gives the signals
// back.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// run is rigbench with its command line, its output and its context, whose
// end stops the run as Ctrl-C does. It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "rigbench: %v\n(rigbench -h lists the flags)\n", err)
		return 2
	}
	// The files written at the run's end, and -slowtrace's, written at
	// the first slow submission, are created now, so that a path that
	// cannot be written fails before the run rather than after. A file
	// that this check made and that is still empty when rigbench returns
	// (it ended before the run, or before the level that writes the file,
	// or no submission was slow) is removed, so that no empty SVG or trace
	// stands where the run wrote none; a file that was there is left as it
	// was until the run writes it.
	var made []string
	defer func() {
		for _, name := range made {
			if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
				_ = os.Remove(name)
			}
		}
	}()
	for _, o := range []struct{ flag, name string }{{"-plot", cfg.Plot}, {"-trace", cfg.Trace}, {"-slowtrace", cfg.SlowTrace}} {
		if o.name == "" {
			continue
		}
		f, err := os.OpenFile(o.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			made = append(made, o.name)
		} else if errors.Is(err, fs.ErrExist) {
			f, err = os.OpenFile(o.name, os.O_WRONLY, 0)
		}
		if err != nil {
			fmt.Fprintf(stderr, "rigbench: %s: %v\n", o.flag, err)
			return 2
		}
		f.Close()
	}
	for _, rec := range []struct {
		file  string
		start func(string) (func() error, error)
	}{{cfg.CPUProfile, startCPUProfile}, {cfg.MemProfile, startMemProfile}, {cfg.GoTrace, startGoTrace}} {
		if rec.file == "" {
			continue
		}
		stop, err := rec.start(rec.file)
		if err != nil {
			fmt.Fprintf(stderr, "rigbench: %v\n", err)
			return 2
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(stderr, "rigbench: %v\n", err)
				code = max(code, 1)
			}
		}()
	}
	if cfg.SlowTrace != "" {
		st, err := startSlowTrace(cfg.SlowTrace, cfg.Slow, !slices.Contains(made, cfg.SlowTrace))
		if err != nil {
			fmt.Fprintf(stderr, "rigbench: %v\n", err)
			return 2
		}
		slowTraces = st
		defer func() {
			slowTraces = nil
			line, err := st.stop()
			if err != nil {
				fmt.Fprintf(stderr, "rigbench: %v\n", err)
				code = max(code, 1)
				return
			}
			fmt.Fprintln(stderr, line)
		}()
	}
	sharedGroups = cfg.Timelines > 1
	devs, notes, err := openDevices(context.Background(), cfg.Devices)
	if err == nil {
		// On error openTimelines closes the timelines it opened, and
		// the devices it was given stay to be closed here.
		all, terr := openTimelines(context.Background(), devs, cfg.Timelines)
		if terr != nil {
			closeDevices(devs)
		}
		devs, err = all, terr
	}
	if err != nil {
		fmt.Fprintf(stderr, "rigbench: %v\n", err)
		return 2
	}
	wl := workloads[cfg.Workload]
	e := &env{cfg: cfg, devs: devs, size: cfg.Size}
	// The devices open now; an exclusive baseline's rounds close them and
	// open them again.
	defer func() { closeDevices(e.devs) }()
	if err := mixedDrivers(cfg.Workload, devs); err != nil {
		fmt.Fprintf(stderr, "rigbench: %v\n", err)
		return 2
	}
	if cfg.Workload == "mixed" && len(devs) == 1 {
		c, err := companion(context.Background(), devs)
		if err != nil {
			notes = append(notes, fmt.Sprintf("mixed runs on one device, with no waits across devices: no second device opened (%v)", err))
		} else {
			e.devs = append(e.devs, c)
			notes = append(notes, fmt.Sprintf("mixed opened %s beside %s for its waits across devices", c.spec, devs[0].spec))
		}
	}

	if e.size == 0 {
		e.size = wl.size
	}
	var reps []*Report
	for _, c := range cfg.Levels {
		cfg.C = c
		rep, lc := runLevel(ctx, cfg, e, notes, stderr)
		code = max(code, lc)
		if rep == nil {
			// A level that could not start ends the run; the levels
			// before it are reported.
			if len(reps) == 0 {
				return lc
			}
			break
		}
		reps = append(reps, rep)
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case cfg.JSON && len(cfg.Levels) == 1:
		err = reps[0].writeJSON(stdout)
	case cfg.JSON:
		err = writeLevelsJSON(stdout, reps)
	case len(cfg.Levels) == 1:
		err = reps[0].writeText(stdout)
	default:
		err = writeLevelsText(stdout, reps)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rigbench: writing the report: %v\n", err)
		code = 1
	}
	return code
}

// runLevel runs the workload at the level cfg.C on e's devices and returns
// its report and exit code; a nil report where the run could not start,
// having said why on stderr.
func runLevel(ctx context.Context, cfg *config, e *env, notes []string, stderr io.Writer) (*Report, int) {
	wl := workloads[cfg.Workload]
	var err error
	rep := &Report{Schema: schema, Workload: cfg.Workload, What: wl.what, Notes: append([]string(nil), notes...),
		Config: ConfigReport{Submitters: cfg.C, Depth: cfg.Depth, Split: cfg.Split, Rate: cfg.Rate, DurationNs: int64(cfg.Duration),
			N: cfg.N, TimeoutNs: int64(cfg.Timeout), GOMAXPROCS: runtime.GOMAXPROCS(0)}}
	if wl.sized {
		rep.Config.Size = e.size
		rep.What = wl.whatOf(e.size)
	}
	rigDevs := make([]*rig.Device, len(e.devs))
	for i, o := range e.devs {
		rep.Devices = append(rep.Devices, facts(o.spec, o.dev))
		rigDevs[i] = o.dev
	}
	lanes, err := wl.lanes(e)
	if err != nil {
		fmt.Fprintf(stderr, "rigbench: %v\n", err)
		return nil, 1
	}
	per := newPerDevice()
	lanes = per.wrap(lanes)
	rs := &rigSide{
		lanes: lanes,
		close: func() error { return closeDevicesWithin(e.devs, cfg.Timeout) },
		reopen: func() ([]lane[rig.Point], error) {
			// A GPU that the baseline's device just left may take a
			// moment to free.
			retry := min(cfg.Timeout, 5*time.Second)
			for i := range e.devs {
				o := &e.devs[i]
				if err := retryOpen(retry, func() error {
					d, err := openSpec(context.Background(), o.spec)
					if err == nil {
						o.dev = d
					}
					return err
				}); err != nil {
					return nil, err
				}
			}
			e.funcs = nil
			ls, err := wl.lanes(e)
			return per.wrap(ls), err
		},
	}

	code := 0
	var base *baseline
	if cfg.Compare {
		base, err = newBaseline(e)
		var be *baselineError
		switch {
		case errors.As(err, &be):
			// A baseline that did not open ends the run before it, as
			// rig's devices and lanes do: 2 where a device is not
			// available, 1 otherwise.
			fmt.Fprintf(stderr, "rigbench: -compare: %v\n", err)
			var ue *unavailableError
			if errors.As(err, &ue) {
				return nil, 2
			}
			return nil, 1
		case err != nil:
			rep.BaselineNote = err.Error()
		default:
			defer base.stop()
		}
	}
	var prof *profile.Profile
	if cfg.Trace != "" {
		if prof, err = profile.Start(rigDevs...); err != nil {
			fmt.Fprintf(stderr, "rigbench: %v\n", err)
			return nil, 1
		}
	}
	before := statsOf(rigDevs)
	irqs0, _ := gpuInterrupts()
	rr := runRounds(ctx, cfg, rs, base, stderr)
	irqs1, _ := gpuInterrupts()
	m, bm := rr.m, rr.bm
	rep.Rig = result("rig", m)
	if bm == nil {
		// A baseline's rounds reopen the devices, whose counters then
		// start again, and the machine's interrupts count theirs too.
		rep.Rig.Waits = waitsBetween(before, statsOf(rigDevs))
		rep.Rig.Interrupts = interruptsBetween(irqs0, irqs1, m.elapsed.Seconds())
	}
	rep.PerDevice = per.results(m)
	if m.errors > 0 {
		code = 1
	}
	if prof != nil {
		if bm != nil {
			rep.Notes = append(rep.Notes, "the profile spans the baseline's run too, in which the devices were idle")
		}
		if err := finishTrace(prof, cfg, rep); err != nil {
			fmt.Fprintf(stderr, "rigbench: %v\n", err)
			code = 1
		}
	}
	switch {
	case base != nil && bm == nil && m.errors > 0:
		rep.BaselineNote = "rig's run met errors before the baseline ran"
	case base != nil && bm == nil:
		rep.BaselineNote = "interrupted before the baseline ran"
	case bm != nil:
		r := result(base.name, bm)
		rep.Baseline = &r
		if bm.errors > 0 {
			code = 1
		}
		rep.BaselineNote = rr.note()
		// A side whose run met errors measured a run that failed, which
		// no ratio compares.
		if failed := failedSides(m, bm); failed != "" {
			if rep.BaselineNote != "" {
				rep.BaselineNote += "; "
			}
			rep.BaselineNote += "no ratio: " + failed + " met errors"
		} else {
			rep.Ratio = ratio(rep.Rig, r)
		}
		if base.exclusive {
			if rep.BaselineNote != "" {
				rep.BaselineNote += "; "
			}
			rep.BaselineNote += "rig's devices closed before each of the baseline's rounds and opened again after, since the driver opens one device of a GPU at a time"
		}
	}

	if cfg.Plot != "" {
		ss := []series{{name: "rig", h: m.lat.merged()}}
		if bm != nil {
			ss = append(ss, series{name: rep.Baseline.Name, h: bm.lat.merged()})
		}
		if err := writeFile("-plot", cfg.Plot, func(w io.Writer) error {
			return writePlot(w, fmt.Sprintf("rigbench %s on %s", cfg.Workload, deviceList(e.devs)), ss)
		}); err != nil {
			fmt.Fprintf(stderr, "rigbench: %v\n", err)
			code = 1
		} else {
			rep.Plot = cfg.Plot
		}
	}

	return rep, code
}

// finishTrace stops the profile, exports it to -trace and adds its summary
// to the report.
func finishTrace(prof *profile.Profile, cfg *config, rep *Report) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	stopErr := prof.Stop(ctx)
	s := prof.Summary()
	rep.Profile = &s
	for _, d := range s.Devices {
		if d.Count == 0 && rep.Rig.Submissions > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the profile holds no value of %s: its driver stamps no timed values (its Settle answers none)", d.Device))
		}
	}
	if err := writeFile("-trace", cfg.Trace, prof.WriteTrace); err != nil {
		return err
	}
	rep.Trace = cfg.Trace
	if stopErr != nil {
		return fmt.Errorf("the profile: %w", stopErr)
	}
	return nil
}

// deviceList names the devices for a title: "host, host:1".
func deviceList(ds []opened) string {
	s := ""
	for i, o := range ds {
		if i > 0 {
			s += ", "
		}
		s += o.spec.String()
	}
	return s
}

// mixedDrivers refuses the mixed workload on two devices of two drivers:
// it copies between the buffers of its two devices, which rig shares only
// between devices of one driver.
func mixedDrivers(workload string, devs []opened) error {
	if workload != "mixed" || len(devs) < 2 || devs[0].spec.Driver == devs[1].spec.Driver {
		return nil
	}
	d := devs[0].spec.Driver
	return fmt.Errorf("the mixed workload copies between the buffers of its two devices, which rig shares only between devices of one driver: %s and %s are not (try -device %s:0,%s:1)",
		devs[0].spec, devs[1].spec, d, d)
}
