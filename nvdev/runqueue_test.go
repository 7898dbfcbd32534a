package nvdev

import (
	"bytes"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestCopyRunqueue checks the runqueues the channels are allocated on: the
// copy channel on the group's second (NVOS04 GROUP_CHANNEL_RUNQUEUE_ONE),
// the compute channel on its first; both on the first with OneRunqueue,
// or where the RM refuses the second runqueue or the copy engine on it.
// An odd timeline of the shared group takes the other places: its compute
// channel on the second, its copy channel on the first, unless the RM
// refuses the second runqueue (both on the first) or the compute engine
// on it (the places above). Each device leaves two channels and runs
// copies on both queues.
func TestCopyRunqueue(t *testing.T) {
	odd := Config{SharedGroup: true, Timeline: 1}
	for _, tc := range []struct {
		name                    string
		c                       Config
		noRQ, noCopy, noCompute bool
		computeFlags, copyFlags uint32
	}{
		{name: "default", copyFlags: nvidia.ChannelRunqueueOne},
		{name: "OneRunqueue", c: Config{OneRunqueue: true}},
		{name: "second runqueue refused", noRQ: true},
		{name: "copy engine refused on the second runqueue", noCopy: true},
		{name: "even timeline of the shared group", c: Config{SharedGroup: true, Timeline: 2}, copyFlags: nvidia.ChannelRunqueueOne},
		{name: "odd timeline of the shared group", c: odd, computeFlags: nvidia.ChannelRunqueueOne},
		{name: "odd timeline, OneRunqueue", c: Config{SharedGroup: true, Timeline: 1, OneRunqueue: true}},
		{name: "odd timeline, second runqueue refused", c: odd, noRQ: true},
		{name: "odd timeline, compute engine refused on the second runqueue", c: odd, noCompute: true, copyFlags: nvidia.ChannelRunqueueOne},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.noRunqueue, f.noRunqueueCopy, f.noRunqueueCompute = tc.noRQ, tc.noCopy, tc.noCompute
			slot, w, err := timeline.Take()
			if err != nil {
				t.Fatal(err)
			}
			d, err := f.open(w, tc.c)
			if err != nil {
				timeline.Give(slot)
				t.Fatal(err)
			}
			r := &raw{t: t, f: f, d: d, slot: slot, v: d.Signaled()}
			t.Cleanup(r.close)
			if n := f.objectsOf(f.gpu.Channel); n != 2 {
				t.Errorf("%d channels, want 2", n)
			}
			want := [2]uint32{qCompute: tc.computeFlags, qCopy: tc.copyFlags}
			for q, ch := range d.ch {
				var fc *fakeChan
				for _, c := range f.chans {
					if c.h == ch.h {
						fc = c
					}
				}
				if fc == nil {
					t.Fatalf("the %s channel 0x%x is not the RM's", ch.name, ch.h)
				}
				if fc.flags != want[q] || ch.flags != want[q] {
					t.Errorf("the %s channel was allocated with flags 0x%x (recorded 0x%x), want 0x%x", ch.name, fc.flags, ch.flags, want[q])
				}
			}
			a := r.alloc(device.PinnedMemory, 4096)
			b := r.alloc(device.DeviceMemory, 4096)
			c := r.alloc(device.PinnedMemory, 4096)
			for i := range hostOf(a) {
				hostOf(a)[i] = byte(i * 5)
			}
			r.wait(r.submit(nil, copyPart(qCopy, a, b, 0, 0, 4096), after(copyPart(qCompute, b, c, 0, 0, 4096), 0)))
			if !bytes.Equal(hostOf(c), hostOf(a)) {
				t.Error("the copies across the queues moved the wrong bytes")
			}
		})
	}
}
