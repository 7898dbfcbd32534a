package profile

import (
	"testing"

	"github.com/rig-go/rig/device"
)

// TestRecorderPastBound records more values than maxRecords with none
// taken: the recorder keeps at most maxRecords, forgetting the oldest, so
// that the latest half stays, in value order, each with its own parts.
func TestRecorderPastBound(t *testing.T) {
	r := &recorder{}
	parts := []device.Part{{Kind: device.Launch}, {Kind: device.Words, Words: make([]uint32, 2)}}
	const n = maxRecords + 1000
	for v := uint64(1); v <= n; v++ {
		r.Submitted(nil, &device.Submission{Value: v, Parts: parts[:1+v%2]})
	}
	kept := r.recs[r.head:]
	if len(kept) > maxRecords || len(kept) < maxRecords/2 {
		t.Fatalf("%d records kept of %d; want from %d to %d", len(kept), n, maxRecords/2, maxRecords)
	}
	if last := kept[len(kept)-1].value; last != n {
		t.Fatalf("the last record is of value %d, want %d", last, n)
	}
	for i, rec := range kept {
		if want := n - uint64(len(kept)-1-i); rec.value != want {
			t.Fatalf("record %d is of value %d, want %d", i, rec.value, want)
		}
		if np := rec.parts[1] - rec.parts[0]; np != int(1+rec.value%2) {
			t.Fatalf("record of value %d has %d parts, want %d", rec.value, np, 1+rec.value%2)
		}
		if got := r.parts[rec.parts[1]-1].Kind; (rec.value%2 == 1) != (got == "words") {
			t.Fatalf("record of value %d ends with a part of kind %q", rec.value, got)
		}
	}
}
