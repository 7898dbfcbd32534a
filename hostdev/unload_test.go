package hostdev

import (
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestRoomRefusesUnloadedImage checks that Room refuses a launch of an
// entry whose image was unloaded, naming the part, rather than running
// its kernel.
func TestRoomRefusesUnloadedImage(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "empty")
	s := &device.Submission{Value: 1, Parts: []device.Part{one(e, nil)}}
	if a := d.Room(s); a.Kind != device.RoomOK {
		t.Fatalf("before the unload: %+v", a)
	}
	if err := d.Unload(e.Data.(*kentry).img); err != nil {
		t.Fatal(err)
	}
	if a := d.Room(s); a.Kind != device.RoomNever || a.Part != 0 || !strings.Contains(a.Reason, "unloaded image") {
		t.Fatalf("after the unload: %+v, want a refusal of part 0 naming the unloaded image", a)
	}
}
