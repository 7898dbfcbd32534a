package latest

import (
	"slices"
	"testing"
)

// TestRing adds n values to rings of several bounds, taking them at
// times: each Take returns the latest max values added since the last,
// oldest first.
func TestRing(t *testing.T) {
	for _, c := range []struct {
		name      string
		max, n    int
		takeEvery int // a Take after each takeEvery values; 0 only at the end
	}{
		{"under the bound", 10, 7, 0},
		{"at the bound", 10, 10, 0},
		{"past the bound", 10, 25, 0},
		{"wrapped many times", 3, 1000, 0},
		{"taken as it fills", 4, 30, 3},
		{"taken after wrapping", 4, 30, 7},
		{"a bound of one", 1, 5, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r Ring[int]
			var since []int
			check := func() {
				want := since
				if len(want) > c.max {
					want = want[len(want)-c.max:]
				}
				if r.Len() != len(want) {
					t.Fatalf("after %v: Len %d, want %d", since, r.Len(), len(want))
				}
				if got := r.Take([]int{-1}); !slices.Equal(got[1:], want) || got[0] != -1 {
					t.Fatalf("after %v: Take gave %v, want -1 then %v", since, got, want)
				}
				if r.Len() != 0 {
					t.Fatalf("Len %d after a Take", r.Len())
				}
				since = since[:0]
			}
			for v := range c.n {
				r.Add(v, c.max)
				since = append(since, v)
				if c.takeEvery > 0 && (v+1)%c.takeEvery == 0 {
					check()
				}
			}
			check()
		})
	}
}

// TestRingAllocs: a ring that reached its bound adds and takes with no
// allocation.
func TestRingAllocs(t *testing.T) {
	var r Ring[int]
	for v := range 20 {
		r.Add(v, 8)
	}
	into := make([]int, 0, 8)
	if n := testing.AllocsPerRun(100, func() {
		for v := range 12 {
			r.Add(v, 8)
		}
		into = r.Take(into[:0])
	}); n != 0 {
		t.Fatalf("%v allocations a round", n)
	}
}

// TestRingAddInPlace: an Add to a full ring writes the oldest value's
// place and no other, and keeps the ring's memory, so that its cost does
// not grow with the values held.
func TestRingAddInPlace(t *testing.T) {
	const max = 1000
	var r Ring[int]
	for v := range max {
		r.Add(v, max)
	}
	first := &r.items[0]
	for v := max; v < 3*max+7; v++ {
		before := slices.Clone(r.items)
		r.Add(v, max)
		if &r.items[0] != first || len(r.items) != max {
			t.Fatalf("Add of %d moved the ring's memory or changed its length (%d)", v, len(r.items))
		}
		changed := 0
		for i := range before {
			if before[i] != r.items[i] {
				changed++
				if before[i] != v-max || r.items[i] != v {
					t.Fatalf("Add of %d wrote place %d (%d to %d); want the oldest, %d", v, i, before[i], r.items[i], v-max)
				}
			}
		}
		if changed != 1 {
			t.Fatalf("Add of %d changed %d places; want 1", v, changed)
		}
	}
}
