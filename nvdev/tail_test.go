package nvdev

import (
	"encoding/binary"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// The words after a value's release. The fake decodes a whole entry's
// words as it fetches the entry; a channel on a GPU fetches its push buffer
// as it goes, and may still have to fetch the words that follow a release
// when the release has reached the word. stepToRelease runs a channel of
// the paused fake the way a PBDMA may: one method at a time, read from
// memory as it executes, stopping right after the release of a given
// value, with the rest of the entry still unread.

// stepRest is the unread rest of the entry a stepped channel stopped in:
// its GPU address, and the words it held when the channel stopped.
type stepRest struct {
	addr uint64
	snap []uint32
}

// fakeChanOf is the fake's channel behind channel ch of the device.
func fakeChanOf(t *testing.T, f *fake, ch *channel) *fakeChan {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.chans {
		if c.gpPut == ch.gpPut {
			return c
		}
	}
	t.Fatalf("no fake channel for the %s channel", ch.name)
	return nil
}

// methodWords is the number of words of the method at the head of ws.
func methodWords(ws []uint32) int {
	h := hw.DecodeHeader(ws[0])
	if h.Op == hw.OpImmd || ws[0] == 0 {
		return 1
	}
	return 1 + int(h.Count)
}

// stepToRelease runs channel c of the paused fake, reading its words from
// memory one method at a time, until it has released v into the word at
// addr, and returns the rest of that entry, which it has not read.
func stepToRelease(t *testing.T, f *fake, c *fakeChan, addr, v uint64) stepRest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.paused || c.pi < len(c.pending) {
		t.Fatal("stepToRelease needs a paused fake whose channel has nothing decoded")
	}
	for {
		put := uint64(atomic.LoadUint32(c.gpPut))
		if c.get == put {
			t.Fatalf("the channel ran out of entries before it released %d", v)
		}
		e := hw.Entry(binary.LittleEndian.Uint64(f.bytesAt(c.ring+8*c.get, 8)))
		c.get = (c.get + 1) % c.entries
		if op, ok := e.Control(); ok {
			if op == hw.EntryOpExtendedBase {
				c.base = e.Base()
			}
			continue
		}
		a, n := c.base|e.Address(), int(e.Length())
		b := f.bytesAt(a, 4*uint64(n))
		words := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
		for i := 0; i < n; {
			k := methodWords(words[i:])
			ws, err := hw.Decode(words[i : i+k])
			if err != nil {
				t.Fatalf("decoding the channel's words: %v", err)
			}
			released := false
			for _, w := range ws {
				if !f.exec(c, w) {
					t.Fatalf("the channel stalled on %+v before it released %d", w, v)
				}
				if w.Subchannel == hw.SubHost && w.Method == hw.HostSemExecute && w.Value&7 == hw.SemRelease &&
					uint64(c.sem[1])<<32|uint64(c.sem[0]) == addr && uint64(c.sem[3])<<32|uint64(c.sem[2]) == v {
					released = true
				}
			}
			i += k
			if released {
				return stepRest{addr: a + 4*uint64(i), snap: slices.Clone(words[i:])}
			}
		}
	}
}

// readBy has channel c of the paused fake read the rest's words as they
// are now, next, as a PBDMA that had not fetched them does.
func (r stepRest) readBy(t *testing.T, f *fake, c *fakeChan) {
	t.Helper()
	ws, err := hw.Decode(r.now(f))
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	c.pending, c.pi = ws, 0
	f.mu.Unlock()
}

// now is what the rest's words hold now.
func (r stepRest) now(f *fake) []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(r.snap) == 0 {
		return nil
	}
	b := f.bytesAt(r.addr, 4*uint64(len(r.snap)))
	return slices.Clone(unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(r.snap)))
}

// TestWordsAfterReleaseKept: a value's words on its channel end with its
// release, then the non-stall interrupt where waiters are parked (and, in
// a subcontext of the shared group, the YIELD), which the channel may read
// after the word shows the value. The next value's words, also where the
// word reached the last value and the ring would start over, are stored
// elsewhere: the channel reads the interrupt and the yield as they were.
func TestWordsAfterReleaseKept(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		ev   bool
	}{
		{"interrupt", Config{}, true},
		{"yield", Config{SharedGroup: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openRaw(t, tc.c)
			if tc.ev {
				withEvent(r)
			}
			m := r.alloc(device.PinnedMemory, 4096)
			if tc.ev {
				parkWaiters(r)
			}
			r.f.pause()
			c := fakeChanOf(t, r.f, r.d.ch[qCompute])
			v1 := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
			if tc.ev && r.d.wk.intrs.Load() != 1 {
				t.Fatalf("value %d was not planned with the interrupt", v1)
			}
			rest := stepToRelease(t, r.f, c, r.d.wordGPU, v1)
			if r.d.Signaled() != v1 {
				t.Fatalf("the word reads %d after the release of %d", r.d.Signaled(), v1)
			}
			if len(rest.snap) == 0 {
				t.Fatal("nothing follows the release in its entry")
			}
			want, err := hw.Decode(rest.snap)
			if err != nil {
				t.Fatal(err)
			}
			// The next value, submitted now that the word shows v1, as rig's
			// next submitter does.
			r.submit(nil, fillPart(qCompute, m, 0, 8, 2), fillPart(qCompute, m, 8, 8, 3), fillPart(qCompute, m, 16, 8, 4))
			got := rest.now(r.f)
			if !slices.Equal(got, rest.snap) {
				ws, derr := hw.Decode(got)
				t.Errorf("the next value's Room and Submit stored over the %d words the channel had yet to read after the release of %d:\n was %08x (%+v)\n now %08x (%+v, %v)",
					len(got), v1, rest.snap, want, got, ws, derr)
			}
			// The channel reads the rest now, as a PBDMA that had not
			// fetched it does.
			r.f.mu.Lock()
			ws, derr := hw.Decode(got)
			intrs := r.f.intrs
			if derr == nil {
				c.pending, c.pi = ws, 0
			}
			r.f.mu.Unlock()
			if derr != nil {
				t.Errorf("the rest of value %d's entry no longer decodes: %v (a PBDMA error on a GPU)", v1, derr)
			}
			r.f.resume()
			r.wait(r.v)
			if tc.ev && r.f.intrs-intrs < 2 {
				t.Errorf("%d interrupts for values %d and %d, both planned with one: value %d's was overwritten", r.f.intrs-intrs, v1, r.v, v1)
			}
		})
	}
}

