package rig

import (
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestCloseDuringReclamationRound: an allocation that the driver refuses
// runs rounds of reclamation, one of which waits for the device's work in
// flight. Close does not wait for the device's work: a Close that begins
// during that round returns while the work still runs, and the allocation
// returns an error.
func TestCloseDuringReclamationRound(t *testing.T) {
	f := newFake()
	f.held = true
	f.facts.HangMs = 600_000 // the round's wait is bounded by the hang bound
	d := openFake(t, "close-round", f)
	held := submit(t, empty(t, d))
	f.mu.Lock()
	f.allocErr = device.ErrNoMemory
	f.mu.Unlock()
	allocated := make(chan error, 1)
	go func() {
		_, err := d.Alloc(device.DeviceMemory, 64)
		allocated <- err
	}()
	// The second round is the one that waits.
	for d.Stats().ReclaimRounds < 2 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		// Unstick a Close that waits for the work instead.
		f.complete(held.v)
		<-closed
		t.Fatal("Close returned only once the work in flight completed, behind an allocation's round of reclamation")
	}
	if err := <-allocated; err == nil || !(errors.Is(err, ErrClosed) || errors.Is(err, ErrOutOfMemory)) {
		t.Fatalf("the allocation returned %v, want an error matching ErrClosed or ErrOutOfMemory", err)
	}
	<-d.Done()
}
