package rig

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// kickFake is the fake as a device.Kicker: Submit stores nothing into the
// word (held), and Kick completes every value submitted, having checked
// Kick's rules.
type kickFake struct {
	*fake
	d         *Device        // set after Open, for checkLock
	checkLock bool           // Kick checks that no one holds the submit lock
	spin      time.Duration  // each Kick lasts at least spin
	hook      func(v uint64) // where set, each Kick calls it first
	in        atomic.Int32
	kicks     atomic.Int64
	last      atomic.Uint64 // the v of the last Kick
	mu        sync.Mutex
	broke     []string // Kick's rules broken
}

func newKickFake() *kickFake {
	k := &kickFake{fake: newFake()}
	k.held = true
	return k
}

func (k *kickFake) opener(name string) device.Opener {
	return device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		k.facts.Word = w
		k.last.Store(atomic.LoadUint64(w))
		return k, nil
	}}
}

// open opens a device of the fake, closed when the test ends.
func (k *kickFake) open(t *testing.T, name string) *Device {
	t.Helper()
	k.d = openWith(t, k.opener(name))
	return k.d
}

func (k *kickFake) broken(format string, args ...any) {
	k.mu.Lock()
	k.broke = append(k.broke, fmt.Sprintf(format, args...))
	k.mu.Unlock()
}

func (k *kickFake) Kick(v uint64) {
	if n := k.in.Add(1); n != 1 {
		k.broken("%d Kicks at once", n)
	}
	defer k.in.Add(-1)
	if k.hook != nil {
		k.hook(v)
	}
	if prev := k.last.Swap(v); !device.AtLeast(v, prev) {
		k.broken("Kick(%d) after Kick(%d)", v, prev)
	}
	k.kicks.Add(1)
	// A kick's round trip on the bus, about which submitters gather.
	for t0 := time.Now(); time.Since(t0) < k.spin; {
	}
	if k.checkLock {
		if !k.d.mu.TryLock() {
			k.broken("Kick(%d) under the submit lock", v)
		} else {
			k.d.unlockSubmit()
		}
	}
	k.fake.mu.Lock()
	defer k.fake.mu.Unlock()
	n := len(k.submitted)
	if n == 0 || !device.AtLeast(k.submitted[n-1].Value, v) {
		k.broken("Kick(%d) before its Submit", v)
		return
	}
	k.store(k.submitted[n-1].Value)
}

func (k *kickFake) check(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, b := range k.broke {
		t.Error(b)
	}
}

// TestKickEachSubmit: one submitter kicks each value it submits, once,
// after the submit lock is released, and its point is reached.
func TestKickEachSubmit(t *testing.T) {
	k := newKickFake()
	k.checkLock = true
	d := k.open(t, "kick-one")
	s := empty(t, d)
	for i := range 100 {
		p := submit(t, s)
		if got := k.kicks.Load(); got != int64(i+1) {
			t.Fatalf("%d kicks after %d submissions", got, i+1)
		}
		if got := k.last.Load(); got != p.v {
			t.Fatalf("Kick(%d) for value %d", got, p.v)
		}
		if !p.passed() {
			t.Fatalf("value %d not reached after its Submit", p.v)
		}
	}
	k.check(t)
}

