package rigprom

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rig "github.com/rig-go/rig/runtime"
)

// TestCollectBlockedConsumer stops reading one Collect's metrics at its
// losses: another Collect of the collector still completes.
func TestCollectBlockedConsumer(t *testing.T) {
	a, b := open(t, "rigprom-blocked-a"), open(t, "rigprom-blocked-b")
	c := NewCollector(func() []*rig.Device { return []*rig.Device{a, b} })
	slow := make(chan prometheus.Metric)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		c.Collect(slow)
	}()
	for m := range slow {
		if m.Desc() == losses {
			break // the consumer stops reading here
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Collect(make(chan prometheus.Metric, 1000))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("a Collect waited for another's consumer")
	}
	for {
		select {
		case <-slow:
		case <-ended:
			<-done
			return
		}
	}
}
