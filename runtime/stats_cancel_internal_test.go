package rig

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitsCancelledBeforePark: a wait on an unreached point whose context
// ended before it began, or while the supervisor's mailbox was full, is
// counted in WaitsCancelled, as one whose context ends while it spins or
// parks is.
func TestWaitsCancelledBeforePark(t *testing.T) {
	f, d := openHeld(t, "waits-cancelled-before-park")
	d.SetWaitSpin(0)
	p := submit(t, empty(t, d))
	defer f.complete(p.Value())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait with its context ended: %v, want context.Canceled", err)
	}
	if n := d.Stats().WaitsCancelled; n != 1 {
		t.Fatalf("a wait whose context ended before it began: WaitsCancelled %d, want 1", n)
	}

	// The supervisor held in the handling of a message, and its mailbox
	// filled behind it: the registration's send waits for room until its
	// context ends.
	release := make(chan struct{})
	holding := make(chan struct{})
	var held atomic.Bool
	hold := func() {
		if held.CompareAndSwap(false, true) {
			holding <- struct{}{}
			<-release
		}
	}
	d.sup.handled.Store(&hold)
	defer d.sup.handled.Store(nil)
	if err := d.sup.box.TrySend(message{}); err != nil {
		t.Fatal(err)
	}
	<-holding
	for d.sup.box.TrySend(message{}) == nil {
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer tcancel()
	err := p.Wait(tctx)
	close(release)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait whose registration met a full mailbox: %v, want context.DeadlineExceeded", err)
	}
	st := d.Stats()
	if st.WaitsCancelled != 2 || st.WaitsParked != 0 {
		t.Fatalf("after a wait whose context ended at a full mailbox: WaitsCancelled %d, WaitsParked %d; want 2 and 0", st.WaitsCancelled, st.WaitsParked)
	}
}