// TestKickRace races many submitters against the combiner: each value is
// kicked (its point is reached) once its Submit returned, by its own Kick
// or by the one in flight, Kicks never overlap nor go back, and a burst
// shares Kicks.
func TestKickRace(t *testing.T) {
	k := newKickFake()
	d := k.open(t, "kick-race")
	k.spin = 2 * time.Microsecond
	s := empty(t, d)
	const goroutines, each = 64, 100
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for range each {
				p, err := s.Take().Submit(context.Background())
				if err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = p.Wait(ctx)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("wait for value %d: %w", p.v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	k.check(t)
	if last := d.last.Load(); d.read() != last {
		t.Fatalf("the word reads %d with %d submitted", d.read(), last)
	}
	t.Logf("%d kicks for %d submissions", k.kicks.Load(), goroutines*each)
	if n := k.kicks.Load(); n > goroutines*each {
		t.Fatalf("%d kicks for %d submissions", n, goroutines*each)
	}
}

// spinDrv is a driver whose Submit costs what nvdev's did before Kick: a
// spin as long as the read of the flush word through the BAR (1.3 µs on
// the H200), under the submit lock, then the value is reached.
type spinDrv struct {
	*fake
	spin time.Duration
	last atomic.Uint64 // the last value submitted
}

func (s *spinDrv) Room(*device.Submission) device.RoomAnswer { return device.RoomAnswer{} }
func (s *spinDrv) Submit(sub *device.Submission) device.SubmitAnswer {
	s.last.Store(sub.Value)
	if !s.held {
		spinFor(s.spin)
		s.store(sub.Value)
	}
	return device.SubmitAnswer{}
}

// spinKickDrv is spinDrv as a Kicker: Submit only stores, and Kick spins
// and reaches every value submitted.
type spinKickDrv struct{ spinDrv }

func (s *spinKickDrv) Kick(uint64) {
	spinFor(s.spin)
	s.store(s.last.Load())
}

func spinFor(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// BenchmarkSubmitters is a closed loop of submitters (submit, wait) on
// drivers that spin 1.3 µs for each kick: within Submit, under the submit
// lock (submit), or in a Kick after it, combined (kick). It reports
// submissions/s and the latency's p50, p99 and max.
func BenchmarkSubmitters(b *testing.B) {
	for _, c := range []int{1, 16, 64} {
		for _, kick := range []bool{true, false} {
			name := "submit"
			if kick {
				name = "kick"
			}
			b.Run(fmt.Sprintf("c=%d/%s", c, name), func(b *testing.B) {
				benchSpin(b, c, kick, 1300*time.Nanosecond)
			})
		}
	}
}

// BenchmarkSubmitOverhead is the closed loop of one submitter on drivers
// that cost nothing: what the kick's combining adds to a submission.
func BenchmarkSubmitOverhead(b *testing.B) {
	b.Run("kick", func(b *testing.B) { benchSpin(b, 1, true, 0) })
	b.Run("submit", func(b *testing.B) { benchSpin(b, 1, false, 0) })
}

func benchSpin(b *testing.B, c int, kick bool, spin time.Duration) {
	var drv device.Driver = &spinDrv{fake: newFake(), spin: spin}
	if kick {
		k := &spinKickDrv{spinDrv{fake: newFake(), spin: spin}}
		k.held = true
		drv = k
	}
	d, err := Open(context.Background(), device.Opener{Name: "spin-" + b.Name(), Make: func(w *uint64) (device.Driver, error) {
		drv.Facts().Word = w
		return drv, nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = d.Close(); <-d.Done() }()
	s, err := NewSubmission(d)
	if err != nil {
		b.Fatal(err)
	}
	benchClosedLoop(b, s, c, false)
}

// benchClosedLoop runs goroutines that each submit and wait in turn, by
// Run.Do where do is set, and reports submissions/s and the latency's p50,
// p99 and max.
func benchClosedLoop(b *testing.B, s *Submission, goroutines int, do bool) {
	ctx := context.Background()
	var next atomic.Int64
	lats := make([][]time.Duration, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for g := range goroutines {
		lats[g] = make([]time.Duration, 0, b.N/goroutines+1)
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				var err error
				if do {
					_, err = s.Take().Do(ctx)
				} else {
					var p Point
					if p, err = s.Take().Submit(ctx); err == nil {
						err = p.Wait(ctx)
					}
				}
				if err != nil {
					errs[g] = err
					return
				}
				lats[g] = append(lats[g], time.Since(start))
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/el.Seconds(), "subs/s")
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "ns-p50")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "ns-p99")
	b.ReportMetric(float64(all[len(all)-1].Nanoseconds()), "ns-max")
}

// lagDrv is a driver whose device reaches each value lag after the host
// made it see the value (a GPU's round trip), and whose making it see
// costs a spin (the flush read): within Submit, under the submit lock, or
// in a Kick after it where kick. It keeps its own word, which Signaled
// computes from the times the values were seen.
type lagDrv struct {
	*fake
	spin, lag time.Duration
	t0        time.Time
	last      atomic.Uint64 // the last value submitted
	seen      [4096]struct{ v, at atomic.Uint64 }
	head      atomic.Uint64 // seen entries written (one writer at a time)
	reached   atomic.Uint64 // seen entries the device reached
}

type lagKickDrv struct{ lagDrv }

func (s *lagKickDrv) Kick(uint64) { s.see() }

func (s *lagDrv) Room(*device.Submission) device.RoomAnswer { return device.RoomAnswer{} }
func (s *lagDrv) Submit(sub *device.Submission) device.SubmitAnswer {
	s.last.Store(sub.Value)
	if !s.held {
		s.see()
	}
	return device.SubmitAnswer{}
}

// see spins, then makes the device see the last value submitted.
func (s *lagDrv) see() {
	spinFor(s.spin)
	h := s.head.Load()
	e := &s.seen[h%uint64(len(s.seen))]
	e.v.Store(s.last.Load())
	e.at.Store(uint64(time.Since(s.t0)))
	s.head.Store(h + 1)
}

func (s *lagDrv) Signaled() uint64 {
	now := uint64(time.Since(s.t0))
	for {
		r, h := s.reached.Load(), s.head.Load()
		if r == h {
			break
		}
		e := &s.seen[r%uint64(len(s.seen))]
		v, at := e.v.Load(), e.at.Load()
		if at+uint64(s.lag) > now {
			break
		}
		if s.reached.CompareAndSwap(r, r+1) {
			for {
				o := s.own.Load()
				if device.AtLeast(o, v) || s.own.CompareAndSwap(o, v) {
					break
				}
			}
		}
	}
	return s.own.Load()
}

func (s *lagDrv) Sleep(seen uint64, still time.Duration) error {
	for t0 := time.Now(); s.Signaled() == seen && time.Since(t0) < still; {
		runtime.Gosched()
	}
	return nil
}

// BenchmarkSubmittersLag is BenchmarkSubmitters on drivers whose device
// reaches a value 5 µs after it saw it, as a GPU does, so that the
// submitters wait for their points as they would on nvdev; kick+do
// submits and waits by Run.Do, whose combined runs' waits are handed to
// the supervisor.
func BenchmarkSubmittersLag(b *testing.B) {
	for _, c := range []int{1, 16, 64} {
		for _, name := range []string{"kick", "kick+do", "submit"} {
			kick, do := name != "submit", name == "kick+do"
			b.Run(fmt.Sprintf("c=%d/%s", c, name), func(b *testing.B) {
				const spin, lag = 1300 * time.Nanosecond, 5 * time.Microsecond
				l := &lagDrv{fake: newFake(), spin: spin, lag: lag, t0: time.Now()}
				var drv device.Driver = l
				if kick {
					k := &lagKickDrv{lagDrv{fake: newFake(), spin: spin, lag: lag, t0: time.Now()}}
					k.held = true
					l, drv = &k.lagDrv, k
				}
				l.keepOwnWord(0)
				d, err := Open(context.Background(), device.Opener{Name: "lag-" + b.Name(), Make: func(*uint64) (device.Driver, error) {
					return drv, nil
				}})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = d.Close(); <-d.Done() }()
				s, err := NewSubmission(d)
				if err != nil {
					b.Fatal(err)
				}
				benchClosedLoop(b, s, c, do)
			})
		}
	}
}

// TestCombineOrder: runs queued while the submit lock is held are
// attempted by the holder as it lets the lock go, in the order they were
// queued, and their goroutines return their points.
func TestCombineOrder(t *testing.T) {
	k := newKickFake()
	d := k.open(t, "combine-order")
	if !d.combines {
		t.Fatal("a device whose driver kicks does not combine")
	}
	s := empty(t, d)
	first := d.last.Load() + 1
	d.mu.Lock()
	var got []chan uint64
	for range 8 {
		prev := d.cq.head.Load()
		ch := make(chan uint64, 1)
		go func() {
			p, err := s.Take().Submit(context.Background())
			if err != nil {
				t.Error(err)
			}
			ch <- p.v
		}()
		for start := time.Now(); d.cq.head.Load() == prev; time.Sleep(10 * time.Microsecond) {
			if time.Since(start) > 5*time.Second {
				d.unlockSubmit()
				t.Fatal("a submitter did not queue its run")
			}
		}
		got = append(got, ch)
	}
	if n := k.count(); n != 0 {
		t.Fatalf("%d submissions reached the driver while the lock was held", n)
	}
	d.unlockSubmit()
	for i, ch := range got {
		if v := <-ch; v != first+uint64(i) {
			t.Errorf("the run queued %d-th got value %d, want %d", i+1, v, first+uint64(i))
		}
	}
	k.check(t)
}

// TestKickAllocs: a submission of one submitter to a Kicker allocates
// nothing, through Submit or through Do, which waits for it too.
func TestKickAllocs(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's instrumentation allocates")
	}
	k := &spinKickDrv{spinDrv{fake: newFake()}}
	k.held = true
	d := openWith(t, device.Opener{Name: "kick-allocs", Make: func(w *uint64) (device.Driver, error) {
		k.facts.Word = w
		return k, nil
	}})
	s := empty(t, d)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func(r *Run) error
	}{
		{"Take + Submit + Kick", func(r *Run) error { _, err := r.Submit(ctx); return err }},
		{"Take + Do", func(r *Run) error { _, err := r.Do(ctx); return err }},
	} {
		step := func() {
			if err := c.call(s.Take()); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 {
			step()
		}
		if n := testing.AllocsPerRun(1000, step); n != 0 {
			t.Errorf("%s allocates %v times a run", c.name, n)
		}
	}
}

// TestKickInFlight holds one submitter's Kick: another submitter's Submit
// returns while it is held, without a Kick of its own, and the held
// kicker, once let go, kicks again for the value that came in meanwhile,
// which is then reached.
func TestKickInFlight(t *testing.T) {
	k := newKickFake()
	d := k.open(t, "kick-in-flight")
	s := empty(t, d)
	held, release := make(chan uint64, 1), make(chan struct{})
	var first atomic.Bool
	k.hook = func(v uint64) {
		if first.CompareAndSwap(false, true) {
			held <- v
			<-release
		}
	}
	type res struct {
		p   Point
		err error
	}
	firstDone := make(chan res, 1)
	go func() {
		p, err := s.Take().Submit(context.Background())
		firstDone <- res{p, err}
	}()
	v1 := <-held
	second := make(chan res, 1)
	go func() {
		p, err := s.Take().Submit(context.Background())
		second <- res{p, err}
	}()
	var r2 res
	select {
	case r2 = <-second:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a Submit waited for another submitter's held Kick")
	}
	if r2.err != nil || r2.p.v != v1+1 {
		t.Fatalf("the second Submit: value %d, %v; want value %d", r2.p.v, r2.err, v1+1)
	}
	// The held Kick is in flight, uncounted until it returns.
	if n, in := k.kicks.Load(), k.in.Load(); n != 0 || in != 1 {
		t.Fatalf("%d Kicks done and %d in flight while the first was held, want 0 and 1", n, in)
	}
	close(release)
	r1 := <-firstDone
	if r1.err != nil || r1.p.v != v1 {
		t.Fatalf("the held Submit: value %d, %v", r1.p.v, r1.err)
	}
	if n, last := k.kicks.Load(), k.last.Load(); n != 2 || last != v1+1 {
		t.Fatalf("after the held Kick: %d Kicks, the last of value %d; want 2, of %d", n, last, v1+1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r2.p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	k.check(t)
}

// TestKickTired has a value submitted during each Kick, a steady stream:
// the first kicker kicks for them kickRounds times in all, then once
// more, and returns; the submitter of the value that came in during that
// last Kick, finding the kicks tired, waits and kicks it, and every value
// is reached.
func TestKickTired(t *testing.T) {
	k := newKickFake()
	d := k.open(t, "kick-tired")
	s := empty(t, d)
	var (
		mu      sync.Mutex
		streams int
		points  []Point
		errs    []error
		wg      sync.WaitGroup
	)
	submitOne := func() {
		p, err := s.Take().Submit(context.Background())
		mu.Lock()
		points, errs = append(points, p), append(errs, err)
		mu.Unlock()
	}
	// During each of the first kicks, a value is submitted, and the
	// Kick returns once its submitter raised want (or returned).
	k.hook = func(v uint64) {
		mu.Lock()
		if streams == min(kickRounds+2, 1000) {
			mu.Unlock()
			return
		}
		streams++
		mu.Unlock()
		next := v + 1
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			submitOne()
		})
		for !device.AtLeast(d.kicks.want.Load(), next) {
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	}
	p0, err := s.Take().Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := k.kicks.Load(); n != kickRounds+1 {
		t.Fatalf("the first kicker returned after %d Kicks, want %d", n, kickRounds+1)
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p0.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, p := range points {
		if errs[i] != nil {
			t.Fatalf("submission %d: %v", i, errs[i])
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatalf("value %d: %v", p.v, err)
		}
	}
	if len(points) != kickRounds+2 {
		t.Fatalf("%d values submitted during Kicks, want %d", len(points), kickRounds+2)
	}
	k.check(t)
}
