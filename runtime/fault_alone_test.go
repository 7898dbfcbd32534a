package rig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestFaultAloneKeepsDomain: a fault the driver marks the device's alone
// loses that device and no other device of its fault domain, whose work
// and waits go on; a fault not so marked loses them all (TestFaultDomain).
func TestFaultAloneKeepsDomain(t *testing.T) {
	a, b := newFake(), newFake()
	a.facts.FaultDomain, b.facts.FaultDomain = "alone", "alone"
	a.held, b.held = true, true
	da, db := openFake(t, "alone-A", a), openFake(t, "alone-B", b)
	pa, pb := submit(t, empty(t, da)), submit(t, empty(t, db))
	a.mu.Lock()
	a.sleepErr = &device.Fault{Why: "settle: a stamp unwritten", Alone: true}
	a.cond.Broadcast()
	a.mu.Unlock()
	if err := pa.Wait(context.Background()); !errors.Is(err, ErrLost) {
		t.Fatalf("waiter of the faulted device: %v", err)
	}
	// A fault sent to the domain reaches B within this.
	time.Sleep(50 * time.Millisecond)
	if err := db.Err(); err != nil {
		t.Fatalf("a device of the domain was lost by a fault of another's alone: %v", err)
	}
	b.complete(pb.Value())
	if err := pb.Wait(context.Background()); err != nil {
		t.Fatalf("a wait on the device beside the one lost alone: %v", err)
	}
	if _, err := empty(t, db).Take().Submit(context.Background()); err != nil {
		t.Fatalf("a submission to the device beside the one lost alone: %v", err)
	}
}
