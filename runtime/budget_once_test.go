package rig_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestPastBudgetAtOnce: an image whose place is larger than the device's
// whole budget, and an allocation whose length is within the budget but
// whose rounding to 4 bytes is not, fail at once with an error matching
// ErrOutOfMemory, running no round of reclamation (which waits for the
// device's work and runs the garbage collector).
func TestPastBudgetAtOnce(t *testing.T) {
	d := host(t, hostdev.Config{Budget: 1<<20 + 2})
	_, err := d.LoadImage(hostdev.PlacedImageOf(2<<20, "sleep"))
	var oom *rig.OutOfMemoryError
	if !errors.As(err, &oom) || !errors.Is(err, rig.ErrOutOfMemory) || oom.Lacking != 2<<20-(1<<20+2) {
		t.Fatalf("an image placed in twice the budget: %v, want an out-of-memory error lacking %d bytes", err, 2<<20-(1<<20+2))
	}
	if strings.Contains(err.Error(), "rounds of reclamation") {
		t.Errorf("an image placed in twice the budget: %q says rounds ran", err)
	}
	_, err = d.Alloc(device.DeviceMemory, 1<<20+1)
	if !errors.Is(err, rig.ErrOutOfMemory) {
		t.Fatalf("an allocation rounded past the budget: %v, want ErrOutOfMemory", err)
	}
	if n := d.Stats().ReclaimRounds; n != 0 {
		t.Fatalf("%d rounds of reclamation for requests past the whole budget, want none", n)
	}
	if used, _ := d.Budget(); used != 0 {
		t.Fatalf("the budget counts %d bytes after requests it refused", used)
	}
}
