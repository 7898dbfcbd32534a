package nvdev

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestRegrowFirstWordsLater checks that a regrowth does not wait for the
// new channels' first words while earlier values are in flight: Grow
// returns with the fake paused (as a GPU holds a second channel group
// behind the work of the first), and Room answers RoomLater while the
// values before run. Where they are all reached and the first words have
// not run yet, Room answers RoomGrow, that Grow waits for the first
// words, and the next Room switches the channels.
func TestRegrowFirstWordsLater(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64})
	m := r.alloc(device.PinnedMemory, 4096)
	r.f.pause()
	before := r.submit(nil, fillPart(qCopy, m, 0, 8, 3))
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{bigWords(r, m, 100, 1)}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 100 entries on rings of 64: %+v", a)
	}
	// A Grow that waited for the first words, which the paused fake does
	// not run, would return its setup's error.
	if err := r.d.Grow(); err != nil {
		t.Fatal(err)
	}
	g := r.d.grown.set
	if g == nil || g.ready() {
		t.Fatalf("after Grow: set %v, ready: the first words ran on a paused fake", g)
	}
	if a := r.d.Room(&s); a.Kind != device.RoomLater {
		t.Fatalf("room with value %d in flight: %+v, want RoomLater", before, a)
	}
	// The value before runs (its release, as the paused fake would
	// write it), and the new channels still wait their turn.
	atomic.StoreUint64(r.d.word, before)
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room with every value reached and the first words not run: %+v, want RoomGrow", a)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.f.resume()
	}()
	if err := r.d.Grow(); err != nil {
		t.Fatalf("grow that waits for the first words: %v", err)
	}
	if !g.ready() {
		t.Fatal("Grow returned before the first words ran")
	}
	r.wait(before)
	if a := r.d.Room(&s); a.Kind != device.RoomOK {
		t.Fatalf("room after the first words ran: %+v", a)
	}
	if r.d.grown.set != nil || r.d.ch[qCompute] != g.ch[qCompute] {
		t.Fatal("the room did not switch to the new channels")
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		t.Fatalf("submit: %+v", a)
	}
	r.d.Kick(r.v)
	r.wait(r.v)
	if got := binary.LittleEndian.Uint64(hostOf(m)[64:]); got != 1 {
		t.Errorf("the Words on the new channels released %d, want 1", got)
	}
}

// TestRegrowGrownOnce: where every value is reached when Grow opens the
// new channels, Grow waits for their first words, so that the next Room
// switches to them and does not answer RoomGrow again for the parts Grow
// answered for.
func TestRegrowGrownOnce(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 16})
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{{Kind: device.Words, Queue: qCompute, Words: make([]uint32, 2*20)}}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 20 entries on a ring of 16: %+v", a)
	}
	r.f.pause()
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.f.resume()
	}()
	if err := r.d.Grow(); err != nil {
		t.Fatalf("grow: %v", err)
	}
	if a := r.d.Room(&s); a.Kind != device.RoomOK {
		t.Errorf("room after Grow answered Grown: %+v, want RoomOK on the new channels", a)
	}
}

// TestRegrowFirstWordsFault fails the first words of the channels a
// regrowth opened (the RM's error in the new compute channel's notifier):
// Grow returns a *device.Fault, which loses the device, and Sleep raises
// the same fault from then on, rather than every later submission
// answering an error that loses nothing.
func TestRegrowFirstWordsFault(t *testing.T) {
	r := openRaw(t, Config{RingEntries: 64})
	m := r.alloc(device.PinnedMemory, 4096)
	r.f.pause()
	defer r.f.resume()
	before := r.submit(nil, fillPart(qCopy, m, 0, 8, 3))
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{bigWords(r, m, 100, 1)}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 100 entries on rings of 64: %+v", a)
	}
	if err := r.d.Grow(); err != nil {
		t.Fatal(err)
	}
	g := r.d.grown.set
	for _, c := range r.f.chans {
		if c.h == g.ch[qCompute].h {
			r.f.fail(c, 31)
		}
	}
	// The value before runs (its release, as the paused fake would
	// write it).
	atomic.StoreUint64(r.d.word, before)
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room with every value reached and the first words not run: %+v, want RoomGrow", a)
	}
	err := r.d.Grow()
	f, ok := device.AsFault(err)
	if !ok {
		t.Fatalf("grow whose new channels faulted: %v, want a fault", err)
	}
	if err := r.d.Sleep(r.d.Signaled(), time.Millisecond); err != error(f) {
		t.Errorf("Sleep after the fault: %v, want %v", err, f)
	}
}
