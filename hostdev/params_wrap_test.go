package hostdev

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// TestRoomParamBytesPastInt submits launches of a kernel that states no
// parameter count, so that each passes all its parameter bytes, whose
// count together passes what an int holds: Room refuses them, naming the
// bytes, where the count wrapped and Room planned the value, and Submit
// then panicked slicing the ring's bytes. The slices' lengths are stated
// only: Room reads no byte of them. Where an int has 32 bits, 129 launches
// that share one slice of 16 MiB are such a submission.
func TestRoomParamBytesPastInt(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "limits.params")
	b := make([]byte, 8)
	defer runtime.KeepAlive(b)
	big := sliceAt[byte](uintptr(unsafe.Pointer(&b[0])), math.MaxInt/2+1)
	s := &device.Submission{Value: 1, Parts: []device.Part{one(e, big), one(e, big)}}
	a := d.Room(s)
	if a.Kind != device.RoomNever || a.Part != 1 || !strings.Contains(a.Reason, "parameter bytes") {
		t.Fatalf("room of launches of %d parameter bytes each answered %+v, want RoomNever for part 1 naming the parameter bytes", len(big), a)
	}
	if sa := d.Submit(s); sa.Kind != device.Failed {
		t.Fatalf("submit answered %+v, want Failed", sa)
	}
}
