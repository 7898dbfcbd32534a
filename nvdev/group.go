package nvdev

import (
	"fmt"
	"sync"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Channel groups of timelines. The timelines of a GPU in a process
// (Timeline) that ask for it (Config.SharedGroup) share one channel group,
// each with a context share
// of its own (FERMI_CONTEXT_SHARE_A, asynchronous: a subcontext, whose VEID
// is its own) and its channels in it. The GPU's scheduler gives its engines
// to one channel group at a time, in timeslices (NVIDIA's documentation of
// MPS says that the work of several contexts is time-sliced, and that on
// Volta and later MPS runs its clients side by side as subcontexts of one
// group; CUDA runs the streams of a context as channels of one group); the
// compute engine runs the work of the subcontexts of the group it holds
// side by side. By default a timeline has a channel group of its own: see
// Config.SharedGroup for what kept sharing opt-in.
//
// A device in a shared group scopes its waits for idle to its subcontext
// (WFI scope CURRENT_VEID), so that one timeline's release does not wait
// for another's kernels, and its acquires yield the group when a round of
// its channels made no progress (ACQUIRE_SWITCH_TSG), so that a channel
// polling an acquire that another timeline of the group will meet does
// not hold the PBDMA they share until the timeslice ends. Each value's
// words end with a YIELD of OP_TSG on every channel the value used, which
// passes the PBDMA to the group's next channel with work: a PBDMA stays
// on a channel while it has words, so that a timeline kept busy would
// hold it, and the other timelines' work wait, as long as it stayed busy.
//
// The RM stops every channel of a group that faults, so the timelines of a
// group share their fate: their devices name the group's fault domain,
// "nv <bus> group <n>", and rig loses them together. A fault that is not
// the device's alone marks the group faulted: one Sleep or a settle
// raises (keep), and one the path returns to a call rig counts, such as
// Grow, Alloc, Entry or MapPeer (lose). A timeline opened after its group
// faulted, while lost timelines of the group are still open, gets a new
// group and domain: it does not share their fate. A device of a group of
// its own names none.

// sharedGroup is a channel group the timelines of one GPU share.
type sharedGroup struct {
	tsg    nvidia.Handle
	parent nvidia.Handle // the GPU's RM device, the group's parent
	domain string
	// Under groups.mu: the channel sets in the group, by the path each
	// came through, and whether the group was scheduled.
	sets      map[*chanSet]path
	scheduled bool
	faulted   bool // a timeline of the group kept a fault: no set joins it
}

var groups struct {
	mu   sync.Mutex
	list []*sharedGroup
	made int // groups made, which number the fault domains
}

// joinGroup returns the channel group the timelines of p's GPU share,
// which it makes where there is none, and counts set in it. A group that
// faulted is not shared again: the RM stopped its channels, and a
// timeline opened while the group's lost timelines are still open gets a
// new group, and a fault domain of its own. A regrowth's set joins own,
// the group of its device, whose fault domain the device names: where own
// faulted, joinGroup returns a *device.Fault.
func joinGroup(p path, rm rmAPI, set *chanSet, what string, own *sharedGroup) (*sharedGroup, error) {
	groups.mu.Lock()
	defer groups.mu.Unlock()
	if own != nil {
		if own.faulted {
			return nil, &device.Fault{Why: fmt.Sprintf("nvdev: %s: the channel group of fault domain %q faulted", what, own.domain)}
		}
		own.sets[set] = p
		return own, nil
	}
	for _, g := range groups.list {
		if g.faulted {
			continue
		}
		for _, o := range g.sets {
			if o == p || sharesSpace(p, o) {
				g.sets[set] = p
				return g, nil
			}
		}
	}
	tsg, err := rm.Alloc(p.Device(), nvidia.ClassChannelGroup,
		nvidia.Bytes(&nvidia.ChannelGroupAllocParams{EngineType: nvidia.EngineGraphics}))
	if err != nil {
		return nil, fmt.Errorf("nvdev: %s: channel group: %w", what, err)
	}
	// The group outlives the path that made it while other timelines
	// use it: the last set frees it.
	if o, ok := rm.(interface{ Disown(nvidia.Handle) }); ok {
		o.Disown(tsg)
	}
	groups.made++
	g := &sharedGroup{tsg: tsg, parent: p.Device(), sets: map[*chanSet]path{set: p},
		domain: fmt.Sprintf("nv %s group %d", p.Bus(), groups.made)}
	groups.list = append(groups.list, g)
	return g, nil
}

// schedule schedules set's channels: the group with them, where it is
// not scheduled yet; otherwise each channel, which joins a group the RM
// already runs (NVA06F_CTRL_CMD_GPFIFO_SCHEDULE, as NVIDIA's UVM does for
// the channels it adds to its groups), or, where the RM lacks that, the
// group again.
func (g *sharedGroup) schedule(rm rmAPI, set *chanSet) error {
	groups.mu.Lock()
	defer groups.mu.Unlock()
	on := &nvidia.ScheduleParams{Enable: 1}
	if !g.scheduled {
		if err := rm.Schedule(g.tsg, on); err != nil {
			return err
		}
		g.scheduled = true
		return nil
	}
	sc, ok := rm.(interface {
		ScheduleChannel(nvidia.Handle, *nvidia.ScheduleParams) error
	})
	if ok {
		var err error
		for _, ch := range set.ch {
			if err = sc.ScheduleChannel(ch.h, on); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
		if _, fault := device.AsFault(err); fault {
			return err
		}
	}
	return rm.Schedule(g.tsg, on)
}

// fault marks the group faulted. Any goroutine may call it.
func (g *sharedGroup) fault() {
	groups.mu.Lock()
	g.faulted = true
	groups.mu.Unlock()
}

// leave uncounts set, and frees the group once no set is in it.
func (g *sharedGroup) leave(rm rmAPI, set *chanSet) error {
	groups.mu.Lock()
	defer groups.mu.Unlock()
	delete(g.sets, set)
	if len(g.sets) > 0 {
		return nil
	}
	for i, o := range groups.list {
		if o == g {
			groups.list = append(groups.list[:i], groups.list[i+1:]...)
			break
		}
	}
	return rm.Free(g.parent, g.tsg)
}
