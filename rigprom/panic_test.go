package rigprom

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	rig "github.com/rig-go/rig/runtime"
)

// TestDevicesPanics: a devices function that panics fails the scrape with
// an error that names the panic; the scrape's goroutine does not panic,
// which would end the process, and the next scrape publishes the devices.
func TestDevicesPanics(t *testing.T) {
	d := open(t, "rigprom-panic")
	fail := true
	c := NewCollector(func() []*rig.Device {
		if fail {
			panic("no devices today")
		}
		return []*rig.Device{d}
	})
	ch := make(chan prometheus.Metric, 100)
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("Collect panicked: %v", v)
			}
		}()
		c.Collect(ch)
	}()
	close(ch)
	var errs []error
	for m := range ch {
		if err := m.Write(&dto.Metric{}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "no devices today") {
		t.Fatalf("the metrics' errors are %v, want one that names the panic", errs)
	}

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "no devices today") {
		t.Fatalf("Gather with a devices function that panics: %v, want an error that names the panic", err)
	}
	fail = false
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if n := lossSeries(t, c, "rigprom-panic"); n != 1 {
		t.Fatalf("%d loss series after the devices function returned, want 1", n)
	}
}
