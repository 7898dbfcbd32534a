package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// measure is what one run measured.
type measure struct {
	elapsed     time.Duration
	done        int64 // submissions whose point was reached
	bytes       int64
	errors      int64
	firstErr    error
	interrupted bool // the run's context ended before the run did
	lat         *latency
	// late is the load generator's own lateness in open loop: from an
	// arrival's intended send time to when its submitter took it up.
	late       *latency
	mallocs    uint64
	allocBytes uint64
	// cpu is the process's CPU time (user + system) over the run.
	cpu time.Duration
	// runnable is the looks at the goroutines waiting for a processor.
	runnable *runnableCounts
}

// newMeasure is a measure of nothing yet, that measures of runs add to.
func newMeasure() *measure { return newMeasureFor(1, false) }

// newMeasureFor is a measure of nothing yet for a run of lanes lanes,
// each recording its latencies into a shard of its own, and its lateness
// too where the run is an open loop.
func newMeasureFor(lanes int, open bool) *measure {
	late := newLatencyFor(1)
	if open {
		late = newLatencyFor(lanes)
	}
	return &measure{lat: newLatencyFor(lanes), late: late, runnable: &runnableCounts{}}
}

// add adds o's figures to m's: m then measures both runs, one after the
// other.
func (m *measure) add(o *measure) {
	m.elapsed += o.elapsed
	m.done += o.done
	m.bytes += o.bytes
	m.errors += o.errors
	if m.firstErr == nil {
		m.firstErr = o.firstErr
	}
	m.interrupted = m.interrupted || o.interrupted
	m.lat.absorb(o.lat)
	m.late.absorb(o.late)
	m.mallocs += o.mallocs
	m.allocBytes += o.allocBytes
	m.cpu += o.cpu
	m.runnable.absorb(o.runnable)
}

// live is what the progress line reads while a run goes on.
type live struct {
	done  atomic.Int64
	start atomic.Int64 // unix nanoseconds of the first round's start
}

// noneDue marks a lane of an open loop that took no arrival.
const noneDue = math.MinInt64

// errTimeout is the cause of a wait that the watchdog ended.
var errTimeout = errors.New("wait timed out")

// flight is a submission in flight: its ticket, when it was meant to be
// sent, and its bytes.
type flight[T any] struct {
	t        T
	intended int64 // nanoseconds on the monotonic clock (mono)
	bytes    int64
}

// epoch anchors mono.
var epoch = time.Now()

// mono is the monotonic clock in nanoseconds.
func mono() int64 { return int64(time.Since(epoch)) }

// laneState is a lane's part of a run, shared with the watchdog. The
// lane's waiter stores since twice a submission: the padding keeps it off
// the cache lines of the other lanes' states.
type laneState struct {
	_     [64]byte
	since atomic.Int64 // mono when the waiter began its wait, 0 if none
	// mu guards cancel, which ends the lane's wait context: the watchdog
	// calls it, and the lane's waiter replaces it with renew.
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	_      [64]byte
}

// tally holds a lane's latencies and counts that the run's histograms and
// counters have not taken yet. The goroutine that finishes the lane's
// submissions owns it, and adds them (flush) every tallyBatch submissions,
// at least every tallyEvery, and as the lane ends, into shards of the
// histograms that are the lane's own up to maxShards lanes: the lanes then
// touch the counters that every lane shares once a batch, not once a
// submission, and no lane waits for another's lock. The load generator so
// keeps its cost out of the run it measures: in a CPU profile on the H200
// (four nvdev timelines of 16 goroutines, 3 s), recording each submission
// into histograms whose shards four lanes shared, and into the shared
// counters, took 3.1 s of the process's 46.8 s of CPU (6.6%); batched
// into the same shards, 0.3 s. In four rounds interleaved, the
// submissions' p99 was 112 to 130 µs with lanes of their own shards, 132
// to 154 µs as before.
type tally struct {
	lat   [tallyBatch]int64
	n     int
	bytes int64
	last  int64 // mono at the last flush
}

const (
	tallyBatch = 32
	tallyEvery = int64(50 * time.Millisecond)
)

