package main

import (
	"fmt"
	"strings"

	"github.com/rig-go/rig/profile"
	rig "github.com/rig-go/rig/runtime"
)

// Waits is how the run's waits ended, over all its devices, from their
// Stats taken before and after the run: so that a tail shows whether it
// came from waits that parked with the supervisor.
type Waits struct {
	Spun      uint64 `json:"spun"`
	Parked    uint64 `json:"parked"`
	Cancelled uint64 `json:"cancelled"`
	// Handed is the parked waits of Run.Do that a combiner handed to the
	// supervisor (Stats.WaitsHanded): their goroutines parked once for
	// the submission and its wait.
	Handed uint64 `json:"handed"`
	// Woken is the parked waiters the supervisor woke with their point
	// reached; WakeP50Ns and WakeP99Ns bound their wake-up: the time from
	// the supervisor's finding the point reached to the waiter's running
	// again (the upper bound of the histogram's bucket), 0 where none
	// was woken.
	Woken     uint64 `json:"woken"`
	WakeP50Ns int64  `json:"wake_p50_ns"`
	WakeP99Ns int64  `json:"wake_p99_ns"`
	// Growths and ReclaimRounds are the growths of the drivers' queues
	// and the reclamation rounds over the run: a growth holds up the
	// submissions behind it, so that a tail shows whether one came in
	// the run.
	Growths       uint64 `json:"growths"`
	ReclaimRounds uint64 `json:"reclaim_rounds"`
}

// statsOf takes the devices' Stats.
func statsOf(devs []*rig.Device) []rig.Stats {
	s := make([]rig.Stats, len(devs))
	for i, d := range devs {
		s[i] = d.Stats()
	}
	return s
}

// waitsBetween is the waits of the devices between the Stats before and
// after.
func waitsBetween(before, after []rig.Stats) *Waits {
	var w Waits
	var wake rig.Histogram
	for i := range after {
		b, a := before[i], after[i]
		w.Spun += a.WaitsSpun - b.WaitsSpun
		w.Parked += a.WaitsParked - b.WaitsParked
		w.Cancelled += a.WaitsCancelled - b.WaitsCancelled
		w.Handed += a.WaitsHanded - b.WaitsHanded
		w.Growths += a.Growths - b.Growths
		w.ReclaimRounds += a.ReclaimRounds - b.ReclaimRounds
		for j := range wake.Buckets {
			wake.Buckets[j] += a.WakeLatency.Buckets[j] - b.WakeLatency.Buckets[j]
		}
		wake.Count += a.WakeLatency.Count - b.WakeLatency.Count
		wake.Sum += a.WakeLatency.Sum - b.WakeLatency.Sum
	}
	w.Woken = wake.Count
	if wake.Count > 0 {
		w.WakeP50Ns = int64(wake.Quantile(0.5))
		w.WakeP99Ns = int64(wake.Quantile(0.99))
	}
	return &w
}

// text is w as a line of the text report.
func (w *Waits) text() string {
	var b strings.Builder
	// A wait that parked and was then cancelled counts in both Parked and
	// Cancelled: the share is of the waits that spun or parked.
	all := w.Spun + w.Parked
	fmt.Fprintf(&b, "  waits: %d spun, %d parked", w.Spun, w.Parked)
	if all > 0 {
		fmt.Fprintf(&b, " (%.1f%%)", 100*float64(w.Parked)/float64(all))
	}
	if w.Handed > 0 {
		fmt.Fprintf(&b, ", of them %d handed over as their submission combined", w.Handed)
	}
	if w.Cancelled > 0 {
		fmt.Fprintf(&b, ", %d cancelled", w.Cancelled)
	}
	if w.Woken > 0 {
		fmt.Fprintf(&b, "; a parked waiter's wake-up p50 <= %s, p99 <= %s",
			profile.Nanos(w.WakeP50Ns), profile.Nanos(w.WakeP99Ns))
	}
	if w.Growths > 0 || w.ReclaimRounds > 0 {
		fmt.Fprintf(&b, "; %d growths, %d reclamation rounds", w.Growths, w.ReclaimRounds)
	}
	b.WriteString("\n")
	return b.String()
}
