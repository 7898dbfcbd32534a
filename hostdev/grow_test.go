package hostdev

import (
	"testing"

	"github.com/rig-go/rig/device"
)

// TestGrowAfterOtherRoom refuses a submission with RoomGrow, lets the Room
// and Submit of a submission that fits run before the Grow, as another
// submitter's may outside the submit lock, and checks that the Grow still
// grows for the refused one, whose next Room then finds its room.
func TestGrowAfterOtherRoom(t *testing.T) {
	d, _ := newDev(t, Config{Grow: true}, 0)
	e := entry(t, d, "empty")
	parts := make([]device.Part, 10)
	for i := range parts {
		parts[i] = one(e, nil)
	}
	big := &device.Submission{Value: 1, Parts: parts}
	if a := d.Room(big); a.Kind != device.RoomGrow {
		t.Fatalf("room of 10 parts answered %+v, want grow", a)
	}
	small := &device.Submission{Value: 1, Parts: []device.Part{one(e, nil)}}
	if a := d.Room(small); a.Kind != device.RoomOK {
		t.Fatalf("room of 1 part answered %+v", a)
	}
	if a := d.Submit(small); a.Kind != device.Committed {
		t.Fatalf("submit answered %+v", a)
	}
	before := d.used.Load()
	if err := d.Grow(); err != nil {
		t.Fatal(err)
	}
	if d.used.Load() <= before {
		t.Error("grow after another submission's room took nothing from the budget: it grew nothing")
	}
	big.Value = 2
	if a := d.Room(big); a.Kind != device.RoomOK {
		t.Fatalf("room of 10 parts after grow answered %+v", a)
	}
	d.Submit(big)
	if err := reach(t, d, 2); err != nil {
		t.Fatal(err)
	}
}
