package main

import (
	"context"
	"errors"
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
