package nvidia

import (
	"errors"
	"slices"
	"testing"
)

// TestRMDisown checks that a disowned channel group leaves the objects
// the path frees at its stop, while the channels under it stay the
// path's; and that ScheduleChannel sends NVA06F_CTRL_CMD_GPFIFO_SCHEDULE
// to the channel.
func TestRMDisown(t *testing.T) {
	f := newFakeRM(t)
	var sink faultSink
	m := newRM(f.conn(&sink), Release, nil)
	dev, _ := m.Alloc(m.Client(), ClassDevice, Bytes(&DeviceAllocParams{}))
	tsg, err := m.Alloc(dev, ClassChannelGroup, Bytes(&ChannelGroupAllocParams{EngineType: EngineGraphics}))
	if err != nil {
		t.Fatal(err)
	}
	ch1, _ := m.Alloc(tsg, 0xc86f, Bytes(&ChannelAllocParams{}))
	ch2, _ := m.Alloc(tsg, 0xc86f, Bytes(&ChannelAllocParams{}))
	m.Disown(tsg)
	got := m.made(ClassChannelGroup, 0xc86f)
	slices.Sort(got)
	if want := []Handle{ch1, ch2}; !slices.Equal(got, want) {
		t.Errorf("made after the group's disowning: %x, want its channels %x", got, want)
	}
	f.calls = nil
	err = m.ScheduleChannel(ch1, &ScheduleParams{Enable: 1})
	if len(f.calls) != 1 || f.calls[0] != CtrlChannelSchedule || f.lastLen != 3 {
		t.Errorf("ScheduleChannel sent %x of %d bytes", f.calls, f.lastLen)
	}
	if !errors.Is(err, ErrRefused) {
		t.Errorf("the fake's refusal answered %v", err)
	}
}

// TestStopAfterGroupFreedElsewhere: a channel group that a path disowned
// and another path of the client freed, with the channels under it, is
// forgotten with them by both: the first path's Stop frees nothing more,
// and answers nil.
func TestStopAfterGroupFreedElsewhere(t *testing.T) {
	f := newFakeRM(t)
	var sa, sb faultSink
	var objs objects
	ra, rb := newRM(f.conn(&sa), Release, &objs), newRM(f.conn(&sb), Release, &objs)
	dev, err := ra.Alloc(ra.Client(), ClassDevice, Bytes(&DeviceAllocParams{}))
	if err != nil {
		t.Fatal(err)
	}
	tsg, err := ra.Alloc(dev, ClassChannelGroup, Bytes(&ChannelGroupAllocParams{EngineType: EngineGraphics}))
	if err != nil {
		t.Fatal(err)
	}
	ra.Disown(tsg)
	ch, err := ra.Alloc(tsg, 0xc86f, Bytes(&ChannelAllocParams{}))
	if err != nil {
		t.Fatal(err)
	}
	// The group goes through path b's RM; the RM frees its channel with it.
	if err := rb.Free(dev, tsg); err != nil {
		t.Fatal(err)
	}
	delete(f.objs, ch)
	p := &Client{rm: ra, channels: map[Handle]span{}, gpuState: &gpuState{gpu: GPU{Generation: Generation{Channel: 0xc86f}}}}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after the disowned group and its channel were freed: %v (the path still lists %x)", err, ra.made(ClassChannelGroup, 0xc86f))
	}
}
