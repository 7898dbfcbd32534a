package rig

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
)

// Stats is a snapshot of a device's counters, for a server's metrics.
// Device.Stats takes it without a lock; each field is read atomically, so
// fields may be a few events apart from one another.
type Stats struct {
	// Device is the device's name.
	Device string
	// Submitted is the values submitted since the device opened, and
	// InFlight those of them whose point is not reached yet.
	Submitted, InFlight uint64
	// WaitsSpun counts the waits that ended while reading the word,
	// WaitsParked those that parked with the supervisor, and
	// WaitsCancelled those whose context ended first. WaitsHanded counts
	// those of WaitsParked that Do's submission combined, whose wait the
	// combiner handed to the supervisor while the goroutine was parked:
	// they parked once for the submission and its wait.
	WaitsSpun, WaitsParked, WaitsCancelled, WaitsHanded uint64
	// ReclaimRounds counts the rounds of reclamation run for allocations,
	// entries and growths that the device or its budget refused; Growths
	// the growths of the driver's queues.
	ReclaimRounds, Growths uint64
	// Bytes is the bytes of live buffers and images, by kind of memory
	// (indexed by device.Memory), each in whole units of the driver's
	// alignment, as Budget counts them.
	Bytes [3]int64
	// Lost is the loss's error, nil while the device is not lost.
	Lost error
	// SubmitLatency is the time Run.Submit took, sampled: one submission
	// in SubmitSample.
	SubmitLatency Histogram
	// WakeLatency is the time from the supervisor's answer to a parked
	// waiter (its point reached, or its device lost or closed) to the
	// waiter's running again.
	WakeLatency Histogram
}

// SubmitSample is how often Run.Submit's time is measured for
// Stats.SubmitLatency: once every SubmitSample values.
const SubmitSample = 64

// Histogram is a distribution of durations in buckets whose upper bounds
// are powers of two nanoseconds: bucket i counts durations d with
// 2^(i-1) < d <= 2^i ns (bucket 0: d <= 1 ns), up to HistogramBuckets.
type Histogram struct {
	// Buckets are the counts per bucket; the last counts everything past
	// the one before it.
	Buckets [HistogramBuckets]uint64
	// Count is the durations recorded, the total of Buckets.
	Count uint64
	// Sum is the recorded durations' total.
	Sum time.Duration
}

// HistogramBuckets is the number of buckets of a Histogram: the last but
// one ends at 2^(HistogramBuckets-2) ns, about 69 s.
const HistogramBuckets = 38

// UpperBound is the upper bound of bucket i: 0 for a negative i, which
// names no bucket, and the largest Duration for the last bucket and past it.
func (h *Histogram) UpperBound(i int) time.Duration {
	if i < 0 {
		return 0
	}
	if i >= HistogramBuckets-1 {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(1) << i
}

// Quantile is the upper bound of the bucket that holds the q-quantile
// (0 < q <= 1) of the durations in the buckets, or 0 where they hold none.
// The quantile is nearest-rank: of n durations, the ceil(q*n)-th smallest,
// so that no more than (1-q)*n of them lie above the bound. The rank
// counts over the buckets' total rather than Count, so that a Histogram
// whose Count disagrees with its buckets still answers a bound that one of
// its durations reached.
func (h *Histogram) Quantile(q float64) time.Duration {
	var total uint64
	for _, n := range h.Buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := uint64(1)
	if x := q * float64(total); x > 1 {
		// Rounds up, but not for the float error of a product that is
		// whole (0.07*100 is 7.000000000000001): a few units in the last
		// place, where a tolerance in proportion to x would swallow a
		// fraction of a rank past 10^5 values (0.9999 of 109,999 is
		// 109,988.9).
		rank = uint64(math.Ceil(min(x, float64(total)) * (1 - 0x1p-50)))
	}
	rank = max(min(rank, total), 1)
	var seen uint64
	for i, n := range h.Buckets {
		seen += n
		if seen >= rank {
			return h.UpperBound(i)
		}
	}
	return h.UpperBound(HistogramBuckets - 1)
}

// histogram is a Histogram that goroutines record into with atomic adds.
type histogram struct {
	buckets [HistogramBuckets]atomic.Uint64
	sum     atomic.Int64
}

// record adds d. It takes no lock and allocates nothing.
func (h *histogram) record(d time.Duration) {
	i := 0
	if d > 1 {
		i = min(bits.Len64(uint64(d-1)), HistogramBuckets-1)
	}
	h.buckets[i].Add(1)
	h.sum.Add(int64(d))
}

// snapshot reads h. Its Count is the total of the buckets it read, so
// that the two agree while durations are being recorded: a count kept
// beside the buckets and read after them may already hold durations whose
// buckets were read before they were added to, and a Count above the
// buckets' total would put a quantile past every bucket.
func (h *histogram) snapshot() Histogram {
	var s Histogram
	for i := range h.buckets {
		s.Buckets[i] = h.buckets[i].Load()
		s.Count += s.Buckets[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// stats are a device's counters; the paths that count write them with
// atomic adds.
type stats struct {
	waitsSpun, waitsParked, waitsCancelled atomic.Uint64
	waitsHanded                            atomic.Uint64
	reclaimRounds, growths                 atomic.Uint64
	bytes                                  [3]atomic.Int64
	submit, wake                           histogram
}

// Stats takes a snapshot of the device's counters. Any goroutine may call
// it; it takes no lock.
func (d *Device) Stats() Stats {
	last, cur := d.last.Load(), d.read()
	s := Stats{
		Device:         d.name,
		Submitted:      last - d.base,
		WaitsSpun:      d.stats.waitsSpun.Load(),
		WaitsParked:    d.stats.waitsParked.Load(),
		WaitsCancelled: d.stats.waitsCancelled.Load(),
		WaitsHanded:    d.stats.waitsHanded.Load(),
		ReclaimRounds:  d.stats.reclaimRounds.Load(),
		Growths:        d.stats.growths.Load(),
		SubmitLatency:  d.stats.submit.snapshot(),
		WakeLatency:    d.stats.wake.snapshot(),
	}
	if !device.AtLeast(cur, last) {
		s.InFlight = last - cur
	}
	for i := range s.Bytes {
		s.Bytes[i] = d.stats.bytes[i].Load()
	}
	if err := d.Err(); err != nil {
		s.Lost = err
	}
	return s
}
