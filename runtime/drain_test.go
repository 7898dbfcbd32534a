package rig

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestSupervisorWakesUnderMessages: a waiter the supervisor holds wakes
// once the word reaches its value while a message comes for each one the
// supervisor handles, so that its mailbox never empties (drainBound).
func TestSupervisorWakesUnderMessages(t *testing.T) {
	f, d := openHeld(t, "wake-under-messages")
	d.SetWaitSpin(0)
	p := submit(t, empty(t, d))
	done := make(chan error, 1)
	go func() { done <- p.Wait(context.Background()) }()
	for start := time.Now(); d.sup.count.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			f.complete(p.Value())
			t.Fatal("the wait was not held by the supervisor")
		}
	}

	// The stream: a registration of a value the word passed, which the
	// supervisor answers at once, sent again after each message it
	// handles.
	var stop atomic.Bool
	var sent atomic.Int64
	w := &waiter{v: d.base, idx: -1, ch: make(chan error, 1)}
	again := func() {
		select {
		case <-w.ch:
		default:
		}
		if stop.Load() {
			return
		}
		w.state.Store(waitSent)
		if d.sup.box.TrySend(message{kind: msgRegister, w: w}) == nil {
			sent.Add(1)
		}
	}
	d.sup.handled.Store(&again)
	defer func() {
		stop.Store(true)
		d.sup.handled.Store(nil)
	}()
	again()
	for start := time.Now(); sent.Load() < 100; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the supervisor handled %d messages of the stream in 10 s", sent.Load())
		}
	}

	f.complete(p.Value())
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		stop.Store(true)
		<-done
		t.Fatalf("the held wait did not return in 5 s of a stream of messages (%d sent)", sent.Load())
	}
	if n := sent.Load(); n < 100 {
		t.Fatalf("%d messages sent", n)
	}
}
