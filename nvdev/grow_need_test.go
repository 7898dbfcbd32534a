package nvdev

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// shortFake is the fake whose Alloc refuses more than over bytes for want
// of memory, whatever memory is free.
type shortFake struct {
	*fake
	over int
}

func (p shortFake) Alloc(k device.Memory, n int) (*nvidia.Memory, error) {
	if n > p.over {
		return nil, fmt.Errorf("fake: %d bytes: %w", n, device.ErrNoMemory)
	}
	return p.fake.Alloc(k, n)
}

// TestGrowNeedOfGivenUpSubmission: a submission whose growth the path
// cannot make (Grow answers Short) and that then gives up leaves nothing
// of its need behind: a later submission's growth, which the path can
// make, is made, rather than fail on the given-up one's each time.
func TestGrowNeedOfGivenUpSubmission(t *testing.T) {
	r, fills := shortGrowth(t)
	// A submission of a segment beyond what the path gives: its growth
	// is Short, and it gives up.
	huge := device.Submission{Value: r.v + 1, Parts: fills(qCompute, 4000)}
	if a := r.d.Room(&huge); a.Kind != device.RoomGrow {
		t.Fatalf("room of 4000 fills on a segment ring of a page: %+v", a)
	}
	var sh *device.Short
	if err := r.d.Grow(); !errors.As(err, &sh) {
		t.Fatalf("grow of a segment ring past the path's %d bytes: %v, want Short", 64<<10, err)
	}
	// The next submission needs a growth the path makes.
	s := device.Submission{Value: r.v + 1, Parts: fills(qCopy, 150)}
	for i := 0; ; i++ {
		a := r.d.Room(&s)
		if a.Kind == device.RoomOK {
			break
		}
		if a.Kind != device.RoomGrow {
			t.Fatalf("room of 150 fills on the copy channel: %+v", a)
		}
		if i == 4 {
			t.Fatal("room of 150 fills on the copy channel asks for growth after 4 grows")
		}
		if err := r.d.Grow(); err != nil {
			if i == 3 {
				t.Fatalf("grow for 150 fills on the copy channel, after a submission whose growth was Short gave up: %v", err)
			}
		}
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		t.Fatalf("submit: %+v", a)
	}
	r.d.Kick(r.v)
	r.wait(r.v)
}

// TestGrowShortLeavesOthersNeed: rig calls Grow outside its submit lock,
// so that the need Grow reads may hold two submissions': one whose
// segment ring the path cannot make, and another's, which it can. The
// Grow answers Short for the first, and still makes the second's ring: that
// submission's next Room admits it, rather than ask for a growth that fails
// again each time the other submission asks anew, until rig gives it up
// for want of memory the path had.
func TestGrowShortLeavesOthersNeed(t *testing.T) {
	r, fills := shortGrowth(t)
	huge := device.Submission{Value: r.v + 1, Parts: fills(qCompute, 4000)}
	small := device.Submission{Value: r.v + 1, Parts: fills(qCopy, 150)}
	for range 3 {
		// Each asks for its growth, the huge one again after its Short.
		if a := r.d.Room(&huge); a.Kind != device.RoomGrow {
			t.Fatalf("room of 4000 fills on a segment ring of a page: %+v", a)
		}
		a := r.d.Room(&small)
		if a.Kind == device.RoomOK {
			break
		}
		if a.Kind != device.RoomGrow {
			t.Fatalf("room of 150 fills on the copy channel: %+v", a)
		}
		var sh *device.Short
		if err := r.d.Grow(); !errors.As(err, &sh) {
			t.Fatalf("grow of a segment ring past the path's %d bytes: %v, want Short", 64<<10, err)
		}
	}
	if a := r.d.Room(&small); a.Kind != device.RoomOK {
		t.Fatalf("room of 150 fills on the copy channel, after Grows that were Short for another submission's ring alone: %+v", a)
	}
	r.v++
	if a := r.d.Submit(&small); a.Kind != device.Committed {
		t.Fatalf("submit: %+v", a)
	}
	r.d.Kick(r.v)
	r.wait(r.v)
}

// shortGrowth opens a device on a path that gives 64 KiB of memory, with
// segment rings of a page, and returns it with fills(q, k): k fills of 8
// bytes on queue q into a page of Pinned memory.
func shortGrowth(t *testing.T) (r *raw, fills func(q, k int) []device.Part) {
	t.Helper()
	f := newFake()
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	d, err := makeDevice(w, shortFake{f, 64 << 10}, fakeRM{f}, Config{SegmentBytes: 4096, LaunchBytes: 4096, RingEntries: 1024, CopyKernels: -1})
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	r = &raw{t: t, f: f, d: d, slot: slot, v: atomic.LoadUint64(w)}
	t.Cleanup(r.close)
	m := r.alloc(device.PinnedMemory, 4096)
	return r, func(q, k int) []device.Part {
		var ps []device.Part
		for i := range k {
			ps = append(ps, fillPart(q, m, uint64(8*(i%64)), 8, byte(i)))
		}
		return ps
	}
}
