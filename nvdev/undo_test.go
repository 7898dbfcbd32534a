package nvdev

import (
	"errors"
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

// TestRegrowFailureHeldUntilStop: what a failed regrowth could not undo
// (a channel group the RM refused to free, and the memory its channels
// name) goes back at Stop once the path has stopped, in a group of its
// own and in the shared group, where the set also leaves the group; where
// the path did not stop, it stays.
func TestRegrowFailureHeldUntilStop(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    Config
		refuse uint32 // the class whose free the RM refuses
		stop   error  // the path's Stop's answer
		left   bool   // memory stays after Stop
	}{
		{"own group", Config{RingEntries: 16}, nvidia.ClassChannelGroup, nil, false},
		{"shared group", Config{RingEntries: 16, SharedGroup: true}, nvidia.ClassContextShare, nil, false},
		{"path not stopped", Config{RingEntries: 16}, nvidia.ClassChannelGroup, errors.New("the RM kept a group"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := openRaw(t, c.cfg)
			s := device.Submission{Value: r.v + 1, Parts: []device.Part{{Kind: device.Words, Queue: qCompute, Words: make([]uint32, 2*20)}}}
			if a := r.d.Room(&s); a.Kind != device.RoomGrow {
				t.Fatalf("room of 20 entries on a ring of 16: %+v", a)
			}
			r.f.mu.Lock()
			r.f.refuse[r.f.gpu.Copy] = true
			r.f.refuseFree = map[uint32]bool{c.refuse: true}
			r.f.mu.Unlock()
			if err := r.d.Grow(); err == nil {
				t.Fatal("grow succeeded with the copy class refused")
			}
			r.f.mu.Lock()
			r.f.refuse[r.f.gpu.Copy] = false
			r.f.refuseFree = nil
			r.f.stopErr = c.stop
			r.f.mu.Unlock()
			var grp *sharedGroup
			if c.cfg.SharedGroup {
				grp = r.d.grp
			}
			// The RM freed the device's own sets: Stop reports no
			// fault, whatever the path answers.
			if err := r.d.Stop(""); err != nil {
				t.Fatalf("stop: %v", err)
			}
			if got := r.f.live(); (got != 0) != c.left {
				t.Errorf("%d memories left after stop, want left %v", got, c.left)
			}
			if grp != nil {
				groups.mu.Lock()
				n := len(grp.sets)
				groups.mu.Unlock()
				if n != 0 {
					t.Errorf("%d channel sets counted in the shared group after stop", n)
				}
			}
		})
	}
}

// TestMakeFailureGivenBackAtClose: what a failed make could not undo (a
// channel group the RM refused to free, and the memory its channels name)
// goes back as the opener closes the path, once the path has stopped;
// where the path did not stop, it stays.
func TestMakeFailureGivenBackAtClose(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		stop error // the path's Stop's answer
		left bool  // memory stays after the close
	}{
		{"own group", Config{}, nil, false},
		{"path not stopped", Config{}, errors.New("the RM kept a group"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.refuse[f.gpu.Copy] = true
			f.refuseFree = map[uint32]bool{nvidia.ClassChannelGroup: true}
			_, err := f.open(new(uint64), c.cfg)
			if err == nil {
				t.Fatal("make succeeded with the copy class refused")
			}
			if f.live() == 0 {
				t.Fatalf("make gave back the memory the kept channel group names (%v)", err)
			}
			f.mu.Lock()
			f.refuseFree = nil
			f.stopErr = c.stop
			f.mu.Unlock()
			closeMade(f, err)
			if got := f.live(); (got != 0) != c.left {
				t.Errorf("%d memories left after the close, want left %v", got, c.left)
			}
		})
	}
}
