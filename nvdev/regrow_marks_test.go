package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
)

// TestRegrowRetiredAfterUploads: a ring retired while a regrowth waits for
// its switch, after uploads that moved the old copy channel's marks past
// the new channel's, goes back at the first reap after the switch. The
// switch waits for every upload, so the mark the ring was retired under
// has passed; the new copy channel's marks, which count on from where the
// old one stood when the regrowth opened it, need not reach it.
func TestRegrowRetiredAfterUploads(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64})
	m := r.alloc(device.PinnedMemory, 4096)
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{bigWords(r, m, 100, 1)}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 100 entries on rings of 64: %+v", a)
	}
	if err := r.d.Grow(); err != nil {
		t.Fatal(err)
	}
	if r.d.grown.set == nil {
		t.Fatal("Grow opened no channels to switch to")
	}
	// Uploads on the old copy channel, then a ring retired behind them,
	// as a growth of a segment ring retires the one it replaces.
	code, err := r.d.Image(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		img, err := code.Lay(r.alloc(device.DeviceMemory, code.Place))
		if err != nil {
			t.Fatal(err)
		}
		r.imgs = append(r.imgs, img)
	}
	ring := r.alloc(device.PinnedMemory, 4096)
	r.mems = r.mems[:len(r.mems)-1] // the reap gives it back
	r.d.mu.Lock()
	r.d.retire(ring)
	r.d.mu.Unlock()
	r.wait(r.submit(nil, s.Parts...))
	if r.d.grown.set != nil {
		t.Fatal("the submission did not switch to the new channels")
	}
	r.d.reap()
	r.d.retMu.Lock()
	left := len(r.d.retired)
	r.d.retMu.Unlock()
	if left != 0 {
		t.Fatalf("%d retired rings held after the switch and the word reached every value", left)
	}
}