// renew returns a new wait context for the lane, whose last one the
// watchdog ended. Only the lane's waiter calls it.
func (st *laneState) renew() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	st.mu.Lock()
	st.cancel = cancel
	st.mu.Unlock()
	return ctx
}

// expired returns a wait context for the lane that has already timed
// out, for the waits that begin after the drain's bound. Only the lane's
// waiter calls it.
func (st *laneState) expired() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errTimeout)
	st.mu.Lock()
	st.cancel = cancel
	st.mu.Unlock()
	return ctx
}

// timeOut ends the lane's wait that began at s (mono) with errTimeout,
// unless that wait ended since.
func (st *laneState) timeOut(s int64) {
	st.mu.Lock()
	if st.since.Load() == s {
		st.cancel(errTimeout)
	}
	st.mu.Unlock()
}

// bench runs the lanes: a submitter and a waiter goroutine for each, or
// at depth 1 one goroutine that submits and waits in turn (the load of a
// server's request goroutines), in closed and in open loop. The
// submitter submits as fast as the lane's -depth window allows, or, with
// -rate, at the arrivals a pacer releases to it; the waiter waits for each submission in order and
// records its latency, from the intended send time in open loop and from
// the call of submit otherwise. Submitting stops when ctx ends (-duration,
// Ctrl-C), after -n submissions, or at the first error; the waiters then
// wait for what is in flight, each wait bounded by -timeout and all of
// them by -timeout from when submitting stopped, and bench returns what
// was measured, with the process's CPU time over the run.
func bench[T any](ctx context.Context, cfg *config, lanes []lane[T], lv *live) *measure {
	m := newMeasureFor(len(lanes), cfg.Rate > 0)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()

	var mu sync.Mutex // guards m's error fields
	fail := func(err error) {
		mu.Lock()
		m.errors++
		if m.firstErr == nil {
			m.firstErr = err
		}
		mu.Unlock()
		stopRun()
	}

	states := make([]*laneState, len(lanes))
	waitCtxs := make([]context.Context, len(lanes))
	for i := range lanes {
		st := &laneState{}
		waitCtxs[i], st.cancel = context.WithCancelCause(context.Background())
		states[i] = st
	}
	watchDone := make(chan struct{})
	watchStop := make(chan struct{})
	// Once submitting stops, the waits still in flight share one bound,
	// -timeout from then: a device whose work never ends would otherwise
	// hold the report for -depth bounds, one after another.
	var drainBy atomic.Int64
	drain := func() {
		// At most the last mono time: a -timeout near the largest
		// duration would otherwise wrap the bound to the past.
		now := mono()
		drainBy.CompareAndSwap(0, now+min(int64(cfg.Timeout), math.MaxInt64-now))
	}
	go func() {
		select {
		case <-runCtx.Done():
			drain()
		case <-watchStop:
		}
	}()
	var submitters atomic.Int64 // the lanes' submitters still submitting, at depth > 1
	if cfg.Depth > 1 {
		submitters.Store(int64(len(lanes)))
	}
	go watchdog(states, cfg.Timeout, &drainBy, watchStop, watchDone)

	var done, moved atomic.Int64

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	stopLooks := make(chan struct{})
	looks := runnableLooks(stopLooks)
	start := mono()
	var pace *pacer
	// lastDue is when each lane's last arrival was due, in open loop, or
	// noneDue where the lane took none: the run spans their slots.
	var lastDue []int64
	if cfg.Rate > 0 {
		pace = newPacer(start, cfg.Rate, len(lanes))
		lastDue = make([]int64, len(lanes))
		for i := range lastDue {
			lastDue[i] = noneDue
		}
		pace.resume(int64(cfg.paceFrom))
		if cfg.Duration > 0 && int64(cfg.Duration) <= math.MaxInt64-start {
			// The run asks for the arrivals before its end: R×D of
			// them, and not one more due as the timer ends it.
			pace.end = start + int64(cfg.Duration)
		}
		paceCtx, stopPace := context.WithCancel(runCtx)
		defer stopPace()
		go pace.run(paceCtx)
	}
	// issued counts the submissions the lanes took of -n in closed loop.
	// An open loop's -n is its arrivals 0 to N-1, each its own lane's
	// (pacer): a lane takes its k-th arrival only where that is one of
	// them. A shared count would hand the N to whichever lanes came first,
	// whose arrivals may lie far past N-1 where -n is below -c (or a lane
	// runs ahead of the others at -depth 1), so that N arrivals at R a
	// second spanned up to -c periods and read as a fraction of R.
	var issued atomic.Int64
	take := func(lane int, k int64) bool {
		switch {
		case cfg.N == 0:
			return true
		case pace != nil:
			// Arrival k*lanes+lane below N, in a division that does not
			// overflow.
			return int64(lane) < cfg.N && k <= (cfg.N-1-int64(lane))/int64(len(lanes))
		}
		return issued.Add(1) <= cfg.N
	}
	lv.start.CompareAndSwap(0, time.Now().UnixNano())
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, stopRun)
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for i, l := range lanes {
		st, wctx := states[i], waitCtxs[i]
		name := l.name() // once: the load generator allocates nothing a submission
		tl := &tally{last: mono()}
		// flush adds the lane's tally to the run's figures.
		flush := func() {
			if tl.n == 0 {
				return
			}
			lats := tl.lat[:tl.n]
			m.lat.recordBatch(i, lats)
			if l.observe != nil {
				l.observe(lats)
			}
			done.Add(int64(tl.n))
			moved.Add(tl.bytes)
			lv.done.Add(int64(tl.n))
			tl.n, tl.bytes = 0, 0
		}
		// waitCtx is the context of the lane's next wait.
		waitCtx := func() context.Context {
			if dl := drainBy.Load(); dl != 0 && mono() > dl {
				// The drain's bound passed: a point not reached by now
				// is a wait that timed out.
				wctx = st.expired()
			} else if wctx.Err() != nil {
				// The watchdog ended the lane's last wait (or ended it
				// as it returned): this one has a bound of its own.
				wctx = st.renew()
			}
			return wctx
		}
		// finished records f, whose wait returned err.
		finished := func(f flight[T], err error) {
			now := mono()
			st.since.Store(0)
			if err != nil {
				if errors.Is(context.Cause(wctx), errTimeout) {
					err = fmt.Errorf("%w after %v", errTimeout, cfg.Timeout)
					if l.state != nil {
						err = fmt.Errorf("%w (%s)", err, l.state(f.t))
					}
				}
				fail(fmt.Errorf("wait on %s: %w", name, err))
				return
			}
			if slowTraces != nil {
				slowTraces.see(name, f.intended, now)
			}
			tl.lat[tl.n] = now - f.intended
			tl.n++
			tl.bytes += f.bytes
			if tl.n == tallyBatch || now-tl.last >= tallyEvery {
				flush()
				tl.last = now
			}
		}
		// finish waits for f and records it.
		finish := func(f flight[T]) {
			ctx := waitCtx()
			st.since.Store(mono())
			err := l.wait(ctx, f.t)
			finished(f, err)
		}
		if cfg.Depth == 1 {
			// Depth 1: the lane's one goroutine submits and waits in
			// turn, as a request's goroutine would, by one call of
			// Run.Do where the lane has it and -split is not set; in
			// open loop it first takes its next arrival from the pacer.
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer flush()
				for k := int64(0); runCtx.Err() == nil && take(i, k); k++ {
					intended := mono()
					if pace != nil {
						var ok bool
						if intended, ok = pace.wait(runCtx, i, k); !ok {
							return
						}
						lastDue[i] = intended
						m.late.record(i, mono()-intended)
					}
					if l.do != nil && !cfg.Split {
						// One call submits and waits (Run.Do), under
						// the wait's bound.
						ctx := waitCtx()
						st.since.Store(mono())
						t, b, submitted, err := l.do(ctx)
						if !submitted {
							st.since.Store(0)
							if errors.Is(context.Cause(ctx), errTimeout) {
								err = fmt.Errorf("%w after %v", errTimeout, cfg.Timeout)
							}
							fail(fmt.Errorf("submit on %s: %w", name, err))
							return
						}
						finished(flight[T]{t: t, intended: intended, bytes: b}, err)
						continue
					}
					t, b, err := l.submit(runCtx)
					if err != nil {
						if runCtx.Err() == nil || !errors.Is(err, runCtx.Err()) {
							fail(fmt.Errorf("submit on %s: %w", name, err))
						}
						return
					}
					finish(flight[T]{t: t, intended: intended, bytes: b})
				}
			}()
			continue
		}
		items := make(chan flight[T], cfg.Depth)
		window := make(chan struct{}, cfg.Depth)
		wg.Add(2)
		go func() { // the submitter
			defer wg.Done()
			defer close(items)
			defer func() {
				if submitters.Add(-1) == 0 {
					drain() // -n reached
				}
			}()
			for k := int64(0); ; k++ {
				if runCtx.Err() != nil {
					return
				}
				if !take(i, k) {
					return
				}
				var intended int64
				if pace != nil {
					var ok bool
					if intended, ok = pace.wait(runCtx, i, k); !ok {
						return
					}
					lastDue[i] = intended
					m.late.record(i, mono()-intended)
				}
				select {
				case window <- struct{}{}:
				case <-runCtx.Done():
					return
				}
				if pace == nil {
					intended = mono()
				}
				t, b, err := l.submit(runCtx)
				if err != nil {
					<-window
					if runCtx.Err() != nil && errors.Is(err, runCtx.Err()) {
						return
					}
					fail(fmt.Errorf("submit on %s: %w", name, err))
					return
				}
				items <- flight[T]{t: t, intended: intended, bytes: b}
			}
		}()
		go func() { // the waiter
			defer wg.Done()
			defer flush()
			for f := range items {
				finish(f)
				<-window
			}
		}()
	}
	wg.Wait()
	end := mono()
	if pace != nil && runCtx.Err() == nil {
		// An open loop that ran out of -n (a round of -compare too)
		// spans the slot of each arrival it took, a period from when it
		// was due, the last one's too, and not past -duration's end, as
		// a run that -duration ends does: it would otherwise end with
		// its last arrival's latency, and N arrivals at R a second read
		// as N over (N-1)/R seconds and that latency. A run that an
		// error or Ctrl-C stopped ends there. It waits for that end, so
		// that the run's time is time that passed, and ends exactly
		// there, not when the timer woke, which may be milliseconds
		// later on a busy machine. Ctrl-C ends the wait, and the run
		// then ends when it came: a slot lasts up to 1000 s at the
		// lowest -rate.
		slots := end
		for _, due := range lastDue {
			if due != noneDue {
				slot := due + int64(math.Ceil(pace.period))
				if pace.end != 0 {
					slot = min(slot, pace.end)
				}
				slots = max(slots, slot)
			}
		}
		if slots > end {
			t := time.NewTimer(time.Duration(slots - end))
			select {
			case <-t.C:
				end = slots
			case <-ctx.Done():
				t.Stop()
				end = min(mono(), slots)
			}
		}
	}
	m.cpu = cpuTime() - cpu0
	close(stopLooks)
	m.runnable = <-looks
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	close(watchStop)
	<-watchDone
	for _, st := range states {
		st.cancel(nil)
	}

	m.elapsed = time.Duration(end - start)
	m.done, m.bytes = done.Load(), moved.Load()
	m.interrupted = ctx.Err() != nil
	m.mallocs = after.Mallocs - before.Mallocs
	m.allocBytes = after.TotalAlloc - before.TotalAlloc
	return m
}

// watchdog cancels the wait of each lane that has waited longer than
// timeout, with errTimeout as the cause, until stop is closed. It bounds
// waits without making a context for each: a lane makes a new one only
// for the wait after one that the watchdog ended.
func watchdog(states []*laneState, timeout time.Duration, drainBy *atomic.Int64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(min(max(timeout/8, time.Millisecond), 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			now := mono()
			for _, st := range states {
				if s := st.since.Load(); s != 0 && (now-s > int64(timeout) || (drainBy.Load() != 0 && now > drainBy.Load())) {
					st.timeOut(s)
				}
			}
		}
	}
}
