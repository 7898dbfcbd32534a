package hostdev

import "testing"

// TestStampsPastBound stamps more timed values than maxStamps with no
// Settle between: each stamp past the bound drops the oldest, and Settle
// gives the latest maxStamps in value order. That a stamp past the bound
// takes the oldest one's place, moving none of the others, is the ring's
// (internal/latest's TestRingAddInPlace).
func TestStampsPastBound(t *testing.T) {
	d := &dev{}
	sl := &slot{timed: true}
	for v := range uint64(maxStamps) {
		sl.value = v + 1
		d.q.stamp(sl)
	}
	const more = 2000
	for v := range uint64(more) {
		sl.value = maxStamps + v + 1
		d.q.stamp(sl)
	}
	stamps, err := d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stamps) != maxStamps {
		t.Fatalf("%d stamps, want %d", len(stamps), maxStamps)
	}
	for i, st := range stamps {
		if want := uint64(more + i + 1); st.Value != want {
			t.Fatalf("stamp %d is of value %d, want %d", i, st.Value, want)
		}
	}
	if stamps, _ := d.Settle(nil); len(stamps) != 0 {
		t.Fatalf("%d stamps after a Settle", len(stamps))
	}
}
