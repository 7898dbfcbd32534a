package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestLatencyPercentiles records values of several distributions from
// several lanes and checks each percentile against a sorted reference:
// within the histogram's precision (three significant digits) of the
// nearest-rank value.
func TestLatencyPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dist := range []struct {
		name string
		draw func() int64
	}{
		{"uniform", func() int64 { return 1000 + r.Int64N(9000) }},
		{"lognormal", func() int64 { return int64(math.Exp(8 + 1.5*r.NormFloat64())) }},
		{"bimodal", func() int64 {
			if r.IntN(100) < 3 {
				return 5_000_000 + r.Int64N(1_000_000)
			}
			return 2000 + r.Int64N(500)
		}},
		{"few", func() int64 { return []int64{1, 7, 300, 4096}[r.IntN(4)] }},
	} {
		l := newLatencyFor(3)
		ref := make([]int64, 0, 100_000)
		for i := range 100_000 {
			v := dist.draw()
			ref = append(ref, v)
			l.record(i%5, v)
		}
		slices.Sort(ref)
		h := l.merged()
		if h.TotalCount() != int64(len(ref)) {
			t.Fatalf("%s: %d values, want %d", dist.name, h.TotalCount(), len(ref))
		}
		s := summarize(h)
		for _, c := range []struct {
			q   float64
			got int64
		}{{50, s.P50}, {90, s.P90}, {99, s.P99}, {99.9, s.P999}, {100, s.Max}, {0, s.Min}} {
			rank := int(math.Ceil(c.q/100*float64(len(ref)) - 1e-9))
			want := ref[min(max(rank, 1), len(ref))-1]
			if !near(c.got, want) {
				t.Errorf("%s: p%v = %d, the sorted reference says %d", dist.name, c.q, c.got, want)
			}
		}
		var sum float64
		for _, v := range ref {
			sum += float64(v)
		}
		if mean := sum / float64(len(ref)); math.Abs(s.Mean-mean) > 2e-3*mean {
			t.Errorf("%s: mean %v, want %v", dist.name, s.Mean, mean)
		}
	}
}

// near reports whether got is within the histogram's precision of want:
// 0.1%, or 1 for small values.
func near(got, want int64) bool {
	return math.Abs(float64(got-want)) <= math.Max(1, 1e-3*float64(want))
}

// TestLatencyBounds: a value below 1 ns is recorded as 1 ns, and one past
// any wait a run could time reads back as itself.
func TestLatencyBounds(t *testing.T) {
	l := newLatencyFor(3)
	l.record(0, -5)
	l.record(1, 0)
	l.record(2, 1<<62)
	l.recordBatch(4, []int64{-1, 1 << 62})
	s := summarize(l.merged())
	if s.Count != 5 || s.Min != 1 || s.Max < 1<<62 || !near(s.Max, 1<<62) {
		t.Errorf("summary %+v", s)
	}
	if e := summarize(newLatencyFor(3).merged()); e != (Latency{}) {
		t.Errorf("summary of nothing %+v", e)
	}
}

// TestLatencyPastHundredSeconds records waits of over 100 s, up to the
// longest time.Duration, as a run records them (in a lane's batch, its
// lateness one by one, then added to the rounds' measure): the summary's
// p99 and maximum, and the report's in JSON and in text, read back at or
// above each wait, within the histogram's precision, rather than at a
// bound below it.
func TestLatencyPastHundredSeconds(t *testing.T) {
	maxRe := regexp.MustCompile(`latency p50 \S+  p90 \S+  p99 (\S+)s  p99\.9 \S+  max (\S+)s `)
	for _, d := range []time.Duration{101 * time.Second, 150 * time.Second, time.Hour, 30 * 24 * time.Hour, math.MaxInt64} {
		m := newMeasureFor(2, true)
		m.lat.recordBatch(1, []int64{int64(d), int64(d)})
		m.late.record(0, int64(d))
		all := newMeasure()
		all.add(m)
		r := result("rig", all)
		for _, c := range []struct {
			what string
			got  int64
		}{{"p99", r.Latency.P99}, {"max", r.Latency.Max}, {"lateness max", r.Lateness.Max}} {
			if c.got < int64(d) || !near(c.got, int64(d)) {
				t.Errorf("a wait of %v: %s %v, want it or up to 0.1%% above", d, c.what, time.Duration(c.got))
			}
		}

		rep := &Report{Schema: schema, Rig: r}
		var js bytes.Buffer
		if err := rep.writeJSON(&js); err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(js.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if back.Rig.Latency.Max < int64(d) || back.Rig.Latency.P99 < int64(d) {
			t.Errorf("a wait of %v: the JSON says p99_ns %d, max_ns %d", d, back.Rig.Latency.P99, back.Rig.Latency.Max)
		}

		var text bytes.Buffer
		if err := rep.writeText(&text); err != nil {
			t.Fatal(err)
		}
		f := maxRe.FindStringSubmatch(text.String())
		if f == nil {
			t.Fatalf("a wait of %v: no latency line in seconds in\n%s", d, text.String())
		}
		for i, what := range []string{"p99", "max"} {
			// The text gives three significant digits (whole seconds
			// from 100 s), which may round down by half a digit.
			if s, err := strconv.ParseFloat(f[i+1], 64); err != nil || s < d.Seconds()*(1-5e-3) {
				t.Errorf("a wait of %v: the text says %s %ss", d, what, f[i+1])
			}
		}
	}
}

// TestLatencyRecordAllocs: recording a value, or a batch of them, of any
// length allocates nothing.
func TestLatencyRecordAllocs(t *testing.T) {
	l := newLatencyFor(2)
	batch := []int64{1, 2500, 3e6, 150e9, math.MaxInt64}
	if a := testing.AllocsPerRun(100, func() {
		l.record(0, 150e9)
		l.recordBatch(1, batch)
	}); a != 0 {
		t.Errorf("%v allocations a recording, want none", a)
	}
}

// BenchmarkLatencyRecordBatch records a lane's batch of latencies from
// microseconds to milliseconds, as a run's lanes flush their tallies.
func BenchmarkLatencyRecordBatch(b *testing.B) {
	l := newLatencyFor(1)
	var batch [tallyBatch]int64
	for i := range batch {
		batch[i] = int64(1000 + i*i*997)
	}
	b.ReportAllocs()
	for b.Loop() {
		l.recordBatch(0, batch[:])
	}
}

// TestLatencyPercentilesFew checks the percentiles of 0 to 200 values
// against the nearest rank: the ceil(p/100*n)-th smallest of n.
func TestLatencyPercentilesFew(t *testing.T) {
	for n := range 201 {
		l := newLatencyFor(3)
		ref := make([]int64, n)
		for i := range n {
			ref[i] = int64(i+1) * 1000
			l.record(i, ref[i])
		}
		s := summarize(l.merged())
		if n == 0 {
			if s != (Latency{}) {
				t.Errorf("no values: %+v", s)
			}
			continue
		}
		for _, c := range []struct {
			q   float64
			got int64
		}{{50, s.P50}, {90, s.P90}, {99, s.P99}, {99.9, s.P999}} {
			rank := int(math.Ceil(c.q/100*float64(n) - 1e-9))
			if want := ref[rank-1]; !near(c.got, want) {
				t.Errorf("%d values: p%v = %d, want the %d-th, %d", n, c.q, c.got, rank, want)
			}
		}
	}
}
