package rig

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestLongSpinHonoursContextAndLoss: a wait that reads the word for a
// long spin (SetWaitSpin) returns once its ctx ends, or its device is
// lost, while it spins, rather than once the spin ends.
func TestLongSpinHonoursContextAndLoss(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(d *Device, cancel context.CancelFunc)
		want error
	}{
		{"ctx cancelled", func(_ *Device, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"device lost", func(d *Device, _ context.CancelFunc) { d.lose("lost for the test", nil) }, ErrLost},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.held = true
			d := openFake(t, "long-spin-"+map[bool]string{true: "ctx", false: "lost"}[c.want == context.Canceled], f)
			d.SetWaitSpin(time.Hour)
			p := submit(t, empty(t, d))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- p.Wait(ctx) }()
			for d.spinners.n.Load() == 0 {
				runtime.Gosched()
			}
			c.end(d, cancel)
			var err error
			select {
			case err = <-res:
			case <-time.After(5 * time.Second):
				// Unstick a wait that spins on instead.
				f.complete(p.v)
				err = <-res
				t.Fatalf("the wait returned %v only once its point was reached", err)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("the wait returned %v, want %v", err, c.want)
			}
		})
	}
}
