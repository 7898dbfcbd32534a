package nvdev

import (
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestStopWordAfterFailedSubmit: Stop writes the last value given to
// Submit into the word, also where that Submit answered Failed (here: no
// Room before it), since a failed value's word still reaches it.
func TestStopWordAfterFailedSubmit(t *testing.T) {
	r := openRaw(t, Config{})
	s := device.Submission{Value: r.v + 1}
	if a := r.d.Submit(&s); a.Kind != device.Failed {
		t.Fatalf("submit without room: %+v", a)
	}
	r.v = s.Value // the value given to submit, which the cleanup checks too
	if err := r.d.Stop(""); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := r.d.Signaled(); got != s.Value {
		t.Errorf("after stop the word reads %d, not %d, the last value given to submit (whose submit failed)", got, s.Value)
	}
}

// TestStopBothNotifiers: where both channels' notifiers hold an error,
// the RM stopped them, and no release of theirs will write the word: Stop
// writes the last value, though the RM keeps the channel group and the
// path did not stop, so that rig's wait for the word ends.
func TestStopBothNotifiers(t *testing.T) {
	r := openRaw(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	r.f.pause()
	v := r.submit(nil, fillPart(qCopy, m, 0, 8, 1), fillPart(qCompute, m, 8, 8, 2))
	r.f.mu.Lock()
	for _, c := range r.f.chans {
		r.f.fail(c, 31)
	}
	r.f.refuseFree = map[uint32]bool{nvidia.ClassChannelGroup: true}
	r.f.stopErr = errors.New("fake: the device's work may still run")
	r.f.mu.Unlock()
	if !r.d.notified() {
		t.Fatal("no notifier holds an error")
	}
	_ = r.d.Stop("")
	if got := r.d.Signaled(); got != v {
		t.Errorf("both channels' notifiers hold an error, yet after stop the word reads %d, not the last value %d", got, v)
	}
}
