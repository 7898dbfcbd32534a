package hostdev

import (
	"testing"
	"time"
)

// TestStampsPastBound stamps more timed values than maxStamps with no
// Settle between: each stamp past the bound drops the oldest in constant
// time, not by moving the million kept, and Settle gives the latest
// maxStamps in value order.
func TestStampsPastBound(t *testing.T) {
	d := &dev{}
	sl := &slot{timed: true}
	for v := range uint64(maxStamps) {
		sl.value = v + 1
		d.q.stamp(sl)
	}
	const more = 2000
	t0 := time.Now()
	for v := range uint64(more) {
		sl.value = maxStamps + v + 1
		d.q.stamp(sl)
	}
	if el := time.Since(t0); el > time.Second {
		t.Errorf("%d stamps past the bound took %v", more, el)
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
