package rig_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// heldRuns has a value sent as each test_held launch starts; the test
// ends them by closing the channel in heldGate.
var (
	heldRuns = make(chan struct{}, 1)
	heldGate atomic.Pointer[chan struct{}]
)

func init() {
	// held runs until the test closes its gate, and ignores the device's
	// stop, as a GPU kernel that runs to its end. One thread.
	hostdev.RegisterParams("test_held", 0, func(k *hostdev.Ctx) {
		heldRuns <- struct{}{}
		<-*heldGate.Load()
	})
}

// TestHostSpinningWaitWokenByClose: on the host driver, a Wait that spins
// on the word (SetWaitSpin) for a point whose work still runs when Close
// stops the device (test_held, a kernel that runs until the test ends it)
// returns ErrClosed at Close, not once the work ends: the wait returns
// while the work is still held.
func TestHostSpinningWaitWokenByClose(t *testing.T) {
	d := host(t, hostdev.Config{})
	gate := make(chan struct{})
	heldGate.Store(&gate)
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // the work ends before the device's last close
	d.SetWaitSpin(time.Minute)
	p, err := sub(t, d, rig.Launch(fn(t, d, "test_held"), 0)).Take().Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	<-heldRuns
	errc := make(chan error, 1)
	go func() { errc <- p.Wait(context.Background()) }()
	time.Sleep(50 * time.Millisecond) // the wait spins by now
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, rig.ErrClosed) {
			t.Fatalf("Wait after Close: %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		// A bound on a wait that never ends, not a measure of speed: the
		// work is held until the test releases it, and the spin lasts a
		// minute.
		release()
		t.Fatalf("a spinning Wait did not return at Close, but only once the work ended: %v", <-errc)
	}
}
