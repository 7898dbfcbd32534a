package rig_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestHostSpinningWaitWokenByClose: on the host driver, a Wait that spins
// on the word (SetWaitSpin) for a point whose work still runs when Close
// stops the device (test_stubborn, a kernel that runs to its end) returns
// ErrClosed at Close, not once the work ends.
func TestHostSpinningWaitWokenByClose(t *testing.T) {
	d := host(t, hostdev.Config{})
	d.SetWaitSpin(time.Minute)
	p := stubborn(t, d, 4*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- p.Wait(ctx) }()
	time.Sleep(50 * time.Millisecond) // the wait spins by now
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	took := time.Since(start)
	if !errors.Is(err, rig.ErrClosed) {
		t.Fatalf("Wait after Close: %v, want ErrClosed", err)
	}
	if took > 3*time.Second {
		t.Fatalf("a spinning Wait returned ErrClosed %v after it began, once the work ended, not at Close", took)
	}
}
