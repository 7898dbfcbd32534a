// Package rigprom publishes rig devices' counters as Prometheus metrics.
//
// It lives in a module of its own so that rig's core keeps its few
// dependencies: a server that exports metrics imports rigprom, one that
// does not pulls in no Prometheus code. A Collector reads each device's
// Stats at scrape time, which takes no lock on rig's submit and wait paths.
//
//	c := rigprom.NewCollector(func() []*rig.Device { return []*rig.Device{dev} })
//	prometheus.MustRegister(c)
//	http.Handle("/metrics", promhttp.Handler())
//
// A server that opens devices between scrapes, as one that reopens a lost
// device does, gives each to Collector.Watch as it opens, so that a
// device lost before a scrape returned it counts in
// rig_device_losses_total.
package rigprom

import (
	"fmt"
	"strings"
	"sync"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// Collector is a prometheus.Collector of the devices a function returns at
// each scrape, so that a service that reopens a lost device publishes the
// new one under the same name. Its metrics carry a "device" label.
type Collector struct {
	devices func() []*rig.Device

	mu     sync.Mutex
	losses map[string]float64 // losses per device name seen, counted once per Device
	// seen is the lost devices counted, held weakly: a device is counted
	// once for as long as it exists, whichever scrape sees it and however
	// often the devices function leaves it out, and its entry goes once
	// the garbage collector freed it.
	seen map[weak.Pointer[rig.Device]]struct{}
	// watched is the devices a scrape returned or Watch was given that
	// are neither counted lost nor done closing, by name: a device lost
	// and replaced before the next scrape, which the devices function no
	// longer returns, or never returned, is counted from here. A device
	// leaves it once lost or done.
	watched map[*rig.Device]string
}

// NewCollector returns a collector of the devices devices returns; it is
// called once per scrape, from the scraping goroutine, and two scrapes at
// once call it at once, so it must be safe for concurrent use. Of several
// devices of one name it returns (a closed device beside the one reopened
// under its name), the first is published, and the losses of each are
// counted. A device that a scrape returned is counted lost also where it
// is lost and left out before the next scrape, as a service that reopens
// a lost device at once leaves it out. A device that no scrape returned,
// opened and lost between two scrapes (the replacement of a lost device,
// lost in turn), is counted only where it was given to Watch. A panic of
// devices is recovered and fails that scrape with an error that names it.
func NewCollector(devices func() []*rig.Device) *Collector {
	return &Collector{devices: devices, losses: map[string]float64{}, seen: map[weak.Pointer[rig.Device]]struct{}{}, watched: map[*rig.Device]string{}}
}

// Watch counts the loss of d in rig_device_losses_total whether or not a
// scrape returns d, and publishes d's name from 0 meanwhile. The devices
// function shows only the devices of the moment of each scrape: a device
// opened after one scrape and lost before the next (a replacement of a
// lost device, lost in turn) is in none of its answers, and its loss is
// counted only where its opener gave it to Watch as it opened. The
// collector holds d until a scrape or a later Watch finds it lost,
// counting the loss, or done closing. It costs d nothing: the loss is
// read at those times, as a scrape reads it. Any goroutine may call it; a
// nil d is ignored.
func (c *Collector) Watch(d *rig.Device) {
	if d == nil {
		return
	}
	n := labelValue(d.Name())
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.losses[n]; !ok {
		c.losses[n] = 0
	}
	if d.Err() != nil {
		c.countLoss(d, n)
	} else {
		c.watched[d] = n
	}
	// The devices that ended since the last scrape go now, so that
	// opens without scrapes do not accumulate them.
	c.sweep()
}

var (
	submitted = prometheus.NewDesc("rig_submissions_total", "Values submitted to the device since it opened.", []string{"device"}, nil)
	inFlight  = prometheus.NewDesc("rig_values_in_flight", "Values submitted whose points are not reached yet.", []string{"device"}, nil)
	waits     = prometheus.NewDesc("rig_waits_total", "Waits on the device's points that were not reached when they began: spun (reached during the spin on the word), parked (handed to the supervisor to be woken), cancelled (their context ended). A parked wait whose context ends counts under parked and cancelled both.", []string{"device", "how"}, nil)
	rounds    = prometheus.NewDesc("rig_reclaim_rounds_total", "Rounds of reclamation run for refused allocations, entries and growths.", []string{"device"}, nil)
	growths   = prometheus.NewDesc("rig_queue_growths_total", "Growths of the driver's queues.", []string{"device"}, nil)
	memory    = prometheus.NewDesc("rig_memory_bytes", "Bytes of the device's live buffers and images, by kind of memory.", []string{"device", "kind"}, nil)
	lost      = prometheus.NewDesc("rig_device_lost", "1 while the device is lost, with the loss's cause.", []string{"device", "cause"}, nil)
	losses    = prometheus.NewDesc("rig_device_losses_total", "Losses of devices of this name seen by the collector.", []string{"device"}, nil)
	submitLat = prometheus.NewDesc("rig_submit_seconds", "Time Run.Submit took, sampled one submission in 64.", []string{"device"}, nil)
	wakeLat   = prometheus.NewDesc("rig_wake_seconds", "Time from the supervisor waking a parked waiter, whose point was reached or whose device was lost or closed, to the waiter running again.", []string{"device"}, nil)
)

// Describe sends the descriptions of the collector's metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{submitted, inFlight, waits, rounds, growths, memory, lost, losses, submitLat, wakeLat} {
		ch <- d
	}
}

