package rig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestGrowthHonoursContext: a submission whose queues must grow, and
// whose growths come up short, runs rounds of reclamation, one of which
// waits for the device's work in flight. A ctx that ends meanwhile ends
// the wait: Submit returns ctx's error while that work still runs, and
// nothing was submitted.
func TestGrowthHonoursContext(t *testing.T) {
	for _, c := range []struct {
		name string
		// cancelAt is the growth at which ctx is cancelled, counted
		// from 1 (the second runs the round that waits); 0 for none.
		cancelAt int
		// deadline, where not 0, ends ctx while the round waits.
		deadline time.Duration
		want     error
	}{
		{"cancelled before the round that waits", 2, 0, context.Canceled},
		{"a deadline while the round waits", 0, 50 * time.Millisecond, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.held = true
			f.facts.HangMs = 600_000 // the round's wait is bounded by the hang bound
			d := openFake(t, "grow-ctx-"+c.name, f)
			held := submit(t, empty(t, d))
			ctx, cancel := context.WithCancel(context.Background())
			if c.deadline > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), c.deadline)
			}
			defer cancel()
			for range 5 {
				f.rooms = append(f.rooms, device.RoomAnswer{Kind: device.RoomGrow})
				f.growth = append(f.growth, &device.Short{N: 4096})
			}
			asks := 0
			f.onGrow = func() {
				if asks++; asks == c.cancelAt {
					cancel()
				}
			}
			res := make(chan error, 1)
			go func() {
				_, err := empty(t, d).Take().Submit(ctx, nil)
				res <- err
			}()
			var err error
			select {
			case err = <-res:
			case <-time.After(5 * time.Second):
				// Unstick a Submit that waits for the work instead.
				f.complete(held.v)
				err = <-res
				t.Fatalf("Submit returned %v only once the work in flight completed, after its ctx ended", err)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Submit returned %v, want %v", err, c.want)
			}
			if n := f.count(); n != 1 {
				t.Fatalf("%d submissions reached the driver, want the first alone", n)
			}
			f.complete(held.v)
		})
	}
}
