package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// baseline is a plain-Go way to do a workload's work, for -compare.
type baseline struct {
	// name says what it is, in the report.
	name string
	// exclusive is true where the baseline's devices cannot be open beside
	// rig's: rig's devices close before each of its rounds, and open again
	// after it.
	exclusive bool
	// start makes the baseline ready for a round and returns its lanes,
	// one for each of rig's; finish ends the round; stop ends the baseline
	// once the run is over.
	start  func() ([]lane[uint64], error)
	finish func() error
	stop   func()
}

// newBaseline makes the baseline of the run's workload that -baseline
// picks, or returns why there is none: on the host driver, a bare
// goroutine pipeline (pipeline, the default) or the driver alone (driver);
// on the GPU drivers, the driver alone. A baseline that there is but that
// does not open returns a *baselineError.
func newBaseline(e *env) (*baseline, error) {
	drv := e.devs[0].spec.Driver
	for _, o := range e.devs {
		if o.spec.Driver != drv {
			return nil, fmt.Errorf("no baseline spans devices of several drivers")
		}
	}
	switch kind := e.cfg.Baseline; {
	case drv == "host" && kind != "driver":
		return hostBaseline(e), nil
	case kind == "pipeline":
		return nil, fmt.Errorf("the goroutine pipeline is the host driver's baseline, and %s is %s's: -baseline driver (the default there) drives it alone", e.devs[0].spec, drivers[drv].what)
	}
	if e.cfg.Trace != "" && drivers[drv] != nil && drivers[drv].exclusive {
		return nil, fmt.Errorf("-trace keeps rig's devices open for its profile, and %s opens one device of a GPU at a time: "+
			"run -compare without -trace for the baseline of the driver alone", drivers[drv].what)
	}
	return rawBaseline(e)
}

// baselineError says that the run's baseline, which exists, did not
// open before the run: rigbench then ends with it, as where rig's own
// devices or lanes do not open, rather than running with a note. Where
// the baseline opens in its first round instead (exclusive drivers), its
// failure is an error of its run (runRounds).
type baselineError struct {
	name string
	err  error
}

func (e *baselineError) Error() string { return fmt.Sprintf("%s did not open: %v", e.name, e.err) }

func (e *baselineError) Unwrap() error { return e.err }

// rigSide is rig's side of the rounds: its lanes on the open devices, and,
// for an exclusive baseline, how to close the devices and open them again
// with fresh lanes.
type rigSide struct {
	lanes  []lane[rig.Point]
	close  func() error
	reopen func() ([]lane[rig.Point], error)
}

// rounds is what the rounds measured: rig's measure and the baseline's,
// nil where the baseline had no round (there is none, rig's first round
// met errors, or the run's context ended first); and the rounds planned
// and those each side ran, fewer than planned where a round met errors or
// the end of the run's context.
type rounds struct {
	m, bm           *measure
	planned         int
	rigRan, baseRan int
}

// failed is a measure of nothing but err, which ended a run.
func failed(err error) *measure {
	m := newMeasure()
	m.errors, m.firstErr = 1, err
	return m
}

// runRounds runs rig's lanes, and the baseline's where base is not nil,
// in cfg.Rounds alternating rounds (one where base is nil), each a share
// of -duration and -n, drawing progress on w. For an exclusive baseline it
// closes rig's devices before each of the baseline's rounds and opens
// them again before rig's next. A round that meets errors or the end of
// ctx ends the rounds. A baseline's round that does not start or end, in
// the first round as in a later one, is an error of the baseline's run,
// as rig's devices that do not open again are of rig's: the run exits 1,
// and its report names the baseline and the error.
func runRounds(ctx context.Context, cfg *config, rs *rigSide, base *baseline, w io.Writer) rounds {
	n := 1
	if base != nil {
		n = cfg.Rounds
		if cfg.N > 0 {
			n = int(min(int64(n), cfg.N))
		}
		if cfg.N == 0 && cfg.Duration == 0 {
			n = 1 // until interrupted: the baseline never runs
		}
	}
	out := rounds{m: newMeasure(), planned: n}
	m := out.m
	lv, blv := &live{}, &live{}
	baseFail := func(err error) {
		if out.bm == nil {
			out.bm = newMeasure()
		}
		out.bm.add(failed(err))
	}
	for i := range n {
		rc := *cfg
		rc.Duration = cfg.Duration / time.Duration(n)
		if cfg.Duration > 0 {
			// A round's share is never 0, which would mean no bound.
			rc.Duration = max(rc.Duration, 1)
			// Each side's rounds share one schedule of -rate's
			// arrivals: R×D in all, not one due at each round's start.
			rc.paceFrom = time.Duration(i) * rc.Duration
		}
		rc.N = cfg.N / int64(n)
		if int64(i) < cfg.N%int64(n) {
			rc.N++
		}
		if i > 0 && base.exclusive {
			lanes, err := rs.reopen()
			if err != nil {
				m.add(failed(fmt.Errorf("opening rig's devices again after the baseline's round: %w", err)))
				break
			}
			rs.lanes = lanes
		}
		pg := startProgress(w, "rig", lv)
		rm := bench(ctx, &rc, rs.lanes, lv)
		pg.end()
		m.add(rm)
		out.rigRan++
		if rm.errors > 0 || ctx.Err() != nil || base == nil {
			break
		}
		if base.exclusive {
			if err := rs.close(); err != nil {
				m.add(failed(fmt.Errorf("closing rig's devices for the baseline's round: %w", err)))
				break
			}
		}
		blanes, err := base.start()
		if err != nil {
			baseFail(fmt.Errorf("starting the baseline's round %d: %w", i+1, err))
			break
		}
		pg = startProgress(w, base.name, blv)
		b := bench(ctx, &rc, blanes, blv)
		pg.end()
		if out.bm == nil {
			out.bm = newMeasure()
		}
		out.bm.add(b)
		out.baseRan++
		if err := base.finish(); err != nil {
			baseFail(fmt.Errorf("ending the baseline's round %d: %w", i+1, err))
			break
		}
		if b.errors > 0 || ctx.Err() != nil {
			break
		}
	}
	return out
}

