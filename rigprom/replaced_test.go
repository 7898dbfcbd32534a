package rigprom

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// TestLossReplacedBetweenScrapes: a device that a scrape published and
// that was lost, closed and replaced under its name before the next
// scrape, as a service that reopens a lost device at once does, has its
// loss counted once, closed or not.
func TestLossReplacedBetweenScrapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		closed bool
	}{{"closed", true}, {"left open", false}} {
		t.Run(tc.name, func(t *testing.T) {
			d := open(t, "rigprom-replaced")
			devs := []*rig.Device{d}
			c := NewCollector(func() []*rig.Device { return devs })
			if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_device_losses_total Losses of devices of this name seen by the collector.
# TYPE rig_device_losses_total counter
rig_device_losses_total{device="rigprom-replaced"} 0
`), "rig_device_losses_total"); err != nil {
				t.Fatal(err)
			}
			if err := launch(t, d, "panic"); err == nil {
				t.Fatal("a kernel that panics did not lose the device")
			}
			if tc.closed {
				_ = d.Close()
				<-d.Done()
			}
			devs = []*rig.Device{open(t, "rigprom-replaced")}
			want := `
# HELP rig_device_losses_total Losses of devices of this name seen by the collector.
# TYPE rig_device_losses_total counter
rig_device_losses_total{device="rigprom-replaced"} 1
`
			for range 2 {
				if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rig_device_losses_total"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestClosedLeavesCollector: a device closed without a loss is held by
// the collector only until the first scrape after it is done closing, so
// that devices that come and go do not accumulate.
func TestClosedLeavesCollector(t *testing.T) {
	d := open(t, "rigprom-closed")
	devs := []*rig.Device{d}
	c := NewCollector(func() []*rig.Device { return devs })
	c.Collect(make(chan prometheus.Metric, 100))
	_ = d.Close()
	<-d.Done()
	devs = nil
	c.Collect(make(chan prometheus.Metric, 100))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watched) != 0 || len(c.seen) != 0 {
		t.Fatalf("the collector holds %d devices and %d lost ones after the only device closed", len(c.watched), len(c.seen))
	}
}
