package rig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestStagingHonoursContext: an Upload or Download that stages through
// Pinned memory, where the budget holds no room for the staging buffer,
// runs rounds of reclamation, one of which waits for the device's work in
// flight. A ctx that ends meanwhile ends the wait: the copy returns ctx's
// error while that work still runs.
func TestStagingHonoursContext(t *testing.T) {
	for _, c := range []struct {
		name string
		copy func(ctx context.Context, b *Buffer) error
	}{
		{"upload", func(ctx context.Context, b *Buffer) error { return Upload(ctx, b, 0, make([]byte, 64)) }},
		{"download", func(ctx context.Context, b *Buffer) error { return Download(ctx, make([]byte, 64), b, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.held, f.hostMem = true, true
			f.facts.Budget = 128
			f.facts.HangMs = 600_000 // the round's wait is bounded by the hang bound
			d := openFake(t, "stage-ctx-"+c.name, f)
			b, err := d.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			// The rest of the budget, which no round gives back.
			if _, err := d.Alloc(device.DeviceMemory, 64); err != nil {
				t.Fatal(err)
			}
			held := submit(t, empty(t, d))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- c.copy(ctx, b) }()
			// Round 1 of the staging buffer's allocation waits for held.
			for d.stats.reclaimRounds.Load() < 2 {
				time.Sleep(100 * time.Microsecond)
			}
			cancel()
			select {
			case err = <-res:
			case <-time.After(5 * time.Second):
				// Unstick a copy that waits for the work instead.
				f.complete(held.v)
				err = <-res
				t.Fatalf("the copy returned %v only once the work in flight completed, after its ctx ended", err)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the copy returned %v, want %v", err, context.Canceled)
			}
			f.complete(held.v)
		})
	}
}
