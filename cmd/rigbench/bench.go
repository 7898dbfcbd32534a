package main

import (
	"context"
	"errors"
	"fmt"
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
	mallocs     uint64
	allocBytes  uint64
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
	m.mallocs += o.mallocs
	m.allocBytes += o.allocBytes
}

// live is what the progress line reads while a run goes on.
type live struct {
	done  atomic.Int64
	start atomic.Int64 // unix nanoseconds of the first round's start
}

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

// laneState is a lane's part of a run, shared with the watchdog.
type laneState struct {
	since  atomic.Int64 // mono when the waiter began its wait, 0 if none
	cancel context.CancelCauseFunc
}

// bench runs the lanes: a submitter and a waiter goroutine for each. The
// submitter submits at the configured rate or as fast as the lane's
// -depth window allows; the waiter waits for each submission in order and
// records its latency, from the intended send time in open loop and from
// the call of submit otherwise. Submitting stops when ctx ends (-duration,
// Ctrl-C), after -n submissions, or at the first error; the waiters then
// wait for what is in flight, each wait bounded by -timeout, and bench
// answers what was measured.
func bench[T any](ctx context.Context, cfg *config, lanes []lane[T], lv *live) *measure {
	m := &measure{lat: newLatency()}
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
	go watchdog(states, cfg.Timeout, watchStop, watchDone)

	var issued atomic.Int64
	var done, moved atomic.Int64
	interval := 0.0
	if cfg.Rate > 0 {
		interval = float64(len(lanes)) / cfg.Rate * 1e9
	}

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := mono()
	lv.start.CompareAndSwap(0, time.Now().UnixNano())
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, stopRun)
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for i, l := range lanes {
		items := make(chan flight[T], cfg.Depth)
		window := make(chan struct{}, cfg.Depth)
		wg.Add(2)
		go func() { // the submitter
			defer wg.Done()
			defer close(items)
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			offset := interval * float64(i) / float64(len(lanes))
			for k := 0; ; k++ {
				if runCtx.Err() != nil {
					return
				}
				if cfg.N > 0 && issued.Add(1) > cfg.N {
					return
				}
				var intended int64
				if interval > 0 {
					intended = start + int64(offset+interval*float64(k))
					if !sleepUntil(runCtx, timer, intended) {
						return
					}
				}
				select {
				case window <- struct{}{}:
				case <-runCtx.Done():
					return
				}
				if interval == 0 {
					intended = mono()
				}
				t, b, err := l.submit(runCtx)
				if err != nil {
					<-window
					if runCtx.Err() != nil && errors.Is(err, runCtx.Err()) {
						return
					}
					fail(fmt.Errorf("submit on %s: %w", l.device, err))
					return
				}
				items <- flight[T]{t: t, intended: intended, bytes: b}
			}
		}()
		go func() { // the waiter
			defer wg.Done()
			st, wctx := states[i], waitCtxs[i]
			for f := range items {
				st.since.Store(mono())
				err := l.wait(wctx, f.t)
				now := mono()
				st.since.Store(0)
				<-window
				if err != nil {
					if errors.Is(context.Cause(wctx), errTimeout) {
						err = fmt.Errorf("%w after %v", errTimeout, cfg.Timeout)
						if l.state != nil {
							err = fmt.Errorf("%w (%s)", err, l.state(f.t))
						}
					}
					fail(fmt.Errorf("wait on %s: %w", l.device, err))
					continue
				}
				m.lat.record(i, now-f.intended)
				done.Add(1)
				moved.Add(f.bytes)
				lv.done.Add(1)
			}
		}()
	}
	wg.Wait()
	end := mono()
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

// sleepUntil sleeps until mono reads at, or ctx ends (false). It sleeps on
// the timer down to the last 50 µs, which it spends yielding, since timers
// wake late by tens of microseconds.
func sleepUntil(ctx context.Context, timer *time.Timer, at int64) bool {
	for {
		left := at - mono()
		if left <= 0 {
			return true
		}
		if left > 50_000 {
			timer.Reset(time.Duration(left - 50_000))
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return false
			}
			continue
		}
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
}

// watchdog cancels the wait of each lane that has waited longer than
// timeout, with errTimeout as the cause, until stop is closed. It bounds
// waits without making a context for each.
func watchdog(states []*laneState, timeout time.Duration, stop <-chan struct{}, done chan<- struct{}) {
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
				if s := st.since.Load(); s != 0 && now-s > int64(timeout) {
					st.cancel(errTimeout)
				}
			}
		}
	}
}
