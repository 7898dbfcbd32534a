package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
)

// TestRetiredRingKeptPastOtherChannelsValue: a segment ring a growth
// replaced holds the words after its channel's last release (the
// non-stall interrupt), which the channel may read after the word shows
// that value. Where the value after the switch runs on the other channel
// alone (the submission that asked for the growth gave up, and another
// took its value), the word reaching it does not show that the channel
// read them: the ring stays until a value ran on its channel.
func TestRetiredRingKeptPastOtherChannelsValue(t *testing.T) {
	r, m, first := pausedAfterGrowth(t)
	fills := func(k int) []device.Part { return computeFills(m, k) }
	kc := fakeChanOf(t, r.f, r.d.ch[qCompute])
	cc := fakeChanOf(t, r.f, r.d.ch[qCopy])
	v1 := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	rest := stepToRelease(t, r.f, kc, r.d.wordGPU, v1)
	if len(rest.snap) == 0 || rest.addr < first.Address || rest.addr >= first.Address+uint64(first.Size) {
		t.Fatalf("the rest of value %d's words (%d at 0x%x) is not in the grown ring", v1, len(rest.snap), rest.addr)
	}
	// A submission that needs a larger ring: Grow makes it, and that
	// submission gives up.
	big := device.Submission{Value: r.v + 1, Parts: fills(600)}
	if a := r.d.Room(&big); a.Kind != device.RoomGrow {
		t.Fatalf("room of 600 fills on the grown ring: %+v", a)
	}
	if err := r.d.Grow(); err != nil {
		t.Fatal(err)
	}
	// Another submission takes the value, on the copy channel alone: its
	// Room puts the new ring in place.
	v2 := r.submit(nil, fillPart(qCopy, m, 64, 8, 2))
	if r.d.ch[qCompute].segMem == first {
		t.Fatal("the new ring was not put in place")
	}
	stepToRelease(t, r.f, cc, r.d.wordGPU, v2)
	if got := r.d.Signaled(); got != v2 {
		t.Fatalf("the word reads %d, not %d", got, v2)
	}
	r.alloc(device.PinnedMemory, 4096) // reaps
	r.f.mu.Lock()
	gone := r.f.bytesAt(rest.addr, 4*uint64(len(rest.snap))) == nil
	r.f.mu.Unlock()
	if gone {
		t.Errorf("the replaced segment ring was freed once the word reached value %d, of the copy channel alone, with the %d words after value %d's release unread by the compute channel",
			v2, len(rest.snap), v1)
	} else {
		rest.readBy(t, r.f, kc)
	}
	r.f.resume()
	r.wait(r.v)
	// A value on the compute channel shows it went past them: the ring
	// goes back at the next reap.
	r.wait(r.submit(nil, fillPart(qCompute, m, 0, 8, 3)))
	r.alloc(device.PinnedMemory, 4096)
	r.f.mu.Lock()
	gone = r.f.bytesAt(rest.addr, 4) == nil
	r.f.mu.Unlock()
	if !gone {
		t.Error("the replaced segment ring stayed after a value ran on its channel")
	}
}
