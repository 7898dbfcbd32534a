package rig

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestFailedAnswerLosesFaultDomain: a value the driver answers Failed for,
// in Submit or in the Commit of a pending value (cudadev commits most of
// its values lazily, so that a sticky CUDA error often shows first in the
// Commit a waiter asks for), loses the device with a *device.Fault that
// names the reason, and the devices of its fault domain with it; a
// device of no domain goes on.
func TestFailedAnswerLosesFaultDomain(t *testing.T) {
	const why = "committing value 2: CUDA_ERROR_ILLEGAL_ADDRESS"
	for _, c := range []struct {
		name string
		set  func(f *fake)
	}{
		{"submit", func(f *fake) { f.fail = why }},
		{"commit", func(f *fake) { f.pending, f.commitFail = true, why }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b, o := newFake(), newFake(), newFake()
			a.facts.FaultDomain, b.facts.FaultDomain = "failed-answer-"+c.name, "failed-answer-"+c.name
			b.held, o.held = true, true
			da := openFake(t, "failed-answer-a-"+c.name, a)
			db := openFake(t, "failed-answer-b-"+c.name, b)
			do := openFake(t, "failed-answer-o-"+c.name, o)
			pb, po := submit(t, empty(t, db)), submit(t, empty(t, do))
			a.mu.Lock()
			c.set(a)
			a.mu.Unlock()
			p, err := empty(t, da).Take().Submit(context.Background())
			if err == nil {
				err = p.Wait(context.Background())
			}
			var le *LostError
			if !errors.As(err, &le) || !strings.Contains(le.Cause, why) {
				t.Fatalf("the failed value answered %v, want the loss", err)
			}
			if f, ok := device.AsFault(err); !ok || f.Why != why {
				t.Fatalf("the loss %v carries the fault %v, want one of %q", err, le.Fault, why)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := pb.Wait(ctx); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), da.name) {
				t.Fatalf("a waiter of a device of the same fault domain: %v", err)
			}
			if err := do.Err(); err != nil {
				t.Fatalf("a device of no fault domain was lost: %v", err)
			}
			o.complete(po.Value())
		})
	}
}
