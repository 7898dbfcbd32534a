package main

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// latenciesOf is the latencies of d.
func latenciesOf(d ...time.Duration) *latencies {
	l := &latencies{}
	l.add(d...)
	return l
}

// draws are distributions of latencies, in nanoseconds.
func draws(r *rand.Rand) []struct {
	name string
	draw func() time.Duration
} {
	return []struct {
		name string
		draw func() time.Duration
	}{
		{"uniform", func() time.Duration { return time.Duration(20_000 + r.Int64N(200_000)) }},
		{"lognormal", func() time.Duration { return time.Duration(math.Exp(11 + 1.2*r.NormFloat64())) }},
		{"bimodal", func() time.Duration {
			if r.IntN(100) < 3 {
				return time.Duration(5_000_000 + r.Int64N(1_000_000))
			}
			return time.Duration(60_000 + r.Int64N(5_000))
		}},
		{"few", func() time.Duration { return []time.Duration{1, 700, 30_000, 4_096_000}[r.IntN(4)] }},
	}
}

// record adds the latencies of vs from clients goroutines, each through
// a batch of its own, as a level's clients do.
func record(l *latencies, vs []time.Duration, clients int) {
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			b := newBatch(l)
			for i := g; i < len(vs); i += clients {
				b.add(vs[i])
			}
			b.flush()
		})
	}
	wg.Wait()
}

// TestLatenciesExact: a level of up to exactCap latencies reports the
// figures of its sorted latencies, as it did when it kept them all.
func TestLatenciesExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range draws(r) {
		for _, n := range []int{1, 2, 99, 100, 101, 12_345, exactCap} {
			vs := make([]time.Duration, n)
			for i := range vs {
				vs[i] = d.draw()
			}
			l := &latencies{}
			record(l, vs, 7)
			got := summarize(l, []int{0}, time.Second)
			want := sortedSummary(vs)
			if got != want {
				t.Errorf("%s, %d latencies: %+v, the sorted latencies give %+v", d.name, n, got, want)
			}
		}
	}
}

// sortedSummary is summarize's result of vs over a second, as the load
// test computed it when it kept every latency: the nearest ranks of the
// sorted latencies.
func sortedSummary(vs []time.Duration) result {
	s := slices.Sorted(slices.Values(vs))
	at := func(p int) time.Duration { return s[min(max((p*len(s)+99)/100, 1), len(s))-1] }
	return result{n: len(s), rate: float64(len(s)), p50: at(50), p99: at(99), max: s[len(s)-1]}
}

// TestLatenciesHistogram: past exactCap the latencies go into a
// histogram, whose figures are those of the sorted latencies within its
// precision (1/16384 above, which is within the report's 0.1 µs up to
// 1.6 ms), the max exact.
func TestLatenciesHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range draws(r) {
		vs := make([]time.Duration, 2*exactCap+12_345)
		for i := range vs {
			vs[i] = d.draw()
		}
		l := &latencies{}
		record(l, vs, 5)
		if l.h == nil || l.exact != nil {
			t.Fatalf("%s: %d latencies kept one by one (%d), want a histogram", d.name, len(vs), len(l.exact))
		}
		s := slices.Sorted(slices.Values(vs))
		for _, k := range []int{1, len(s) / 2, len(s) * 9 / 10, (len(s)*99 + 99) / 100, len(s) * 999 / 1000, len(s) - 1, len(s)} {
			got, want := l.rank(k), s[k-1]
			if got < want || got-want > want/16384 || want < 1600*time.Microsecond && got-want >= 100 {
				t.Errorf("%s: rank %d of %d is %v, the sorted latencies say %v", d.name, k, len(s), got, want)
			}
		}
		if got := summarize(l, []int{0}, time.Second); got.n != len(s) || got.max != s[len(s)-1] {
			t.Errorf("%s: %d latencies, max %v; want %d, %v", d.name, got.n, got.max, len(s), s[len(s)-1])
		}
	}
}

