package rigprom

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// TestLossesBetweenScrapes: a device lost, replaced, and its replacement
// lost and replaced in turn, all between two scrapes, counts both losses,
// where the opener gave each device to Watch as it opened: the
// replacement, which no scrape returned, as well as the device the first
// scrape published. Once with every device of one name, once with the
// names of two seats taken in turn, as the example service opens them.
func TestLossesBetweenScrapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names [3]string
		want  string
	}{
		{"one name", [3]string{"rigprom-between", "rigprom-between", "rigprom-between"}, `
rig_device_losses_total{device="rigprom-between"} 2
`},
		{"two seats", [3]string{"rigprom-seat/0", "rigprom-seat/1", "rigprom-seat/0"}, `
rig_device_losses_total{device="rigprom-seat/0"} 1
rig_device_losses_total{device="rigprom-seat/1"} 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var devs []*rig.Device
			c := NewCollector(func() []*rig.Device { return devs })
			// Each device is opened once the one before it, lost,
			// is done closing: rig opens one device of a name at a
			// time.
			var prev *rig.Device
			for i, n := range tc.names {
				if prev != nil {
					if err := launch(t, prev, "panic"); err == nil {
						t.Fatal("a kernel that panics did not lose the device")
					}
					_ = prev.Close()
					<-prev.Done()
				}
				d := open(t, n)
				c.Watch(d)
				devs = []*rig.Device{d}
				if i == 0 {
					c.Collect(make(chan prometheus.Metric, 100))
				}
				prev = d
			}
			for range 2 {
				compareLosses(t, c, tc.want)
			}
		})
	}
}

// TestWatchedNeverScraped: a device given to Watch that no scrape
// returned publishes its name from 0 while it is open, so that its loss
// is an increase of the counter, and its loss is counted once, however
// often it is given to Watch.
func TestWatchedNeverScraped(t *testing.T) {
	c := NewCollector(func() []*rig.Device { return nil })
	d := open(t, "rigprom-watch-only")
	c.Watch(d)
	c.Watch(d)
	compareLosses(t, c, `
rig_device_losses_total{device="rigprom-watch-only"} 0
`)
	if err := launch(t, d, "panic"); err == nil {
		t.Fatal("a kernel that panics did not lose the device")
	}
	c.Watch(d)
	compareLosses(t, c, `
rig_device_losses_total{device="rigprom-watch-only"} 1
`)
	c.Watch(nil)
}

// TestWatchWithoutScrapes: devices given to Watch and closed without a
// loss, with no scrape between, are not held: each Watch drops those done
// closing, so that a service that is never scraped does not accumulate
// the devices it opened.
func TestWatchWithoutScrapes(t *testing.T) {
	c := NewCollector(func() []*rig.Device { return nil })
	for range 3 {
		d := open(t, "rigprom-watch-closed")
		c.Watch(d)
		_ = d.Close()
		<-d.Done()
	}
	last := open(t, "rigprom-watch-closed")
	c.Watch(last)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watched) != 1 || len(c.seen) != 0 {
		t.Fatalf("the collector holds %d devices and %d lost ones, want the one open and none lost", len(c.watched), len(c.seen))
	}
}

// compareLosses checks that c gathers the rig_device_losses_total series
// lines, and those alone.
func compareLosses(t *testing.T, c *Collector, lines string) {
	t.Helper()
	want := `
# HELP rig_device_losses_total Losses of devices of this name seen by the collector.
# TYPE rig_device_losses_total counter
` + strings.TrimPrefix(lines, "\n")
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rig_device_losses_total"); err != nil {
		t.Fatal(err)
	}
}
