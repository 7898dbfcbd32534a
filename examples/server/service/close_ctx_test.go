package service

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCloseHonoursContext closes the service while a recovery holds the
// reopen lock (closing a lost device, which may take long), and again
// while a recovery's goroutine is in flight: Close returns its context's
// error once the context ends, rather than past the caller's deadline,
// and a later Close, once the recovery ended, closes the service.
func TestCloseHonoursContext(t *testing.T) {
	for _, c := range []struct {
		name       string
		hold, free func(s *Service)
	}{
		{"reopen lock held", func(s *Service) { s.reopenMu.Lock() }, func(s *Service) { s.reopenMu.Unlock() }},
		{"recovery in flight", func(s *Service) { s.inFlight.Add(1) }, func(s *Service) { s.inFlight.Done() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := hostService(t, 2, hostOpener())
			c.hold(s)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.Close(ctx) }()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Close with an ended context answered %v, want its error", err)
				}
			case <-time.After(10 * time.Second):
				c.free(s)
				<-done
				t.Fatal("Close waited for the recovery past its context's end")
			}
			c.free(s)
		})
	}
}
