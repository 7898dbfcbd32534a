package profile

import (
	"math"
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// TestSpansWrappedValues: spans of one device that start at the same time
// follow their values in the timeline's circular order, so that the value
// after math.MaxUint64, 0, comes after it.
func TestSpansWrappedValues(t *testing.T) {
	d := openHost(t, "profile-wrapped")
	p := &Profile{devs: []*rig.Device{d}}
	for _, v := range []uint64{math.MaxUint64 - 1, math.MaxUint64, 0, 1} {
		p.recs.add(spanRec{value: v, start: 100, end: 100})
	}
	var got []uint64
	for _, sp := range p.Spans() {
		got = append(got, sp.Value)
	}
	want := []uint64{math.MaxUint64 - 1, math.MaxUint64, 0, 1}
	for i := range want {
		if len(got) != len(want) || got[i] != want[i] {
			t.Fatalf("spans of values %v, want %v", got, want)
		}
	}
}
