package nvdev

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
	rig "github.com/rig-go/rig/runtime"
)

// rawOn opens a device on the fake f, which the caller closes.
func rawOn(t *testing.T, f *fake, c Config) *raw {
	t.Helper()
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.open(w, c)
	if err != nil {
		timeline.Give(slot)
		t.Fatal(err)
	}
	return &raw{t: t, f: f, d: d, slot: slot, v: atomic.LoadUint64(w)}
}

func TestTimelineNames(t *testing.T) {
	for _, c := range []struct {
		i, k int
		want string
	}{
		{0, 0, "NV"}, {0, 1, "NV/1"}, {2, 0, "NV:2"}, {2, 3, "NV:2/3"},
	} {
		if n := Timeline(c.i, c.k).Name; n != c.want {
			t.Errorf("Timeline(%d, %d) is named %q, want %q", c.i, c.k, n, c.want)
		}
	}
	if GPU(2).Name != Timeline(2, 0).Name {
		t.Error("GPU(2) is not Timeline(2, 0)")
	}
	for _, f := range []func(){func() { Timeline(0, -1) }, func() { Timeline(-1, 1) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a negative GPU or timeline did not panic")
				}
			}()
			f()
		}()
	}
}

// TestTimelinesShareGroup opens two timelines of one GPU: by default in
// one channel group, each with a context share of its own, naming the
// group's fault domain, their acquires yielding the group; with groups of their own
// in two groups of no domain. Either way they share memory at the same
// addresses, wait on each other's words on the GPU, and the group goes
// back with the last of them.
func TestTimelinesShareGroup(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "subcontexts", true: "own groups"}[own], func(t *testing.T) {
			f := newFake()
			a := rawOn(t, f, Config{SharedGroup: !own})
			b := rawOn(t, f, Config{Timeline: 1, SharedGroup: !own})
			groupsWant := map[bool]int{false: 1, true: 2}[own]
			count := func(what string, groups, shares, chans int) {
				t.Helper()
				if g, s, c := f.objectsOf(nvidia.ClassChannelGroup), f.objectsOf(nvidia.ClassContextShare), f.objectsOf(f.gpu.Channel); g != groups || s != shares || c != chans {
					t.Errorf("%s: %d channel groups, %d context shares, %d channels; want %d, %d, %d", what, g, s, c, groups, shares, chans)
				}
			}
			count("two timelines", groupsWant, 2, 4)
			da, db := a.d.Facts().FaultDomain, b.d.Facts().FaultDomain
			switch {
			case own && (da != "" || db != ""):
				t.Errorf("devices of groups of their own name fault domains %q and %q", da, db)
			case !own && (da == "" || da != db):
				t.Errorf("timelines of one group name fault domains %q and %q", da, db)
			}

			// Memory of A at its own address for B.
			m := a.alloc(device.DeviceMemory, 4096)
			v, err := b.d.MapPeer(a.d, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.(*nvidia.Memory).Address; got != m.Address {
				t.Errorf("B sees A's memory at 0x%x, not 0x%x", got, m.Address)
			}
			if err := b.d.Free(v); err != nil {
				t.Fatal(err)
			}

			// B waits on the GPU for A's next value.
			out := b.alloc(device.PinnedMemory, 4096)
			f.trace = map[string][]hw.Write{}
			vb := b.submit([]device.Wait{{Word: a.d.word, Value: a.v + 1}}, fillPart(qCopy, out, 0, 8, 7))
			b.pump()
			if hostOf(out)[0] != 0 || device.AtLeast(b.d.Signaled(), vb) {
				t.Fatal("B's work ran before A's value it waits for")
			}
			yields := false
			for _, ws := range f.trace {
				for _, w := range ws {
					if w.Subchannel == hw.SubHost && w.Method == hw.HostSemExecute && w.Value&0x7 == hw.SemAcqCircGEQ {
						yields = w.Value&hw.SemAcquireSwitch != 0
					}
				}
			}
			if yields == own {
				t.Errorf("B's acquire yields the group: %v", yields)
			}
			a.wait(a.submit(nil))
			b.wait(vb)
			if binary.LittleEndian.Uint64(hostOf(out)) != 0x0707070707070707 {
				t.Errorf("B's fill after A's value wrote %x", hostOf(out)[:8])
			}

			// A goes; B runs on, in the group that stays.
			a.close()
			count("A stopped", groupsWant-1+map[bool]int{false: 1, true: 0}[own], 1, 2)
			b.wait(b.submit(nil, fillPart(qCompute, out, 8, 8, 9)))
			if hostOf(out)[8] != 9 {
				t.Error("B did not run after A stopped")
			}
			b.close()
			count("both stopped", 0, 0, 0)
			groups.mu.Lock()
			for _, g := range groups.list {
				for _, o := range g.sets {
					if o == path(f) {
						t.Error("a group of the fake stays listed after its last device stopped")
					}
				}
			}
			groups.mu.Unlock()
		})
	}
}

