package rigprom

import (
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// TestLossCountedOnce: a lost device is counted once however the scrapes
// that see it interleave with those that see its replacement: a scrape
// that read the devices before the replacement and counts after a scrape
// that read the replacement, or a devices function that returns the lost
// device again after leaving it out.
func TestLossCountedOnce(t *testing.T) {
	lostDev := open(t, "rigprom-once")
	if err := launch(t, lostDev, "panic"); err == nil {
		t.Fatal("a kernel that panics did not lose the device")
	}
	_ = lostDev.Close()
	<-lostDev.Done()
	repl := open(t, "rigprom-once")
	want := `
# HELP rig_device_losses_total Losses of devices of this name seen by the collector.
# TYPE rig_device_losses_total counter
rig_device_losses_total{device="rigprom-once"} 1
`

	t.Run("interleaved", func(t *testing.T) {
		// The first scrape reads the lost device; the second reads it
		// too, and is held inside the devices function while a third
		// reads the replacement and ends.
		var mu sync.Mutex
		calls := 0
		entered, release := make(chan struct{}), make(chan struct{})
		c := NewCollector(func() []*rig.Device {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			switch n {
			case 1:
				return []*rig.Device{lostDev}
			case 2:
				close(entered)
				<-release
				return []*rig.Device{lostDev}
			default:
				return []*rig.Device{repl}
			}
		})
		c.Collect(make(chan prometheus.Metric, 100))
		held := make(chan struct{})
		go func() {
			defer close(held)
			c.Collect(make(chan prometheus.Metric, 100))
		}()
		<-entered
		c.Collect(make(chan prometheus.Metric, 100))
		close(release)
		<-held
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rig_device_losses_total"); err != nil {
			t.Error(err)
		}
	})

	t.Run("returned again", func(t *testing.T) {
		var devs []*rig.Device
		c := NewCollector(func() []*rig.Device { return devs })
		for _, d := range [][]*rig.Device{{lostDev}, nil, {lostDev}, {repl}, {lostDev}} {
			devs = d
			c.Collect(make(chan prometheus.Metric, 100))
		}
		devs = []*rig.Device{repl}
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rig_device_losses_total"); err != nil {
			t.Error(err)
		}
	})
}
