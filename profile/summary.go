package profile

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Summary is a profile reduced to figures per device.
type Summary struct {
	// From and To are the window the figures cover, in nanoseconds of
	// device.Now.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Spans is the count of spans summarized, and Dropped the spans the
	// profile dropped over its bound.
	Spans   int   `json:"spans"`
	Dropped int64 `json:"dropped"`
	// Devices holds a summary per device, in the order of their names.
	Devices []DeviceSummary `json:"devices"`
}

// DeviceSummary is the figures of one device's spans. Durations are in
// nanoseconds.
type DeviceSummary struct {
	// Device is the device's name.
	Device string `json:"device"`
	// Count is the device's spans: the values profiled.
	Count int `json:"count"`
	// Busy is the fraction of the window in which some value of the device
	// ran (the union of its spans, within the window), and BusyNs that
	// time.
	Busy   float64 `json:"busy"`
	BusyNs int64   `json:"busy_ns"`
	// Gaps is the count of idle stretches between the device's values,
	// GapNs their total, and GapP50 and GapMax the median and longest.
	Gaps   int   `json:"gaps"`
	GapNs  int64 `json:"gap_ns"`
	GapP50 int64 `json:"gap_p50_ns"`
	GapMax int64 `json:"gap_max_ns"`
	// Mean, P50, P99 and Max are of the spans' durations.
	Mean float64 `json:"mean_ns"`
	P50  int64   `json:"p50_ns"`
	P99  int64   `json:"p99_ns"`
	Max  int64   `json:"max_ns"`
	// Queues holds the count and busy fraction of each queue that values
	// ended on, by name.
	Queues []QueueSummary `json:"queues,omitempty"`
}

// QueueSummary is the figures of the spans that ended on one queue.
type QueueSummary struct {
	// Queue is the queue's name, Count the spans that ended on it, and
	// Busy the fraction of the window in which one of them ran.
	Queue string  `json:"queue"`
	Count int     `json:"count"`
	Busy  float64 `json:"busy"`
}

// Summarize reduces spans to figures per device over the window [from,
// to] in nanoseconds of device.Now; where to is not after from, the window
// is from the earliest start to the latest end of the spans. A span whose
// end is before its start counts as the instant of its start, in the
// window as in the durations and the busy time. A duration, gap or busy
// time longer than an int64 holds (a span or a window from math.MinInt64
// to math.MaxInt64) reads as math.MaxInt64, and the busy fractions are of
// the exact lengths. Percentiles are nearest-rank: the p-th of n sorted
// values is the ceil(p*n)-th.
func Summarize(spans []Span, from, to int64) Summary {
	if to <= from && len(spans) > 0 {
		from, to = spans[0].Start, spans[0].Start
		for i := range spans {
			from, to = min(from, spans[i].Start), max(to, spans[i].Start, spans[i].End)
		}
	}
	s := Summary{From: from, To: to, Spans: len(spans)}
	byDev := map[string][]Span{}
	for _, sp := range spans {
		byDev[sp.Device] = append(byDev[sp.Device], sp)
	}
	for name, ds := range byDev {
		s.Devices = append(s.Devices, summarizeDevice(name, ds, from, to))
	}
	sort.Slice(s.Devices, func(i, j int) bool { return s.Devices[i].Device < s.Devices[j].Device })
	return s
}

// ensure adds an empty summary for the device name where it has none.
func (s *Summary) ensure(name string) {
	for _, d := range s.Devices {
		if d.Device == name {
			return
		}
	}
	s.Devices = append(s.Devices, DeviceSummary{Device: name})
	sort.Slice(s.Devices, func(i, j int) bool { return s.Devices[i].Device < s.Devices[j].Device })
}

