package rig

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestSubmitKeepsItsBuffers: a buffer whose only reference is Submit's
// argument stays allocated while the submission waits for a growth of
// the driver's queues, during which the garbage collector runs, and the
// submission runs.
func TestSubmitKeepsItsBuffers(t *testing.T) {
	f := newFake()
	d := openFake(t, "keeps-buffers", f)
	s, err := NewSubmission(d, FillBytes(0, 0, 64, 0xab))
	if err != nil {
		t.Fatal(err)
	}
	f.rooms = []device.RoomAnswer{{Kind: device.RoomGrow}}
	collected := 0
	f.onGrow = func() {
		for range 4 {
			runtime.GC()
			time.Sleep(time.Millisecond) // the cleanups run on a goroutine of their own
		}
		collected++
	}
	p, err := submitFresh(d, s)
	if errors.Is(err, ErrFreed) {
		t.Fatalf("Submit of a buffer its arguments alone held, with a collection while it waited for a growth = %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if collected != 1 {
		t.Fatalf("%d growths, want 1", collected)
	}
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// submitFresh submits s with a new buffer that nothing else holds.
//
//go:noinline
func submitFresh(d *Device, s *Submission) (Point, error) {
	b, err := d.Alloc(device.DeviceMemory, 4096)
	if err != nil {
		return Point{}, err
	}
	return s.Take().Submit(context.Background(), b)
}
