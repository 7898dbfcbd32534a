package rig

import (
	"context"
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/reclaim"
)

// TestGrowthsBeforeAShortRunItsRounds: a submission whose queues grew
// several times before the driver answered a Short runs the rounds of
// reclamation for that Short, as one whose first growth was short does:
// growths that succeeded use up none of them. Only Shorts past the last
// round return an *OutOfMemoryError, whose rounds ran.
func TestGrowthsBeforeAShortRunItsRounds(t *testing.T) {
	f := newFake()
	d := openFake(t, "grown-then-short", f)
	s := empty(t, d)
	for range 5 {
		f.rooms = append(f.rooms, device.RoomAnswer{Kind: device.RoomGrow})
		f.growth = append(f.growth, nil)
	}
	f.rooms = append(f.rooms, device.RoomAnswer{Kind: device.RoomGrow}, device.RoomAnswer{Kind: device.RoomGrow})
	f.growth = append(f.growth, &device.Short{N: 4096}, nil)
	if _, err := s.Take().Submit(context.Background()); err != nil {
		t.Fatalf("five growths, a Short and a growth after its round answered %v, want the submission", err)
	}
	if got := d.Stats().ReclaimRounds; got != 1 {
		t.Fatalf("%d rounds of reclamation for one Short, want 1", got)
	}
	if f.grows != 7 || f.count() != 1 {
		t.Fatalf("%d growths and %d submissions, want 7 and 1", f.grows, f.count())
	}

	// Past growths that succeeded, Shorts still fail only after every
	// round ran.
	for range 5 {
		f.rooms = append(f.rooms, device.RoomAnswer{Kind: device.RoomGrow})
		f.growth = append(f.growth, nil)
	}
	for range reclaim.Rounds + 1 {
		f.rooms = append(f.rooms, device.RoomAnswer{Kind: device.RoomGrow})
		f.growth = append(f.growth, &device.Short{N: 4096})
	}
	_, err := s.Take().Submit(context.Background())
	var oom *OutOfMemoryError
	if !errors.Is(err, ErrOutOfMemory) || !errors.As(err, &oom) || oom.Lacking != 4096 {
		t.Fatalf("after %d Shorts: %v", reclaim.Rounds+1, err)
	}
	if got := d.Stats().ReclaimRounds; got != 1+reclaim.Rounds {
		t.Fatalf("%d rounds of reclamation in all, want %d", got, 1+reclaim.Rounds)
	}
}