// Collect sends each device's metrics. Where the devices function
// panics, it sends one invalid metric whose error names the panic, which
// fails the scrape, and nothing else.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	devs, err := c.list()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		return
	}
	names := map[string]bool{}
	for _, d := range devs {
		if d == nil {
			continue
		}
		s := d.Stats()
		n := labelValue(s.Device)
		c.mu.Lock()
		// A name's losses are published from 0, so that its first loss
		// is an increase of the counter.
		if _, ok := c.losses[n]; !ok {
			c.losses[n] = 0
		}
		if s.Lost != nil {
			c.countLoss(d, n)
		} else {
			c.watched[d] = n
		}
		c.mu.Unlock()
		if names[n] {
			// A second device of the name, or the same device again:
			// its metrics would repeat the first's labels, which fails
			// the whole scrape. Its loss is counted above.
			continue
		}
		names[n] = true
		ch <- prometheus.MustNewConstMetric(submitted, prometheus.CounterValue, float64(s.Submitted), n)
		ch <- prometheus.MustNewConstMetric(inFlight, prometheus.GaugeValue, float64(s.InFlight), n)
		ch <- prometheus.MustNewConstMetric(waits, prometheus.CounterValue, float64(s.WaitsSpun), n, "spun")
		ch <- prometheus.MustNewConstMetric(waits, prometheus.CounterValue, float64(s.WaitsParked), n, "parked")
		ch <- prometheus.MustNewConstMetric(waits, prometheus.CounterValue, float64(s.WaitsCancelled), n, "cancelled")
		ch <- prometheus.MustNewConstMetric(rounds, prometheus.CounterValue, float64(s.ReclaimRounds), n)
		ch <- prometheus.MustNewConstMetric(growths, prometheus.CounterValue, float64(s.Growths), n)
		for k, b := range s.Bytes {
			ch <- prometheus.MustNewConstMetric(memory, prometheus.GaugeValue, float64(b), n, device.Memory(k).String())
		}
		if s.Lost != nil {
			ch <- prometheus.MustNewConstMetric(lost, prometheus.GaugeValue, 1, n, labelValue(s.Lost.Error()))
		}
		ch <- histogram(submitLat, &s.SubmitLatency, n)
		ch <- histogram(wakeLat, &s.WakeLatency, n)
	}
	// The metrics are sent once the lock is released: a consumer that
	// stops reading must not hold up the collector's other scrapes.
	var ms []prometheus.Metric
	c.mu.Lock()
	c.sweep()
	watchedNames := make(map[string]bool, len(c.watched))
	for _, n := range c.watched {
		watchedNames[n] = true
	}
	for n, v := range c.losses {
		if v == 0 && !names[n] && !watchedNames[n] {
			// A name no device has now, watched or listed, and that
			// never lost one: its zero series ends with it, so that
			// short-lived names do not accumulate.
			delete(c.losses, n)
			continue
		}
		ms = append(ms, prometheus.MustNewConstMetric(losses, prometheus.CounterValue, v, n))
	}
	c.mu.Unlock()
	for _, m := range ms {
		ch <- m
	}
}

// sweep counts the losses of the watched devices that are lost, drops
// those done closing without a loss, and forgets the counted devices the
// garbage collector freed. The caller holds c.mu.
func (c *Collector) sweep() {
	for d, n := range c.watched {
		// Done is read before the loss, so that a loss recorded
		// before the device was done closing is counted.
		done := false
		select {
		case <-d.Done():
			done = true
		default:
		}
		if d.Err() != nil {
			c.countLoss(d, n)
		} else if done {
			delete(c.watched, d)
		}
	}
	for w := range c.seen {
		if w.Value() == nil {
			delete(c.seen, w) // a lost device the garbage collector freed
		}
	}
}

// countLoss counts the loss of d, of name n, unless it was counted. The
// caller holds c.mu.
func (c *Collector) countLoss(d *rig.Device, n string) {
	delete(c.watched, d)
	w := weak.Make(d)
	if _, ok := c.seen[w]; !ok {
		c.seen[w] = struct{}{}
		c.losses[n]++
	}
}

// list calls the devices function. Its panic is returned as an error: the
// registry calls Collect on goroutines of its own, where a panic would end
// the process.
func (c *Collector) list() (devs []*rig.Device, err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok {
				err = fmt.Errorf("rigprom: the devices function panicked: %w", e)
			} else {
				err = fmt.Errorf("rigprom: the devices function panicked: %v", v)
			}
		}
	}()
	return c.devices(), nil
}

// labelValue is s as a label value: Prometheus refuses one that is not
// valid UTF-8, and a loss's cause may hold any bytes (a fault's cause is
// the driver's or a kernel's word), so each run of invalid bytes becomes
// U+FFFD.
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// histogram converts a rig histogram to a Prometheus one in seconds, with
// cumulative buckets at rig's power-of-two bounds from 64 ns to 69 s. Its
// count is at least the buckets' total: a snapshot taken while durations
// are recorded may read a duration's bucket and not yet its count, and a
// bucket above the count would make the histogram decrease at +Inf.
func histogram(desc *prometheus.Desc, h *rig.Histogram, name string) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum uint64
	for i, n := range h.Buckets {
		cum += n
		if i >= 6 && i < rig.HistogramBuckets-1 {
			buckets[h.UpperBound(i).Seconds()] = cum
		}
	}
	return prometheus.MustNewConstHistogram(desc, max(h.Count, cum), h.Sum.Seconds(), buckets, name)
}