// TestTimelinesRegrow regrows the channels of a timeline in the shared
// group: the new set joins the group with a context share of its own,
// and the replaced set's channels and context share go back while the
// group stays.
func TestTimelinesRegrow(t *testing.T) {
	f := newFake()
	r := rawOn(t, f, Config{RingEntries: regrowRing, SharedGroup: true})
	defer r.close()
	m := r.alloc(device.PinnedMemory, 4096)
	r.wait(r.submit(nil, bigWords(r, m, 100, 1)))
	if r.d.ch[qCompute].entries <= regrowRing {
		t.Fatalf("no regrowth: rings of %d entries", r.d.ch[qCompute].entries)
	}
	r.alloc(device.PinnedMemory, 4096) // the replaced set goes back here
	if n := len(r.d.oldSets); n != 0 {
		t.Fatalf("%d replaced sets held", n)
	}
	if g, s, c := f.objectsOf(nvidia.ClassChannelGroup), f.objectsOf(nvidia.ClassContextShare), f.objectsOf(f.gpu.Channel); g != 1 || s != 1 || c != 2 {
		t.Errorf("after a regrowth: %d channel groups, %d context shares, %d channels; want 1, 1, 2", g, s, c)
	}
	r.wait(r.submit(nil, fillPart(qCompute, m, 0, 8, 3)))
	if hostOf(m)[0] != 3 {
		t.Error("the regrown channels did not run")
	}
}

// schedRM is the fake's RM with the channel schedule and the disowning of
// nvidia.RM, which it records.
type schedRM struct {
	fakeRM
	groups, chans []nvidia.Handle
	disowned      []nvidia.Handle
}

func (r *schedRM) Schedule(g nvidia.Handle, _ *nvidia.ScheduleParams) error {
	r.groups = append(r.groups, g)
	return nil
}

func (r *schedRM) ScheduleChannel(ch nvidia.Handle, _ *nvidia.ScheduleParams) error {
	r.chans = append(r.chans, ch)
	return nil
}

func (r *schedRM) Disown(h nvidia.Handle) { r.disowned = append(r.disowned, h) }

