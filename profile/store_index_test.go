package profile

import (
	"testing"

	"github.com/rig-go/rig/device"
)

// TestSpanPastInt32Parts: a span whose parts come after 2^31 others in the
// profile's store keeps their index, rather than one wrapped below zero,
// which made Spans panic. The store is made to hold 2^31 parts without
// their memory: chunks that were never filled, and its count.
func TestSpanPastInt32Parts(t *testing.T) {
	const past = 1 << 31
	p := &Profile{}
	p.parts.chunks = make([][]Part, past/chunkLen)
	p.parts.n = past
	r := &recorder{}
	r.Submitted(nil, &device.Submission{Value: 7, Parts: []device.Part{{Kind: device.Launch}, {Kind: device.CopyRows, Filling: true, RowBytes: 64, Rows: 1}}})
	batch := []spanRec{{value: 7}}
	r.take(batch, p)
	sp := batch[0]
	if sp.parts != past || sp.nparts != 2 {
		t.Fatalf("the span's parts start at %d, %d of them; want %d, 2", sp.parts, sp.nparts, past)
	}
	if got := p.parts.at(sp.parts + 1); got.Kind != "fill" {
		t.Fatalf("the span's second part in the store is %+v, want the fill", got)
	}
}