// The host baseline is a bare goroutine pipeline: a worker goroutine per
// device takes jobs from a channel, in order, does the work a host device
// does for the workload (a launch calls its kernel once per thread, with
// no check of the addresses it touches), and sends each job's number back
// on its lane's channel, which the lane's waiter receives. A job that
// follows its lane's job on the other worker (the mixed workload) waits
// for it first, woken by a channel. Submitting is a channel send; waiting,
// a receive.

// jobKind is what a job does.
type jobKind uint8

const (
	jobEmpty jobKind = iota
	jobTwice
	jobCopy
	jobFill
)

// job is one piece of a lane's work. A lane keeps -depth of them and reuses
// each once the waiter received its completion.
type job struct {
	kind     jobKind
	seq      uint64 // the lane's count of jobs, this one included
	dst, src []byte
	x        []float32
	after    bool // wait until the lane's previous job completed
	ln       *hostLane
	// sleep is the channel that wakes the job's worker while it waits for
	// the lane's previous job, and wake the one the job's completion
	// wakes: the lane's other worker's. Each is waited on by one worker
	// only, so no wake-up is lost or taken by the wrong worker.
	sleep, wake chan struct{}
}

// hostLane is a lane's state in the host baseline.
type hostLane struct {
	done chan uint64   // the worker sends each job's seq here, one per job
	fin  atomic.Uint64 // the seq of the lane's last job completed
	// kick wakes worker A (0) or B (1) of the mixed workload; each holds
	// one wake-up.
	kick [2]chan struct{}
}

// worker is the goroutine of a host device in the baseline.
type worker struct {
	jobs chan *job
}

// emptyKernel is the empty kernel's work, and twiceKernel twice's for one
// thread. They are called through variables, once per thread as hostdev
// calls a kernel, so that the calls are neither inlined nor optimised away.
var (
	emptyKernel = func() {}
	twiceKernel = func(x []float32, i int) { x[i] *= 2 }
)

func (w *worker) run(wg *sync.WaitGroup) {
	defer wg.Done()
	for j := range w.jobs {
		if j.after {
			j.ln.await(j.seq-1, j.sleep)
		}
		switch j.kind {
		case jobEmpty:
			emptyKernel()
		case jobTwice:
			for i := range j.x {
				twiceKernel(j.x, i)
			}
		case jobCopy:
			copy(j.dst, j.src)
		case jobFill:
			for i := range j.dst {
				j.dst[i] = 0x5a
			}
		}
		// Once fin says the job completed, its lane may count it done and
		// reuse its slot: j is not read past this point.
		ln, seq, wake := j.ln, j.seq, j.wake
		ln.fin.Store(seq)
		if wake != nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		ln.done <- seq
	}
}

// await waits until the lane's fin holds at least v, woken by sleep, which
// the completions of the lane's jobs on the other worker send to. A stale
// wake-up costs a look.
func (ln *hostLane) await(v uint64, sleep <-chan struct{}) {
	for ln.fin.Load() < v {
		<-sleep
	}
}