// TestLatenciesBounded: a level's latencies take memory that does not
// grow with their number, so that a level of hours keeps no more than
// one of seconds.
func TestLatenciesBounded(t *testing.T) {
	l := &latencies{}
	vs := make([]time.Duration, batchLen)
	for i := range vs {
		vs[i] = time.Duration(i) * time.Microsecond
	}
	for range exactCap/batchLen + 1 {
		l.add(vs...)
	}
	b := newBatch(l)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 1 << 23 // a long level's requests
	for i := range n {
		b.add(time.Duration(i%100_000) * time.Nanosecond)
	}
	b.flush()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<10 {
		t.Errorf("%d latencies allocated %d bytes; want the histogram's, whatever their number", n, grew)
	}
	if got, want := l.count(), n+(exactCap/batchLen+1)*batchLen; got != want || l.exact != nil {
		t.Errorf("%d latencies (%d kept one by one), want %d in the histogram", got, len(l.exact), want)
	}
}

// TestFromIntendedSorted: the figures of a paced attack are those its
// requests gave when they were kept one by one and sorted, up to
// exactCap of them, and within the histogram's precision past it.
func TestFromIntendedSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	t0 := time.Now()
	const rate = 200_000
	period := time.Second / rate
	for _, n := range []int{1, 100, 101, 54_321, exactCap, 2*exactCap + 7} {
		sent := make([]sentAt, n)
		for i := range sent {
			// Taken up from 0 to 50 µs late, a few 2 ms late, after an
			// attack that began up to 10 µs after t0.
			late := time.Duration(r.Int64N(50_000))
			if r.IntN(1000) == 0 {
				late = 2 * time.Millisecond
			}
			at := t0.Add(3*time.Microsecond + time.Duration(i)*period + late)
			sent[i] = sentAt{seq: uint64(i), at: at, took: time.Duration(20_000 + r.Int64N(80_000))}
		}
		// Out of order, as vegeta's clients answer.
		r.Shuffle(len(sent), func(i, j int) { sent[i], sent[j] = sent[j], sent[i] })
		p99, max, late99 := pacedOf(t0, sent, rate).fromIntended()
		w99, wmax, wlate99 := sortedFromIntended(sent, rate)
		if n <= exactCap {
			if p99 != w99 || max != wmax || late99 != wlate99 {
				t.Errorf("%d requests: %v, %v, %v; sorted, they give %v, %v, %v", n, p99, max, late99, w99, wmax, wlate99)
			}
			continue
		}
		// The histogram's durations run from the attack's start.
		near := func(got, want time.Duration) bool { return got >= want && got-want <= (want+10*time.Microsecond)/16384 }
		if !near(p99, w99) || max != wmax || !near(late99, wlate99) {
			t.Errorf("%d requests: %v, %v, %v; sorted, they give %v, %v, %v", n, p99, max, late99, w99, wmax, wlate99)
		}
	}
}

// sortedFromIntended is fromIntended's figures of sent at rate as the
// load test computed them when it kept every request: from their sorted
// latencies and lateness.
func sortedFromIntended(sent []sentAt, rate int) (p99, max, late99 time.Duration) {
	period := float64(time.Second / time.Duration(rate))
	intended := func(s sentAt, start time.Time) time.Time {
		return start.Add(time.Duration(period * float64(s.seq)))
	}
	start := sent[0].at
	for _, s := range sent {
		if t := s.at.Add(-time.Duration(period * float64(s.seq))); t.Before(start) {
			start = t
		}
	}
	lat, late := make([]time.Duration, len(sent)), make([]time.Duration, len(sent))
	for i, s := range sent {
		lat[i] = s.at.Add(s.took).Sub(intended(s, start))
		late[i] = s.at.Sub(intended(s, start))
	}
	slices.Sort(lat)
	slices.Sort(late)
	k := (len(lat)*99+99)/100 - 1 // the nearest rank, from 0
	return lat[k], lat[len(lat)-1], late[k]
}
