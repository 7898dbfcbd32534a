package nvdev

import (
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestRegrowUnrunAlone: a regrowth of a timeline of the shared group
// whose new channels have not run their first words within the bound,
// every earlier value reached and no notifier holding an error, loses
// that timeline alone: the RM stopped no channel of the group (its new
// channels may wait behind another timeline's work), so the group stays
// unfaulted and the other timeline keeps running in it. A notifier's
// error in the new channels is the group's, and faults it.
func TestRegrowUnrunAlone(t *testing.T) {
	for _, notify := range []bool{false, true} {
		t.Run(map[bool]string{false: "unrun", true: "notifier"}[notify], func(t *testing.T) {
			old := setupTimeout
			setupTimeout = time.Millisecond
			defer func() { setupTimeout = old }()
			f := newFake()
			a := rawOn(t, f, Config{RingEntries: regrowRing, SharedGroup: true})
			defer a.close()
			b := rawOn(t, f, Config{Timeline: 1, SharedGroup: true})
			defer b.close()
			m := a.alloc(device.PinnedMemory, 4096)
			a.wait(a.submit(nil, fillPart(qCopy, m, 0, 8, 1)))
			f.pause()
			if notify {
				// The RM reports an error in each new channel's notifier
				// as it opens it: the group's channels stopped.
				a.d.rm = failingChannels{fakeRM{f}}
			}
			s := device.Submission{Value: a.v + 1, Parts: []device.Part{bigWords(a, m, 100, 1)}}
			if ans := a.d.Room(&s); ans.Kind != device.RoomGrow {
				t.Fatalf("room of a value that needs the rings anew: %+v", ans)
			}
			err := a.d.Grow()
			fl, ok := device.AsFault(err)
			if !ok {
				t.Fatalf("a regrowth whose channels did not run: %v, want a *device.Fault", err)
			}
			if fl.Alone == notify {
				t.Errorf("the regrowth's fault is alone %v, want %v: %v", fl.Alone, !notify, fl)
			}
			groups.mu.Lock()
			faulted := b.d.grp.faulted
			groups.mu.Unlock()
			if faulted != notify {
				t.Errorf("the group faulted %v, want %v", faulted, notify)
			}
			f.resume()
			if !notify {
				// B goes on in the group.
				out := b.alloc(device.PinnedMemory, 4096)
				b.wait(b.submit(nil, fillPart(qCopy, out, 0, 8, 5)))
				if hostOf(out)[0] != 5 {
					t.Error("the other timeline's work did not run")
				}
			}
		})
	}
}

// failingChannels is the fake's RM, which writes an error into the
// notifier of each channel it makes.
type failingChannels struct{ fakeRM }

func (r failingChannels) Alloc(parent nvidia.Handle, class uint32, params []byte) (nvidia.Handle, error) {
	h, err := r.fakeRM.Alloc(parent, class, params)
	if err == nil && class == r.f.gpu.Channel {
		r.f.mu.Lock()
		for _, c := range r.f.chans {
			if c.h == h {
				r.f.fail(c, 31)
			}
		}
		r.f.mu.Unlock()
	}
	return h, err
}
