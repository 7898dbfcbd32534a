package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestRegrowFailureKeepsHeldMemory: a regrowth whose channels fail after
// the RM made their channel group undoes what it made; where the RM
// refuses to free the group, and so keeps the channels under it, which
// name their rings, USERD and notifiers, that memory stays taken.
func TestRegrowFailureKeepsHeldMemory(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 16})
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{{Kind: device.Words, Queue: qCompute, Words: make([]uint32, 2*20)}}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 20 entries on a ring of 16: %+v", a)
	}
	before := r.f.live()
	groups := r.f.objectsOf(nvidia.ClassChannelGroup)
	r.f.mu.Lock()
	r.f.refuse[r.f.gpu.Copy] = true
	r.f.refuseFree = map[uint32]bool{nvidia.ClassChannelGroup: true}
	r.f.mu.Unlock()
	err := r.d.Grow()
	if err == nil {
		t.Fatal("grow succeeded with the copy class refused")
	}
	kept := r.f.objectsOf(nvidia.ClassChannelGroup) - groups
	after := r.f.live()
	r.f.mu.Lock()
	r.f.refuse[r.f.gpu.Copy] = false
	r.f.refuseFree = nil
	r.f.mu.Unlock()
	if kept != 1 {
		t.Fatalf("%d channel groups kept by the RM", kept)
	}
	if after <= before {
		t.Errorf("the RM kept the new channel group and its channels, yet their memory went back: %d memories before grow, %d after (grow: %v)", before, after, err)
	}
}

// TestMakeFailureKeepsHeldMemory: as a regrowth's, make's undo keeps the
// memory that a channel group the RM refused to free names.
func TestMakeFailureKeepsHeldMemory(t *testing.T) {
	f := newFake()
	f.refuse[f.gpu.Copy] = true
	f.refuseFree = map[uint32]bool{nvidia.ClassChannelGroup: true}
	w := new(uint64)
	_, err := f.open(w, Config{})
	if err == nil {
		t.Fatal("make succeeded with the copy class refused")
	}
	if n := f.objectsOf(nvidia.ClassChannelGroup); n != 1 {
		t.Fatalf("%d channel groups kept by the RM", n)
	}
	if f.live() == 0 {
		t.Errorf("the RM kept the channel group and its channels, yet make gave back all their memory (%v)", err)
	}
}
