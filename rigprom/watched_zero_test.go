package rigprom

import (
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// A device that a scrape published and that the devices function then
// leaves out while it is still open (not lost, not closed) is still
// watched, and its loss is counted later: its name's zero series goes on
// meanwhile, so that the first loss is an increase of the counter from 0,
// not a new series at 1.
func TestLossesZeroWhileWatched(t *testing.T) {
	d := open(t, "rigprom-watched-left")
	devs := []*rig.Device{d}
	c := NewCollector(func() []*rig.Device { return devs })
	if n := lossSeries(t, c, "rigprom-watched-left"); n != 1 {
		t.Fatalf("%d loss series for a current device, want 1", n)
	}
	devs = nil // left out, still open and watched
	mid := lossSeries(t, c, "rigprom-watched-left")
	if err := launch(t, d, "panic"); err == nil {
		t.Fatal("a kernel that panics did not lose the device")
	}
	after := lossSeries(t, c, "rigprom-watched-left")
	if after != 1 {
		t.Fatalf("%d loss series after the watched device was lost, want 1", after)
	}
	if mid != 1 {
		t.Errorf("the losses series of a name whose device the collector still watches ended (%d series) while the device was open, and reappeared at 1 at its loss", mid)
	}
}
