package profile

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestSummarizeSynthetic(t *testing.T) {
	// Device a: values at [0,10) [10,30) [50,60) [55,70) [100,200) over a
	// window of [0,400): busy 10+20+20+100 = 150, gaps 20 and 30.
	spans := []Span{
		{Device: "a", Queue: "COMPUTE:0", Value: 1, Start: 0, End: 10},
		{Device: "a", Queue: "COMPUTE:0", Value: 2, Start: 10, End: 30},
		{Device: "a", Queue: "COPY:0", QueueIndex: 1, Value: 3, Start: 50, End: 60},
		{Device: "a", Queue: "COMPUTE:0", Value: 4, Start: 55, End: 70},
		{Device: "a", Queue: "COMPUTE:0", Value: 5, Start: 100, End: 200},
		{Device: "b", Queue: "COMPUTE:0", Value: 9, Start: 300, End: 400},
	}
	s := Summarize(spans, 0, 400)
	if s.From != 0 || s.To != 400 || s.Spans != 6 || len(s.Devices) != 2 {
		t.Fatalf("summary %+v", s)
	}
	a := s.Devices[0]
	want := DeviceSummary{
		Device: "a", Count: 5, Busy: 150.0 / 400, BusyNs: 150,
		Gaps: 2, GapNs: 50, GapP50: 20, GapMax: 30,
		Mean: (10 + 20 + 10 + 15 + 100) / 5.0, P50: 15, P99: 100, Max: 100,
	}
	a.Queues, want.Queues = nil, nil
	if !reflect.DeepEqual(a, want) {
		t.Errorf("device a:\n got %+v\nwant %+v", a, want)
	}
	q := s.Devices[0].Queues
	if len(q) != 2 || q[0].Queue != "COMPUTE:0" || q[0].Count != 4 || q[0].Busy != 145.0/400 ||
		q[1].Queue != "COPY:0" || q[1].Count != 1 || q[1].Busy != 10.0/400 {
		t.Errorf("queues of a: %+v", q)
	}
	b := s.Devices[1]
	if b.Device != "b" || b.Count != 1 || b.Busy != 0.25 || b.Gaps != 0 || b.P50 != 100 || b.P99 != 100 {
		t.Errorf("device b: %+v", b)
	}

	text := s.String()
	for _, w := range []string{"profile of 400ns, 6 spans", "37.5%", "25.0%", "a COPY:0"} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
}

func TestSummarizeWindowFromSpans(t *testing.T) {
	spans := []Span{{Device: "a", Start: 100, End: 150}, {Device: "a", Start: 150, End: 300}}
	s := Summarize(spans, 0, 0)
	if s.From != 100 || s.To != 300 || s.Devices[0].Busy != 1 || s.Devices[0].Gaps != 0 {
		t.Errorf("summary %+v", s)
	}
	if e := Summarize(nil, 0, 0); len(e.Devices) != 0 || e.Spans != 0 {
		t.Errorf("summary of nothing %+v", e)
	}
}

func TestRank(t *testing.T) {
	s := make([]int64, 1000)
	for i := range s {
		s[i] = int64(i + 1)
	}
	for p, want := range map[float64]int64{0.5: 500, 0.9: 900, 0.99: 990, 0.999: 999, 1: 1000, 0: 1} {
		if got := rank(s, p); got != want {
			t.Errorf("rank(%v) = %d, want %d", p, got, want)
		}
	}
	if got := rank([]int64{7}, 0.99); got != 7 {
		t.Errorf("rank of one value = %d", got)
	}
}

func TestNanos(t *testing.T) {
	for ns, want := range map[int64]string{0: "0ns", 850: "850ns", 4100: "4.10µs", 12345: "12.3µs",
		999_999: "1.00ms", 1_230_000: "1.23ms", 2_500_000_000: "2.50s", 125_000_000_000: "125s"} {
		if got := Nanos(ns); got != want {
			t.Errorf("Nanos(%d) = %q, want %q", ns, got, want)
		}
	}
}

