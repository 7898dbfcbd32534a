package main

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitAfterTimeoutHasItsOwnBound: once a lane's wait timed out, each
// of its later waits is still bounded by -timeout of its own, as every
// other lane's: a submission in flight behind the one that timed out and
// whose point is reached a moment later counts as done, not as one more
// wait that timed out without waiting.
func TestWaitAfterTimeoutHasItsOwnBound(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	submitted := uint64(0)
	l := lane[uint64]{
		device: "fake",
		submit: func(ctx context.Context) (uint64, int64, error) {
			if submitted == 2 {
				// The run ends with what is in flight: the first
				// submission, which never completes, and the second.
				<-ctx.Done()
				return 0, 0, ctx.Err()
			}
			submitted++
			return submitted, 0, nil
		},
		wait: func(ctx context.Context, v uint64) error {
			// The point is not reached: a wait whose context ended
			// fails at once.
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if v == 2 {
				close(started)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			<-ctx.Done()
			return context.Cause(ctx)
		},
	}
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-started:
			close(release)
		case <-ended:
		}
	}()
	cfg := &config{Depth: 2, Timeout: 50 * time.Millisecond}
	m := bench(context.Background(), cfg, []lane[uint64]{l}, &live{})
	if m.errors != 1 || m.done != 1 || !errors.Is(m.firstErr, errTimeout) {
		t.Fatalf("%d done, %d errors, the first %v; want the second submission done and the first's wait alone timed out", m.done, m.errors, m.firstErr)
	}
}

// A device whose points are never reached (a hung GPU) holds the report
// for one -timeout once submitting stops, by -duration or by -n, not for
// one -timeout for each of the -depth waits in flight, one after another:
// a later point of the device is reached no sooner than the one whose wait
// timed out. Each wait still counts as one that timed out. At most two
// waits of the lane block: the one in flight as submitting stops, until
// its own bound, and one begun before the drain's bound passed, until
// that bound; every later one begins with its bound passed.
func TestDrainHasOneBound(t *testing.T) {
	for _, c := range []struct {
		name     string
		duration time.Duration
		n        int64
	}{
		{"duration", 20 * time.Millisecond, 0},
		{"n", 0, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n uint64
			var waits, blocked atomic.Int64
			l := lane[uint64]{
				device: "stuck",
				submit: func(ctx context.Context) (uint64, int64, error) { n++; return n, 0, nil },
				wait: func(ctx context.Context, v uint64) error {
					waits.Add(1)
					if ctx.Err() == nil {
						blocked.Add(1)
					}
					<-ctx.Done()
					return context.Cause(ctx)
				},
			}
			cfg := &config{Depth: 8, Timeout: 100 * time.Millisecond, Duration: c.duration, N: c.n}
			m := bench(context.Background(), cfg, []lane[uint64]{l}, &live{})
			if b := blocked.Load(); b > 2 || waits.Load() < 3 {
				t.Errorf("%d of %d waits blocked until a bound of their own, want at most 2 of at least 3", b, waits.Load())
			}
			if m.errors == 0 || m.done != 0 || !errors.Is(m.firstErr, errTimeout) {
				t.Errorf("%d done, %d errors, the first %v; want every wait timed out", m.done, m.errors, m.firstErr)
			}
		})
	}
}

// A failure of a baseline's lane names the baseline, not the device alone,
// so that a report of -compare does not lay it at rig's door.
func TestBaselineLaneNamed(t *testing.T) {
	boom := errors.New("boom")
	for _, baseline := range []bool{false, true} {
		l := lane[uint64]{
			device:   "host",
			baseline: baseline,
			submit:   func(ctx context.Context) (uint64, int64, error) { return 1, 0, nil },
			wait:     func(ctx context.Context, v uint64) error { return boom },
		}
		m := bench(context.Background(), &config{Depth: 1, Timeout: time.Second, N: 1}, []lane[uint64]{l}, &live{})
		want := "wait on host: boom"
		if baseline {
			want = "wait on the baseline on host: boom"
		}
		if m.firstErr == nil || m.firstErr.Error() != want {
			t.Errorf("baseline %v: the first error %v, want %q", baseline, m.firstErr, want)
		}
	}
}

// TestDrainWithLargestTimeout: a -timeout near the largest duration (a
// user's "no bound") bounds the waits still in flight once submitting
// stops by that much, not by a bound wrapped into the past that fails
// them all at once.
func TestDrainWithLargestTimeout(t *testing.T) {
	var n uint64
	l := lane[uint64]{
		device: "slow",
		submit: func(ctx context.Context) (uint64, int64, error) { n++; return n, 0, nil },
		wait: func(ctx context.Context, v uint64) error {
			select {
			case <-time.After(20 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		},
	}
	cfg := &config{Depth: 4, Timeout: math.MaxInt64, Duration: 50 * time.Millisecond}
	m := bench(context.Background(), cfg, []lane[uint64]{l}, &live{})
	if m.errors != 0 || m.done == 0 {
		t.Errorf("-timeout %v: %d done, %d errors, the first %v; want every wait done", cfg.Timeout, m.done, m.errors, m.firstErr)
	}
}
