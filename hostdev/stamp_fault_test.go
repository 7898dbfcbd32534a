package hostdev

import (
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

func init() {
	// test.fault faults the device.
	Register("test.fault", func(k *Ctx) { k.Fault("test.fault faults") })
}

// TestNoStampOfFaultedValue times a value that completes and one whose
// kernel faults: Settle gives the stamp of the first, and none of the
// second, whose work did not complete.
func TestNoStampOfFaultedValue(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	ok := device.Submission{Parts: []device.Part{one(entry(t, d, "test.log"), p64(1, 0))}, Timed: true}
	bad := device.Submission{Parts: []device.Part{one(entry(t, d, "test.fault"), nil)}, Timed: true}
	logReset()
	v1 := submitS(t, d, &ok)
	v2 := submitS(t, d, &bad)
	deadline := time.Now().Add(10 * time.Second)
	for d.q.completed.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the values did not complete in 10 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
	if d.fault.Load() == nil {
		t.Fatal("the kernel did not fault the device")
	}
	stamps, err := d.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stamps) != 1 || stamps[0].Value != v1 {
		t.Fatalf("stamps %+v, want value %d's alone (value %d faulted)", stamps, v1, v2)
	}
}
