package rigprom

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

func open(t *testing.T, name string) *rig.Device {
	t.Helper()
	d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: name}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); <-d.Done() })
	return d
}

func launch(t *testing.T, d *rig.Device, kernel string) error {
	t.Helper()
	img, err := d.LoadImage(hostdev.ImageOf(kernel))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve(kernel)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rig.NewSubmission(d, rig.Launch(fn, 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := s.Take().Submit(ctx)
	if err != nil {
		return err
	}
	return p.Wait(ctx)
}

func TestCollector(t *testing.T) {
	d := open(t, "rigprom-a")
	b, err := d.Alloc(rig.PinnedMemory, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for range 3 {
		if err := launch(t, d, "empty"); err != nil {
			t.Fatal(err)
		}
	}
	cur := d
	c := NewCollector(func() []*rig.Device { return []*rig.Device{cur} })
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_submissions_total Values submitted to the device since it opened.
# TYPE rig_submissions_total counter
rig_submissions_total{device="rigprom-a"} 3
# HELP rig_values_in_flight Values submitted whose points are not reached yet.
# TYPE rig_values_in_flight gauge
rig_values_in_flight{device="rigprom-a"} 0
`), "rig_submissions_total", "rig_values_in_flight"); err != nil {
		t.Fatal(err)
	}

	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_memory_bytes Bytes of the device's live buffers and images, by kind of memory.
# TYPE rig_memory_bytes gauge
rig_memory_bytes{device="rigprom-a",kind="Device"} 0
rig_memory_bytes{device="rigprom-a",kind="Mapped"} 0
rig_memory_bytes{device="rigprom-a",kind="Pinned"} 4096
`), "rig_memory_bytes"); err != nil {
		t.Fatal(err)
	}

	// A loss shows with its cause, and is counted once across scrapes and
	// after the device of the name is replaced.
	if err := launch(t, d, "panic"); err == nil {
		t.Fatal("a kernel that panics did not lose the device")
	}
	for range 2 {
		if n := testutil.CollectAndCount(c, "rig_device_lost"); n != 1 {
			t.Fatalf("%d rig_device_lost series for a lost device", n)
		}
	}
	_ = d.Close()
	<-d.Done()
	cur = open(t, "rigprom-a")
	if n := testutil.CollectAndCount(c, "rig_device_lost"); n != 0 {
		t.Fatalf("%d rig_device_lost series after the device was replaced", n)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_device_losses_total Losses of devices of this name seen by the collector.
# TYPE rig_device_losses_total counter
rig_device_losses_total{device="rigprom-a"} 1
`), "rig_device_losses_total"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatal(problems, err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

// TestHistogramCount: a snapshot whose buckets hold more durations than
// its count, as one taken during a record reads, still makes a histogram
// whose count is at least each bucket's.
func TestHistogramCount(t *testing.T) {
	var h rig.Histogram
	h.Buckets[10], h.Buckets[20], h.Count, h.Sum = 4, 1, 3, time.Millisecond
	var m dto.Metric
	if err := histogram(submitLat, &h, "d").Write(&m); err != nil {
		t.Fatal(err)
	}
	ph := m.GetHistogram()
	if ph.GetSampleCount() != 5 {
		t.Errorf("count %d, want the buckets' 5", ph.GetSampleCount())
	}
	for _, b := range ph.GetBucket() {
		if b.GetCumulativeCount() > ph.GetSampleCount() {
			t.Errorf("bucket le=%g holds %d, over the count %d", b.GetUpperBound(), b.GetCumulativeCount(), ph.GetSampleCount())
		}
	}
}

// TestLostCauseNotUTF8: a device lost with a cause that is not valid UTF-8
// (the fault kernel's cause is its parameter bytes) is still published,
// and the scrape neither panics nor fails.
func TestLostCauseNotUTF8(t *testing.T) {
	d := open(t, "rigprom-utf8")
	img, err := d.LoadImage(hostdev.ImageOf("fault"))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve("fault")
	if err != nil {
		t.Fatal(err)
	}
	s, err := rig.NewSubmission(d, rig.Launch(fn, 2))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := s.Take()
	copy(r.Params(0), []byte{0xff, 0xfe})
	p, err := r.Submit(ctx)
	if err == nil {
		err = p.Wait(ctx)
	}
	if err == nil {
		t.Fatal("the fault kernel did not lose the device")
	}
	c := NewCollector(func() []*rig.Device { return []*rig.Device{d} })
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "rig_device_lost"); n != 1 {
		t.Fatalf("%d rig_device_lost series for a lost device", n)
	}
}

// TestLossesFromZero: a device that was never lost publishes its losses
// as 0, so that its first loss is an increase of the counter (a series
// that first appears at 1 reads as no increase to increase() and rate()).
func TestLossesFromZero(t *testing.T) {
	d := open(t, "rigprom-zero")
	c := NewCollector(func() []*rig.Device { return []*rig.Device{d} })
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_device_losses_total Losses of devices of this name seen by the collector.
# TYPE rig_device_losses_total counter
rig_device_losses_total{device="rigprom-zero"} 0
`), "rig_device_losses_total"); err != nil {
		t.Fatal(err)
	}
}

// TestLossesOfNamesGone: a name published from 0 while its device was
// current, which never lost a device, is no longer published once no
// device has it; a name with losses stays.
func TestLossesOfNamesGone(t *testing.T) {
	var devs []*rig.Device
	c := NewCollector(func() []*rig.Device { return devs })
	d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: "short-lived"}))
	if err != nil {
		t.Fatal(err)
	}
	devs = []*rig.Device{d}
	if n := lossSeries(t, c, "short-lived"); n != 1 {
		t.Fatalf("%d loss series for a current device, want 1", n)
	}
	devs = nil
	_ = d.Close()
	<-d.Done()
	if n := lossSeries(t, c, "short-lived"); n != 0 {
		t.Fatalf("%d loss series for a name no device has and that never lost one, want 0", n)
	}
}

// lossSeries counts the rig_device_losses_total series of name c gathers.
func lossSeries(t *testing.T, c *Collector, name string) int {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "rig_device_losses_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "device" && l.GetValue() == name {
					n++
				}
			}
		}
	}
	return n
}

// TestNameTwice: devices that returns two devices of one name (a closed
// device beside the one reopened under its name, or one device twice)
// has the first of them published, and the scrape does not fail over
// metrics collected twice.
func TestNameTwice(t *testing.T) {
	old := open(t, "rigprom-twice")
	if err := launch(t, old, "empty"); err != nil {
		t.Fatal(err)
	}
	_ = old.Close()
	<-old.Done()
	cur := open(t, "rigprom-twice")
	for _, tc := range []struct {
		devs []*rig.Device
		want string
	}{{[]*rig.Device{old, cur}, "1"}, {[]*rig.Device{cur, old}, "0"}, {[]*rig.Device{cur, cur}, "0"}} {
		c := NewCollector(func() []*rig.Device { return tc.devs })
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("%d devices of one name: %v", len(tc.devs), err)
		}
		if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP rig_submissions_total Values submitted to the device since it opened.
# TYPE rig_submissions_total counter
rig_submissions_total{device="rigprom-twice"} `+tc.want+`
`), "rig_submissions_total"); err != nil {
			t.Error(err)
		}
	}
}