func summarizeDevice(name string, spans []Span, from, to int64) DeviceSummary {
	window := length(from, to)
	d := DeviceSummary{Device: name, Count: len(spans)}
	durs := make([]int64, len(spans))
	var sum float64
	for i := range spans {
		l := length(spans[i].Start, spans[i].End)
		durs[i] = clamp(l)
		sum += float64(l)
	}
	slices.Sort(durs)
	d.Mean = sum / float64(len(spans))
	d.P50, d.P99, d.Max = rank(durs, 0.50), rank(durs, 0.99), durs[len(durs)-1]

	busy, gaps := union(spans, from, to)
	d.BusyNs = clamp(busy)
	d.Busy = fraction(busy, window)
	d.Gaps = len(gaps)
	if len(gaps) > 0 {
		for _, g := range gaps {
			d.GapNs = clamp(uint64(d.GapNs) + uint64(g)) // two int64s above 0 add up within a uint64
		}
		slices.Sort(gaps)
		d.GapP50, d.GapMax = rank(gaps, 0.50), gaps[len(gaps)-1]
	}

	byQueue := map[string][]Span{}
	for _, sp := range spans {
		byQueue[sp.Queue] = append(byQueue[sp.Queue], sp)
	}
	for q, qs := range byQueue {
		b, _ := union(qs, from, to)
		d.Queues = append(d.Queues, QueueSummary{Queue: q, Count: len(qs), Busy: fraction(b, window)})
	}
	sort.Slice(d.Queues, func(i, j int) bool { return d.Queues[i].Queue < d.Queues[j].Queue })
	return d
}

// rank is the nearest-rank p-quantile of the sorted values s, which are
// not empty.
func rank(s []int64, p float64) int64 {
	i := int(math.Ceil(p*float64(len(s))-1e-9)) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func fraction(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// length is the nanoseconds from a to b, 0 where b is not after a: up to
// 2^64-1, which no int64 holds, from math.MinInt64 to math.MaxInt64.
func length(a, b int64) uint64 {
	if b <= a {
		return 0
	}
	return uint64(b) - uint64(a)
}

// clamp is n as an int64, math.MaxInt64 where n is larger.
func clamp(n uint64) int64 { return int64(min(n, math.MaxInt64)) }

// union is the time within [from, to] covered by the spans, and the idle
// stretches between them, each longer than 0, wherever they lie, at most
// math.MaxInt64 each.
func union(spans []Span, from, to int64) (busy uint64, gaps []int64) {
	within := func(iv [2]int64) uint64 { return length(max(iv[0], from), min(iv[1], to)) }
	iv := make([][2]int64, len(spans))
	for i := range spans {
		iv[i] = [2]int64{spans[i].Start, max(spans[i].End, spans[i].Start)}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	cur := iv[0]
	for _, x := range iv[1:] {
		if x[0] <= cur[1] {
			cur[1] = max(cur[1], x[1])
			continue
		}
		busy += within(cur) // disjoint stretches of the window, which a uint64 holds
		gaps = append(gaps, clamp(length(cur[1], x[0])))
		cur = x
	}
	busy += within(cur)
	return busy, gaps
}

// WriteText writes the summary as a table, one line per device, and one
// indented line per queue where a device's values ended on several.
func (s Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "profile of %s, %d spans", Nanos(clamp(length(s.From, s.To))), s.Spans)
	if s.Dropped > 0 {
		fmt.Fprintf(tw, " (%d dropped over the bound)", s.Dropped)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "device\tvalues\tbusy\tgaps\tgap total\tgap p50\tgap max\tp50\tp99\tmax\t")
	for _, d := range s.Devices {
		if d.Count == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t-\t-\t-\t-\t\n", d.Device)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", d.Device, d.Count, 100*d.Busy,
			d.Gaps, Nanos(d.GapNs), Nanos(d.GapP50), Nanos(d.GapMax), Nanos(d.P50), Nanos(d.P99), Nanos(d.Max))
		if len(d.Queues) > 1 {
			for _, q := range d.Queues {
				fmt.Fprintf(tw, "%s %s\t%d\t%.1f%%\t\t\t\t\t\t\t\t\n", d.Device, q.Queue, q.Count, 100*q.Busy)
			}
		}
	}
	return tw.Flush()
}

// String is the summary as WriteText writes it.
func (s Summary) String() string {
	var b strings.Builder
	_ = s.WriteText(&b)
	return b.String()
}

// Nanos formats a count of nanoseconds with three significant digits and
// the unit that suits it: "850ns", "4.10µs", "1.23ms", "2.50s".
func Nanos(ns int64) string {
	d := float64(ns)
	switch a := max(d, -d); {
	case a < 1e3:
		return fmt.Sprintf("%dns", ns)
	case a < 999.5e3:
		return sig3(d/1e3) + "µs"
	case a < 999.5e6:
		return sig3(d/1e6) + "ms"
	default:
		return sig3(d/1e9) + "s"
	}
}

// sig3 formats x with three significant digits, for 1 <= |x| < 1000 (and
// the seconds beyond).
func sig3(x float64) string {
	a := max(x, -x)
	switch {
	case a < 9.995:
		return fmt.Sprintf("%.2f", x)
	case a < 99.95:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}
