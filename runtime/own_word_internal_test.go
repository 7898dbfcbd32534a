package rig

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestOwnWordFreedAfterReads: a device that keeps its own word is closed
// while a goroutine reads the word (Stats) and is held inside the driver's
// Signaled until the reaping has recorded the word's last value: the
// driver's Free of the word comes only once that read returned, and the
// reading goroutine then reads the last value.
func TestOwnWordFreedAfterReads(t *testing.T) {
	f := newFake()
	f.keepOwnWord(0)
	d := openFake(t, "own-word-reads", f)
	if err := submit(t, launchOn(t, d)).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var inRead, freedInRead atomic.Bool
	entered, timedOut := pauseIn(t, f, "(*Device).Stats", func() bool {
		if !d.reaped.Load() {
			return false
		}
		// A pause in which a reaping that does not wait for the
		// reads in flight frees the word under this one.
		time.Sleep(50 * time.Millisecond)
		inRead.Store(false)
		return true
	})
	free := func() {
		if inRead.Load() {
			freedInRead.Store(true)
		}
	}
	f.onFree.Store(&free)
	read := make(chan Stats, 1)
	go func() { read <- d.Stats() }()
	<-entered
	// The read is inside Signaled from here until the hook returns.
	inRead.Store(true)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	st := <-read
	if timedOut() {
		t.Fatal("the reaping did not record the word's last value")
	}
	if freedInRead.Load() {
		t.Fatal("the driver freed its own word while Signaled read it")
	}
	if st.InFlight != 0 {
		t.Fatalf("Stats read %d values in flight", st.InFlight)
	}
}
