package nvdev

import (
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestKeepAloneLeavesGroup: a fault of the device's alone, such as a
// settle's unwritten stamps, is kept and raised by the device's Sleep, and
// leaves its shared group unfaulted, so that the group's other timelines
// go on and later ones join it; any other fault marks the group faulted.
func TestKeepAloneLeavesGroup(t *testing.T) {
	for _, c := range []struct {
		name    string
		f       *device.Fault
		faulted bool
	}{
		{"unwritten stamps", unwritten(7), false},
		{"a notifier's error", &device.Fault{Why: "a channel's notifier holds an error"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := openRaw(t, Config{SharedGroup: true})
			if r.d.grp == nil {
				t.Fatal("a timeline of the shared group has no group")
			}
			if got := r.d.keep(c.f); got != c.f {
				t.Fatalf("keep returned %v, want the fault kept", got)
			}
			if err := r.d.Sleep(r.d.Signaled(), 0); err != c.f {
				t.Fatalf("Sleep after the fault returned %v, want it", err)
			}
			groups.mu.Lock()
			faulted := r.d.grp.faulted
			groups.mu.Unlock()
			if faulted != c.faulted {
				t.Fatalf("the group faulted %v, want %v", faulted, c.faulted)
			}
		})
	}
}

// TestSettleTimerFault: a settle whose read of the GPU's timer fails on
// the host's side loses its timeline alone and leaves the shared group to
// the others; one the path reports as a fault of the GPU (a timer that
// reads all ones: the GPU is off the bus) is no fault of the timeline
// alone, and faults the group.
func TestSettleTimerFault(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		alone   bool
		faulted bool
	}{
		{"the host's side", errors.New("the usermode page's timer reads 0"), true, false},
		{"the GPU off the bus", &device.Fault{Why: "the GPU's timer reads all ones: the GPU is off the bus"}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := openRaw(t, Config{SharedGroup: true})
			r.wait(r.submitTimed(true, nil))
			r.f.mu.Lock()
			r.f.timerErr = c.err
			r.f.mu.Unlock()
			_, err := r.d.Settle(nil)
			f, ok := device.AsFault(err)
			if !ok {
				t.Fatalf("settle with the timer failing: %v, want a *device.Fault", err)
			}
			if f.Alone != c.alone {
				t.Errorf("the settle's fault is alone %v, want %v: %v", f.Alone, c.alone, f)
			}
			groups.mu.Lock()
			faulted := r.d.grp.faulted
			groups.mu.Unlock()
			if faulted != c.faulted {
				t.Errorf("the group faulted %v, want %v", faulted, c.faulted)
			}
		})
	}
}

// TestKeepGroupFaultAfterAlone: a fault of the group that follows a fault
// of the device's alone is not the one kept, and still marks the group
// faulted.
func TestKeepGroupFaultAfterAlone(t *testing.T) {
	r := openRaw(t, Config{SharedGroup: true})
	first := unwritten(7)
	if got := r.d.keep(first); got != first {
		t.Fatalf("keep returned %v, want the fault kept", got)
	}
	if got := r.d.keep(&device.Fault{Why: "a channel's notifier holds an error"}); got != first {
		t.Fatalf("keep of a later fault returned %v, want the first", got)
	}
	groups.mu.Lock()
	faulted := r.d.grp.faulted
	groups.mu.Unlock()
	if !faulted {
		t.Fatal("a fault of the group after a fault of the device's alone left the group unfaulted")
	}
}