// TestRetiredRingKeepsWordsAfterRelease: a segment ring a growth replaced
// holds the words after the last value's release on it (its non-stall
// interrupt), which the channel may read after the word shows the value:
// the ring goes back only once a later value ran, not at the next Alloc.
func TestRetiredRingKeepsWordsAfterRelease(t *testing.T) {
	r, m, first := pausedAfterGrowth(t)
	fills := func(k int) []device.Part { return computeFills(m, k) }
	c := fakeChanOf(t, r.f, r.d.ch[qCompute])
	v1 := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	rest := stepToRelease(t, r.f, c, r.d.wordGPU, v1)
	if len(rest.snap) == 0 || rest.addr < first.Address || rest.addr >= first.Address+uint64(first.Size) {
		t.Fatalf("the rest of value %d's words (%d at 0x%x) is not in the grown ring", v1, len(rest.snap), rest.addr)
	}
	// A second growth replaces that ring; the next Alloc reaps.
	r.submit(nil, fills(600)...)
	if r.d.ch[qCompute].segMem == first {
		t.Fatal("no second growth")
	}
	r.alloc(device.PinnedMemory, 4096)
	r.f.mu.Lock()
	gone := r.f.bytesAt(rest.addr, 4*uint64(len(rest.snap))) == nil
	r.f.mu.Unlock()
	if gone {
		t.Errorf("the replaced segment ring was freed with the %d words after value %d's release unread by the channel", len(rest.snap), v1)
	} else {
		// The channel reads them now.
		ws, _ := hw.Decode(rest.now(r.f))
		r.f.mu.Lock()
		c.pending = ws
		r.f.mu.Unlock()
	}
	r.f.resume()
	r.wait(r.v)
}

// TestLargeValueBesideWordsAfterRelease: where every value ran but the
// last one's words after its release may be unread, and the next value
// fits the segment ring neither after them nor before them from the
// ring's start, Room asks for a fresh ring rather than store over them;
// the value then runs on the new ring, and the old one's interrupt is
// read as it was.
func TestLargeValueBesideWordsAfterRelease(t *testing.T) {
	r := openRaw(t, Config{SegmentBytes: 4096})
	withEvent(r)
	m := r.alloc(device.PinnedMemory, 4096)
	fills := func(k int, tag byte) []device.Part {
		var ps []device.Part
		for i := range k {
			ps = append(ps, fillPart(qCompute, m, uint64(8*(i%64)), 8, tag))
		}
		return ps
	}
	parkWaiters(r)
	r.f.pause()
	c := fakeChanOf(t, r.f, r.d.ch[qCompute])
	v1 := r.submit(nil, fills(40, 1)...)
	rest := stepToRelease(t, r.f, c, r.d.wordGPU, v1)
	if len(rest.snap) == 0 {
		t.Fatal("nothing follows the release in its entry")
	}
	r.submit(nil, fills(45, 2)...)
	if r.d.ch[qCompute].segMem == nil {
		t.Errorf("value %d ran on the segment ring of the value before, %d words, whose last words may be unread", r.v, len(r.d.ch[qCompute].seg))
	}
	if got := rest.now(r.f); !slices.Equal(got, rest.snap) {
		t.Fatalf("the next value stored over the %d words after the release of %d: was %08x, now %08x", len(got), v1, rest.snap, got)
	}
	rest.readBy(t, r.f, c)
	r.f.resume()
	r.wait(r.v)
	if got := hostOf(m)[0]; got != 2 {
		t.Errorf("the large value's fills wrote %d, want 2", got)
	}
}

// computeFills is k fills of 8 bytes of m on the compute channel.
func computeFills(m *nvidia.Memory, k int) []device.Part {
	var ps []device.Part
	for i := range k {
		ps = append(ps, fillPart(qCompute, m, uint64(8*(i%64)), 8, byte(i)))
	}
	return ps
}

// pausedAfterGrowth opens a device with segment rings of a page and a
// page of Pinned memory m, grows the compute channel's ring
// (grownSegRing), parks waiters and pauses the fake's channels. It
// returns the grown ring as first.
func pausedAfterGrowth(t *testing.T) (r *raw, m, first *nvidia.Memory) {
	t.Helper()
	r = openRaw(t, Config{SegmentBytes: 4096})
	withEvent(r)
	m = r.alloc(device.PinnedMemory, 4096)
	first = grownSegRing(t, r, m)
	parkWaiters(r)
	r.f.pause()
	return r, m, first
}

// grownSegRing submits enough fills that the compute channel's segment
// ring grows, and returns the ring, one of a growth's, which the next
// growth replaces.
func grownSegRing(t *testing.T, r *raw, m *nvidia.Memory) *nvidia.Memory {
	t.Helper()
	r.wait(r.submit(nil, computeFills(m, 150)...))
	first := r.d.ch[qCompute].segMem
	if first == nil {
		t.Fatal("no growth of the compute channel's segment ring")
	}
	return first
}