// TestSummarizeWindowInvertedSpans: a span whose end is before its start
// counts as the instant of its start, so that the window drawn from the
// spans covers it: never negative, and no busy fraction above the time
// the spans cover.
func TestSummarizeWindowInvertedSpans(t *testing.T) {
	for _, c := range []struct {
		name     string
		spans    []Span
		from, to int64
		busy     float64
	}{
		{"one inverted", []Span{{Device: "a", Start: 100, End: 50}}, 100, 100, 0},
		{"the last inverted", []Span{{Device: "a", Start: 100, End: 200}, {Device: "a", Start: 300, End: 250}}, 100, 300, 0.5},
		{"the first inverted", []Span{{Device: "a", Start: 100, End: 0}, {Device: "a", Start: 200, End: 300}}, 100, 300, 0.5},
		{"zero at time zero", []Span{{Device: "a", Start: 0, End: 0}, {Device: "a", Start: 0, End: 10}}, 0, 10, 1},
	} {
		s := Summarize(c.spans, 0, 0)
		if s.From != c.from || s.To != c.to || len(s.Devices) != 1 || s.Devices[0].Busy != c.busy {
			t.Errorf("%s: window [%d, %d], busy %+v; want [%d, %d], busy %v", c.name, s.From, s.To, s.Devices, c.from, c.to, c.busy)
		}
		if strings.Contains(s.String(), "profile of -") {
			t.Errorf("%s: %s", c.name, s.String())
		}
	}
}

// TestSummarizeSubWindow: spans that lie partly or wholly outside the
// window given count only their time within it as busy, so that no busy
// fraction exceeds 1.
func TestSummarizeSubWindow(t *testing.T) {
	spans := []Span{
		{Device: "a", Queue: "COMPUTE:0", Value: 1, Start: 0, End: 100},
		{Device: "a", Queue: "COMPUTE:0", Value: 2, Start: 300, End: 400},
		{Device: "a", Queue: "COPY:0", QueueIndex: 1, Value: 3, Start: 600, End: 700},
	}
	s := Summarize(spans, 50, 150)
	a := s.Devices[0]
	if a.BusyNs != 50 || a.Busy != 0.5 {
		t.Errorf("busy %d ns, %v of the window; want 50 ns, 0.5", a.BusyNs, a.Busy)
	}
	if a.Count != 3 || a.Gaps != 2 || a.GapNs != 400 {
		t.Errorf("count %d, gaps %d of %d ns; want 3 values, 2 gaps of 400 ns", a.Count, a.Gaps, a.GapNs)
	}
	for _, q := range a.Queues {
		if want := map[string]float64{"COMPUTE:0": 0.5, "COPY:0": 0}[q.Queue]; q.Busy != want {
			t.Errorf("queue %s busy %v, want %v", q.Queue, q.Busy, want)
		}
	}
}

// TestSummarizeEnormous: a window or a span longer than an int64 of
// nanoseconds holds (from math.MinInt64 to math.MaxInt64, say, for "all
// of it") is counted as the longest an int64 holds, never as a negative
// length: busy fractions stay in [0, 1], durations and gaps are not 0
// where they are huge, and the text states no negative window.
func TestSummarizeEnormous(t *testing.T) {
	const lo, hi = math.MinInt64, math.MaxInt64
	for _, c := range []struct {
		name          string
		spans         []Span
		from, to      int64
		busy          float64
		max, gapMax   int64
		busyNs, gapNs int64
	}{
		{"a span of all time", []Span{{Device: "a", Start: lo, End: hi}}, 0, 0, 1, hi, 0, hi, 0},
		{"a window of all time", []Span{{Device: "a", Start: 0, End: 100}}, lo, hi, 100 / (2 * float64(hi)), 100, 0, 100, 0},
		{"a gap of all time", []Span{{Device: "a", Start: lo, End: lo + 10}, {Device: "a", Start: hi - 10, End: hi}}, lo, hi,
			20 / (2 * float64(hi)), 10, hi, 20, hi},
		{"spans that add past it", []Span{{Device: "a", Start: lo, End: 0}, {Device: "a", Start: 1, End: hi}}, lo, hi,
			1, -lo - 1, 1, hi, 1},
	} {
		s := Summarize(c.spans, c.from, c.to)
		if len(s.Devices) != 1 {
			t.Fatalf("%s: %+v", c.name, s)
		}
		d := s.Devices[0]
		if math.Abs(d.Busy-c.busy) > 1e-9*c.busy || d.BusyNs != c.busyNs {
			t.Errorf("%s: busy %v (%d ns), want %v (%d ns)", c.name, d.Busy, d.BusyNs, c.busy, c.busyNs)
		}
		if d.Max != c.max || d.GapMax != c.gapMax || d.GapNs != c.gapNs {
			t.Errorf("%s: max %d, gap max %d, gaps %d ns; want %d, %d, %d", c.name, d.Max, d.GapMax, d.GapNs, c.max, c.gapMax, c.gapNs)
		}
		if strings.Contains(s.String(), "profile of -") {
			t.Errorf("%s: %s", c.name, s.String())
		}
	}
}
