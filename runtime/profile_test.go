package rig_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

type recorder struct {
	mu     sync.Mutex
	values []uint64
	kinds  []device.PartKind
}

func (r *recorder) Submitted(d *rig.Device, s *device.Submission) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.values = append(r.values, s.Value)
	for _, p := range s.Parts {
		r.kinds = append(r.kinds, p.Kind)
	}
}

func TestTimedAndObserved(t *testing.T) {
	d := host(t, hostdev.Config{})
	x := alloc(t, d, device.PinnedMemory, 64)
	s := sub(t, d, rig.Launch(fn(t, d, "empty"), 0), rig.FillBytes(0, 0, 64, 1))
	submit(t, s, x) // untimed
	rec := &recorder{}
	d.SetObserver(rec)
	if before := d.SetTimed(true); before != d.Last() {
		t.Fatalf("SetTimed answered %d, want the last value %d", before.Value(), d.Last().Value())
	}
	var pts []rig.Point
	for i := 0; i < 3; i++ {
		pts = append(pts, submit(t, s, x))
	}
	last := d.SetTimed(false)
	if last != pts[2] {
		t.Fatalf("SetTimed(false) answered %d, want %d", last.Value(), pts[2].Value())
	}
	submit(t, s, x) // untimed again
	wait(t, last)
	stamps, err := d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stamps) != 3 {
		t.Fatalf("%d stamps, want 3", len(stamps))
	}
	for i, st := range stamps {
		if st.Value != pts[i].Value() || st.End < st.Start || st.Start <= 0 {
			t.Fatalf("stamp %d: %+v for value %d", i, st, pts[i].Value())
		}
	}
	if len(rec.values) != 3 || rec.values[0] != pts[0].Value() || len(rec.kinds) != 6 || rec.kinds[1] != device.CopyRows {
		t.Fatalf("observed values %v kinds %v", rec.values, rec.kinds)
	}
	_ = d.Close()
	if _, err := d.Settle(nil); !errors.Is(err, rig.ErrClosed) {
		t.Fatalf("Settle after Close: %v", err)
	}
}
