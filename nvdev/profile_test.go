package nvdev

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestStamps checks timed values on the fake: the first asks for the stamp
// ring, each channel a value enters stamps its start and the ender its
// end, and Settle converts them, in value order, within the host's times
// around the submissions.
func TestStamps(t *testing.T) {
	r := openRaw(t, Config{})
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 4096)
	m := r.alloc(device.PinnedMemory, 4096)
	s := device.Submission{Value: r.v + 1, Timed: true}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of the first timed value: %+v", a)
	}
	t0 := device.Now()
	var vs []uint64
	untimed := r.submit(nil, launch(e, 1, 32, u64s(x.Address)))
	for _, parts := range [][]device.Part{
		{launch(e, 1, 32, u64s(x.Address))},
		{fillPart(qCopy, m, 0, 8, 1)},
		{fillPart(qCopy, m, 0, 8, 1), launch(e, 1, 32, u64s(x.Address))},
		nil,
	} {
		vs = append(vs, r.submitTimed(true, nil, parts...))
	}
	r.wait(r.v)
	t1 := device.Now()
	got, err := r.d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vs) {
		t.Fatalf("%d stamps, want %d: %+v", len(got), len(vs), got)
	}
	enders := []int{qCompute, qCopy, qCompute, qCompute}
	for i, st := range got {
		if st.Value != vs[i] || st.Queue != enders[i] {
			t.Errorf("stamp %d: value %d queue %d, want %d %d", i, st.Value, st.Queue, vs[i], enders[i])
		}
		if st.Start < t0 || st.End < st.Start || st.End > t1 {
			t.Errorf("stamp %d: %d to %d, outside %d to %d", i, st.Start, st.End, t0, t1)
		}
		if st.Value == untimed {
			t.Error("a stamp of an untimed value")
		}
	}
	if more, err := r.d.Settle(nil); err != nil || len(more) != 0 {
		t.Errorf("a second settle: %v %v", more, err)
	}
	// The value's words: a stamp at each channel's start, and the end.
	if b := r.d.stampSlot(vs[2]); binary.LittleEndian.Uint64(b[0:]) != vs[2] ||
		binary.LittleEndian.Uint64(b[16:]) != vs[2] || binary.LittleEndian.Uint64(b[32:]) != vs[2] {
		t.Errorf("the slot of a value on both channels: %x", b)
	}
	// A stamp the work never wrote fails Settle and loses the device.
	v := r.submitTimed(true, nil, launch(e, 1, 32, u64s(x.Address)))
	r.wait(v)
	binary.LittleEndian.PutUint64(r.d.stampSlot(v)[32:], 0)
	_, err = r.d.Settle(nil)
	var f *device.Fault
	if !errors.As(err, &f) {
		t.Fatalf("settle of an unwritten stamp: %v", err)
	}
	if err := r.d.Sleep(r.d.Signaled(), 0); !errors.As(err, &f) {
		t.Errorf("sleep after a failed settle: %v", err)
	}
}

// TestSettleTimer checks that a failed read of the GPU's timer fails
// Settle, and the conversion along the line through two measures.
func TestSettleTimer(t *testing.T) {
	r := openRaw(t, Config{})
	r.wait(r.submitTimed(true, nil))
	r.f.mu.Lock()
	r.f.timerErr = errors.New("no timer")
	r.f.mu.Unlock()
	var f *device.Fault
	if _, err := r.d.Settle(nil); !errors.As(err, &f) {
		t.Fatalf("settle with no timer: %v", err)
	}

	p := &profile{first: nvidia.Timer{GPU: 1000, Host: 50, Width: 100}}
	if h := p.toHost(3000); h != 2050 {
		t.Errorf("nominal rate: %d", h)
	}
	// Measures less than a second apart leave the nominal rate.
	p.late = nvidia.Timer{GPU: 1000 + 1e9, Host: 50 + 5e8}
	if h := p.toHost(3000); h != 2050 {
		t.Errorf("measures half a second apart: %d", h)
	}
	// Two seconds of the GPU's timer took one of the host's.
	p.late = nvidia.Timer{GPU: 1000 + 4e9, Host: 50 + 2e9}
	if h := p.toHost(1000 + 2e9); h != 50+1e9 {
		t.Errorf("along the line: %d", h)
	}
}

// TestStampsReuse checks that a Submit reusing the slot of a timed value
// not settled converts it first.
func TestStampsReuse(t *testing.T) {
	if testing.Short() {
		t.Skip("65,536 values")
	}
	r := openRaw(t, Config{})
	first := r.submitTimed(true, nil)
	for range records {
		r.submitTimed(false, nil)
	}
	last := r.submitTimed(true, nil)
	r.wait(last)
	got, err := r.d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Value != first || got[1].Value != last {
		t.Errorf("stamps %+v, want values %d and %d", got, first, last)
	}
}

// TestSettleAfterStop checks that Settle after Stop reads nothing of the
// stamp ring Stop gave back, and fails nothing for values whose work never
// ran though Stop wrote them into the word.
func TestSettleAfterStop(t *testing.T) {
	r := openRaw(t, Config{})
	v := r.submitTimed(true, nil)
	r.wait(v)
	r.f.pause()
	s := device.Submission{Value: r.v + 1, Timed: true}
	if a := r.d.Room(&s); a.Kind != device.RoomOK {
		t.Fatalf("room: %+v", a)
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind != device.Committed {
		t.Fatalf("submit: %+v", a)
	}
	if err := r.d.Stop(""); err != nil {
		t.Fatal(err)
	}
	got, err := r.d.Settle(nil)
	if err != nil {
		t.Fatalf("settle after stop: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("settle after stop converted %+v", got)
	}
}

// TestStampsKernelQueue times values whose last part, a copy or a fill of
// COPY:0, runs as the driver's kernel on the compute channel: the stamp
// names the queue the value ended on, COPY:0, not the channel.
func TestStampsKernelQueue(t *testing.T) {
	r := openRaw(t, Config{})
	if r.d.copyK == nil {
		t.Fatal("no copy kernels")
	}
	kernels := 0
	r.copyKernelsOn(&kernels)
	const n = 256 << 10
	a := r.alloc(device.DeviceMemory, n)
	b := r.alloc(device.DeviceMemory, n)
	vs := []uint64{
		r.submitTimed(true, nil, copyPart(qCopy, a, b, 0, 0, n)),
		r.submitTimed(true, nil, fillPart(qCompute, a, 0, 8, 1), fillPart(qCopy, b, 0, n, 2)),
	}
	r.wait(r.v)
	if kernels != 2 {
		t.Fatalf("%d kernels ran, want 2", kernels)
	}
	got, err := r.d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vs) {
		t.Fatalf("%d stamps, want %d: %+v", len(got), len(vs), got)
	}
	for i, st := range got {
		if st.Value != vs[i] || st.Queue != qCopy {
			t.Errorf("stamp %d: value %d queue %d, want %d %d", i, st.Value, st.Queue, vs[i], qCopy)
		}
	}
}