// hostBaseline makes the bare goroutine pipeline of the run's workload.
func hostBaseline(e *env) *baseline {
	var wg sync.WaitGroup
	workers := map[string]*worker{}
	workerOf := func(name string) *worker {
		if w := workers[name]; w != nil {
			return w
		}
		w := &worker{jobs: make(chan *job, 4096)}
		workers[name] = w
		wg.Add(1)
		go w.run(&wg)
		return w
	}
	b := &baseline{name: "baseline (a bare goroutine pipeline)", finish: func() error { return nil }}
	size := e.size
	var lanes []lane[uint64]
	mk := func(device string, plan func(ln *hostLane, j *job, k uint64) *worker) lane[uint64] {
		ln := &hostLane{done: make(chan uint64, e.cfg.Depth)}
		ln.kick[0], ln.kick[1] = make(chan struct{}, 1), make(chan struct{}, 1)
		ring := make([]job, e.cfg.Depth)
		var k, got uint64 // jobs submitted; completions received
		return lane[uint64]{
			device:   device,
			baseline: true,
			// submit looks at ctx first, as rig's Submit does: a
			// select would otherwise send the job on even odds where
			// the worker's channel has room after ctx ended.
			submit: func(ctx context.Context) (uint64, int64, error) {
				if err := ctx.Err(); err != nil {
					return 0, 0, err
				}
				j := &ring[(k+1)%uint64(len(ring))]
				w := plan(ln, j, k+1)
				j.seq, j.ln = k+1, ln
				select {
				case w.jobs <- j:
					k++
				case <-ctx.Done():
					return 0, 0, ctx.Err()
				}
				n := int64(len(j.dst))
				if j.kind == jobTwice {
					n = 0
				}
				return k, n, nil
			},
			// A lane's jobs complete in order, but two workers may send
			// their completions out of order: the seq-th completion
			// received says that jobs 1 to seq completed.
			wait: func(ctx context.Context, seq uint64) error {
				for got < seq {
					select {
					case <-ln.done:
						got++
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				}
				return nil
			},
		}
	}
	switch e.cfg.Workload {
	case "mixed":
		a, bw := workerOf("A"), workerOf("B")
		if len(e.devs) == 1 {
			bw = a
		}
		for range e.cfg.C {
			bufA, bufB := make([]byte, size), make([]byte, size)
			lanes = append(lanes, mk("A+B", func(ln *hostLane, j *job, k uint64) *worker {
				j.dst, j.src, j.x = nil, nil, nil
				j.after = bw != a
				onA := func() *worker { j.sleep, j.wake = ln.kick[0], ln.kick[1]; return a }
				onB := func() *worker { j.sleep, j.wake = ln.kick[1], ln.kick[0]; return bw }
				switch (k - 1) % 4 {
				case 0:
					j.kind, j.dst = jobFill, bufA
					return onA()
				case 1:
					j.kind, j.dst, j.src = jobCopy, bufB, bufA
					return onB()
				case 2:
					j.kind, j.after = jobEmpty, false
					return onB()
				default:
					j.kind, j.dst, j.src = jobCopy, bufA, bufB
					return onA()
				}
			}))
		}
	default:
		for _, o := range e.devs {
			w := workerOf(o.dev.Name())
			for range e.cfg.C {
				var kind jobKind
				var dst, src []byte
				var x []float32
				switch e.cfg.Workload {
				case "empty":
					kind = jobEmpty
				case "twice":
					_, _, values := twiceShape(size / 4)
					kind, x = jobTwice, make([]float32, values)
				case "fill":
					kind, dst = jobFill, make([]byte, size)
				default: // the copies: all memory is the host's
					kind, dst, src = jobCopy, make([]byte, size), make([]byte, size)
				}
				lanes = append(lanes, mk(o.dev.Name(), func(ln *hostLane, j *job, k uint64) *worker {
					j.kind, j.dst, j.src, j.x, j.after, j.sleep, j.wake = kind, dst, src, x, false, nil, nil
					return w
				}))
			}
		}
	}
	b.start = func() ([]lane[uint64], error) { return lanes, nil }
	b.stop = func() {
		for _, w := range workers {
			close(w.jobs)
		}
		wg.Wait()
	}
	return b
}

// failedSides names the sides of a comparison whose run met errors, rig's
// measure m and the baseline's bm: "rig's run", "the baseline's run",
// "rig's run and the baseline's", or "" where neither did.
func failedSides(m, bm *measure) string {
	switch {
	case m.errors > 0 && bm.errors > 0:
		return "rig's run and the baseline's"
	case m.errors > 0:
		return "rig's run"
	case bm.errors > 0:
		return "the baseline's run"
	}
	return ""
}

// note says in how many alternating rounds rig and the baseline ran: ""
// for one; the rounds each side ran of those planned where a round met
// errors or the end of the run's context.
func (r *rounds) note() string {
	switch {
	case r.rigRan == r.planned && r.baseRan == r.planned && r.planned > 1:
		return fmt.Sprintf("rig and the baseline ran in %d alternating rounds", r.planned)
	case r.rigRan < r.planned || r.baseRan < r.planned:
		return fmt.Sprintf("rig ran %d and the baseline %d of %d alternating rounds", r.rigRan, r.baseRan, r.planned)
	}
	return ""
}