// TestTimelinesSchedule checks that the first timeline schedules the
// shared group, made and disowned by its path, and that a later one
// schedules its own channels, which join the running group.
func TestTimelinesSchedule(t *testing.T) {
	f := newFake()
	rm := &schedRM{fakeRM: fakeRM{f}}
	var ws [2]uint64
	a, err := makeDevice(&ws[0], f, rm, Config{SharedGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop("")
	tsg := a.live.Load().grp.tsg
	if !slices.Equal(rm.groups, []nvidia.Handle{tsg}) || len(rm.chans) != 0 || !slices.Equal(rm.disowned, []nvidia.Handle{tsg}) {
		t.Fatalf("the first timeline: groups scheduled %x, channels %x, disowned %x; want the group 0x%x", rm.groups, rm.chans, rm.disowned, tsg)
	}
	b, err := makeDevice(&ws[1], f, rm, Config{Timeline: 1, SharedGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop("")
	if b.live.Load().grp.tsg != tsg {
		t.Fatal("the second timeline is in another group")
	}
	want := []nvidia.Handle{b.ch[qCompute].h, b.ch[qCopy].h}
	if len(rm.groups) != 1 || !slices.Equal(rm.chans, want) {
		t.Errorf("the second timeline: groups scheduled %x, channels %x; want its channels %x", rm.groups, rm.chans, want)
	}
}

// TestTimelinesFaultDomain faults a channel of timeline 1 through rig:
// timeline 0, of the same group, is lost with it; of a group of its own,
// it runs on.
func TestTimelinesFaultDomain(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "subcontexts", true: "own groups"}[own], func(t *testing.T) {
			f := newFake()
			open := func(k int) *rig.Device {
				op := f.opener(Config{Timeline: k, SharedGroup: !own})
				op.Name += "/" + strconv.Itoa(k)
				d, err := rig.Open(bg, op)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = d.Close()
					select {
					case <-d.Done():
					case <-time.After(10 * time.Second):
						t.Errorf("%s did not give everything back", d.Name())
					}
				})
				return d
			}
			a, b := open(0), open(1)
			f.pause()
			s, err := rig.NewSubmission(b)
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Take().Submit(bg)
			if err != nil {
				t.Fatal(err)
			}
			f.fail(f.chans[2], 31) // timeline 1's compute channel
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			if err := p.Wait(ctx); !errors.Is(err, rig.ErrLost) {
				t.Fatalf("timeline 1's fault answered %v", err)
			}
			f.resume()
			var aerr error
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
				if _, aerr = a.Alloc(device.PinnedMemory, 4096); aerr != nil {
					break
				}
			}
			if lost := errors.Is(aerr, rig.ErrLost); lost == own {
				t.Fatalf("timeline 0 lost %v after timeline 1's fault: %v", lost, aerr)
			}
			if own {
				s, err := rig.NewSubmission(a)
				if err != nil {
					t.Fatal(err)
				}
				pa, err := s.Take().Submit(bg)
				if err == nil {
					err = pa.Wait(ctx)
				}
				if err != nil {
					t.Fatalf("timeline 0 of a group of its own: %v", err)
				}
			}

			// Timeline 1 opens again while timeline 0, lost with it or
			// not, is still open: a timeline of the faulted group gets
			// a new group, whose channels the RM did not stop, and a
			// fault domain of its own, and runs.
			b2 := open(1)
			if b2 == b {
				t.Fatal("the open of timeline 1 returned the lost device")
			}
			if !own {
				if d0, d1 := a.Facts().FaultDomain, b2.Facts().FaultDomain; d1 == "" || d1 == d0 {
					t.Errorf("timeline 1 opened after its group's fault names fault domain %q, timeline 0 %q", d1, d0)
				}
				if g := f.objectsOf(nvidia.ClassChannelGroup); g != 2 {
					t.Errorf("%d channel groups with the faulted group's timeline 0 open, want 2", g)
				}
			}
			s, err = rig.NewSubmission(b2)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := s.Take().Submit(bg)
			if err == nil {
				err = p2.Wait(ctx)
			}
			if err != nil {
				t.Fatalf("timeline 1 opened again: %v", err)
			}
		})
	}
}

// TestTimelinesRegrowAfterFault regrows a timeline of the shared group
// after another timeline of the group kept a fault: the RM stopped the
// group's channels, so the regrowth fails with a fault rather than open
// the timeline's channels in another group, outside the fault domain its
// device names.
func TestTimelinesRegrowAfterFault(t *testing.T) {
	f := newFake()
	a := rawOn(t, f, Config{RingEntries: regrowRing, SharedGroup: true})
	defer a.close()
	b := rawOn(t, f, Config{Timeline: 1, RingEntries: regrowRing, SharedGroup: true})
	defer b.close()
	b.d.keep(&device.Fault{Why: "a fault of timeline 1"})
	a.d.mu.Lock()
	err := a.d.regrow([2]uint64{2 * regrowRing, 2 * regrowRing})
	set := a.d.grown.set
	a.d.mu.Unlock()
	if set != nil && set.grp != a.d.grp {
		t.Fatalf("the regrowth opened channels in another group (domain %q), the device names %q",
			set.grp.domain, a.d.facts.FaultDomain)
	}
	if _, ok := device.AsFault(err); !ok {
		t.Errorf("a regrowth in a faulted group: %v, want a fault", err)
	}
}
