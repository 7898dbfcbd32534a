package rig

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMassCancelWithSupervisorHeld: 10,000 goroutines wait on one value
// the device does not reach, and their shared context is cancelled, as a
// server's shutdown would, while the supervisor is held in its driver's
// Sleep. Every wait returns ctx.Err() with the supervisor still held:
// a cancellation goes to the supervisor's box without waiting for room in
// it, so that no wait waits for the supervisor to take the cancellations
// before it (the box holds fewer than 10,000).
func TestMassCancelWithSupervisorHeld(t *testing.T) {
	const n = 10000
	f := newFake()
	f.held = true
	d := openFake(t, "mass-cancel", f)
	p := submit(t, empty(t, d))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var wrong atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
				wrong.Add(1)
				t.Errorf("wait: %v", err)
			}
		}()
	}
	for end := time.Now().Add(30 * time.Second); d.Waiting() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("only %d of %d waiters registered", d.Waiting(), n)
		}
	}
	// Hold the supervisor in its next Sleep until every wait returned.
	release := f.holdSleep()
	cancel()
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(60 * time.Second):
		// A bound on a deadlock, not a measure of speed: the waits that
		// wait for room in the box return only once the supervisor goes on.
		release()
		<-returned
		t.Fatalf("the cancelled waits returned only once the supervisor went on")
	}
	release()
	if wrong.Load() != 0 {
		t.Fatalf("%d waits returned other than ctx.Err()", wrong.Load())
	}
	f.complete(p.v)
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
}
