package rig

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRegistrationAfterTheLastDrain: a wait whose registration the box
// took after the supervisor closed it and took its last messages (a Send
// that found the box open, then the close and its drain, then the send)
// gets its answer from the waiting goroutine itself: ErrClosed for a
// value the close dropped, nil for one reached before it, and never a
// wait for its context's end.
func TestRegistrationAfterTheLastDrain(t *testing.T) {
	for _, c := range []struct {
		name    string
		reached bool
		want    error
	}{
		{"dropped by the close", false, ErrClosed},
		{"reached before the close", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.held = !c.reached
			d := openFake(t, "after-drain-"+map[bool]string{false: "dropped", true: "reached"}[c.reached], f)
			p := submit(t, empty(t, d))
			if c.reached {
				if err := p.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			<-d.Done()
			// The state the race leaves: a registration in the closed
			// box that no one receives.
			w := d.stock.get()
			w.v, w.key, w.idx = p.v, p.v-d.base, -1
			w.state.Store(waitSent)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := d.parked(ctx, w); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("the wait answered %v, want %v", err, c.want)
			}
		})
	}
}
