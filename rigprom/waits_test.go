package rigprom

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestWaitsParkedThenCancelled: a wait that parked and whose context then
// ended is counted under both "parked" and "cancelled", and the help says
// so, since summing rig_waits_total over how counts it twice.
func TestWaitsParkedThenCancelled(t *testing.T) {
	d := open(t, "rigprom-waits")
	img, err := d.LoadImage(hostdev.ImageOf("hang"))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve("hang")
	if err != nil {
		t.Fatal(err)
	}
	s, err := rig.NewSubmission(d, rig.Launch(fn, 0))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Take().Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer := make(chan error, 1)
	go func() { answer <- p.Wait(ctx) }()
	for d.Stats().WaitsParked == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-answer; !errors.Is(err, context.Canceled) {
		t.Fatalf("the wait returned %v, want context.Canceled", err)
	}
	c := NewCollector(func() []*rig.Device { return []*rig.Device{d} })
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_waits_total Waits on the device's points that were not reached when they began: spun (reached during the spin on the word), parked (handed to the supervisor to be woken), cancelled (their context ended). A parked wait whose context ends counts under parked and cancelled both.
# TYPE rig_waits_total counter
rig_waits_total{device="rigprom-waits",how="cancelled"} 1
rig_waits_total{device="rigprom-waits",how="parked"} 1
rig_waits_total{device="rigprom-waits",how="spun"} 0
`), "rig_waits_total"); err != nil {
		t.Fatal(err)
	}
}
