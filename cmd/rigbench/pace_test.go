package main

import (
	"context"
	"testing"
	"time"
)

// fakePacer is a pacer of lanes lanes, one arrival per period ns from 0,
// on a clock that only its sleeps and reads move (a read moves it 10 ns).
// overshoot, where set, says how far a sleep overshoots.
type fakePacer struct {
	p         *pacer
	clock     int64
	sleeps    int
	overshoot func(n int) int64
	bad       []string
	stopAt    int64 // due count at which the sleep stops the run
	stop      context.CancelFunc
}

func newFakePacer(period float64, lanes int, stopAt int64) *fakePacer {
	f := &fakePacer{stopAt: stopAt}
	f.p = newPacer(0, 1e9/period, lanes)
	f.p.now = func() int64 { f.clock += 10; return f.clock }
	f.p.sleep = func(ns int64) {
		f.sleeps++
		j := f.p.due.Load()
		if ns <= 0 || f.clock+ns > f.p.at(j)-paceFine+10 {
			f.bad = append(f.bad, time.Duration(ns).String())
		}
		f.clock += ns
		if f.overshoot != nil {
			f.clock += f.overshoot(f.sleeps)
		}
		if j >= f.stopAt {
			f.stop()
		}
	}
	return f
}

func (f *fakePacer) run() {
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	f.p.run(ctx)
}

// TestPacerSleepsToDeadlines: the pacer sleeps up to paceFine before each
// arrival's absolute deadline, never past it, and releases each arrival
// once its deadline passed, in order.
func TestPacerSleepsToDeadlines(t *testing.T) {
	f := newFakePacer(1e6, 3, 20) // 1 ms apart
	f.run()
	if len(f.bad) > 0 {
		t.Fatalf("sleeps that run past the next deadline's fine stretch: %v", f.bad)
	}
	if f.sleeps < 20 {
		t.Errorf("%d sleeps for 20 arrivals 1 ms apart: the pacer spun instead of sleeping", f.sleeps)
	}
	if got := f.p.due.Load(); got < 20 || got > 21 {
		t.Errorf("released %d arrivals, want 20 or 21", got)
	}
	// Lane 2's arrivals are 2, 5, 8, ...: each released one returns its
	// deadline at once.
	ctx := context.Background()
	for k := int64(0); k < 6; k++ {
		at, ok := f.p.wait(ctx, 2, k)
		if want := int64(3*k+2) * 1e6; !ok || at != want {
			t.Errorf("lane 2's arrival %d: %d, %v; want %d", k, at, ok, want)
		}
	}
}

// TestPacerBatchesLateArrivals: a sleep that overshoots by ten periods
// delays no later deadline: the pacer releases every arrival due by then
// at once, and wakes each of their lanes, whose arrivals keep their own
// deadlines.
func TestPacerBatchesLateArrivals(t *testing.T) {
	f := newFakePacer(1e6, 4, 30)
	f.overshoot = func(n int) int64 {
		if n == 3 {
			return 10e6
		}
		return 0
	}
	f.run()
	if got := f.p.due.Load(); got < 30 {
		t.Fatalf("released %d arrivals, want at least 30", got)
	}
	for lane := range 4 {
		select {
		case <-f.p.wake[lane]:
		default:
			t.Errorf("lane %d was not woken", lane)
		}
	}
	ctx := context.Background()
	for j := int64(0); j < 28; j++ {
		at, ok := f.p.wait(ctx, int(j%4), j/4)
		if !ok || at != j*1e6 {
			t.Errorf("arrival %d: %d, %v; want %d", j, at, ok, j*int64(1e6))
		}
	}
	// 30 arrivals in about 30 ms, one sleep late by 10 ms: fewer sleeps
	// than arrivals, since the late ones went out together.
	if f.sleeps >= 30 {
		t.Errorf("%d sleeps: the late arrivals were not released together", f.sleeps)
	}
}

// TestPacerWaitEnds: a lane's wait for an arrival not yet due ends with
// the run's context.
func TestPacerWaitEnds(t *testing.T) {
	p := newPacer(0, 1000, 2)
	p.due.Store(3)
	if at, ok := p.wait(context.Background(), 0, 1); !ok || at != 2e6 {
		t.Errorf("a due arrival: %d, %v; want %d, true", at, ok, int64(2e6))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := p.wait(ctx, 1, 1); ok {
		t.Error("a wait for an arrival not due returned true after its context ended")
	}
}

// TestPacerEndsAtRunEnd: a run of -duration D at -rate R asks for the
// arrivals before its end, R×D of them: the pacer releases none due at or
// after end, even where a sleep overshoots the end, and returns.
func TestPacerEndsAtRunEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overshoot int64
	}{{"on time", 0}, {"late past the end", 30e6}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePacer(1e6, 3, 40) // 1 ms apart; stopped at 40 at the latest
			f.p.end = 20e6                // arrivals 0 to 19
			f.overshoot = func(n int) int64 {
				if n == 10 {
					return tc.overshoot
				}
				return 0
			}
			f.run()
			if got := f.p.due.Load(); got != 20 {
				t.Errorf("released %d arrivals before an end 20 periods in, want 20", got)
			}
		})
	}
}
