package nvdev

import (
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
