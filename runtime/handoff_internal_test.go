package rig

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// quietKick is stressKick whose Sleep allocates nothing: it looks at the
// word every few microseconds, so that a test counts the allocations of
// the submit and wait paths alone.
type quietKick struct{ *stressKick }

func (k quietKick) Sleep(seen uint64, still time.Duration) error {
	for start := time.Now(); k.load() == seen && time.Since(start) < still; {
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

// handOffDevice opens a device of a held fake as a Kicker, so that its
// submitters combine and its work completes only at completeKicked, and
// closes it at the test's end.
func handOffDevice(t *testing.T) (*Device, *stressKick, *Submission) {
	t.Helper()
	f := newFake()
	f.held = true
	k := &stressKick{fake: f}
	d, err := Open(context.Background(), device.Opener{Name: "handoff-" + t.Name(), Make: func(w *uint64) (device.Driver, error) {
		f.facts.Word = w
		return quietKick{k}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Close()
		<-d.Done()
	})
	if !d.combines {
		t.Fatal("the device does not combine")
	}
	d.SetWaitSpin(0)
	return d, k, empty(t, d)
}

// doResult is what one Do returned.
type doResult struct {
	p   Point
	err error
}

// startDos holds d's submit lock and starts n goroutines that call Do
// with ctx, and returns once every one of their runs is queued and
// parked, with the lock still held, and the channel their results come
// on.
func startDos(t *testing.T, d *Device, s *Submission, ctx context.Context, n int) <-chan doResult {
	t.Helper()
	d.mu.Lock()
	out := make(chan doResult, n)
	for range n {
		go func() {
			p, err := s.Take().Do(ctx)
			out <- doResult{p, err}
		}()
	}
	for {
		// A park bounded by combPark ends and starts again: every run
		// parked at one look.
		if parkedRuns(d) == n {
			return out
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// expectRan takes n results from out, each of which must be nil for work
// that ran.
func expectRan(t *testing.T, out <-chan doResult, n int, k *stressKick) {
	t.Helper()
	for range n {
		r := <-out
		if r.err != nil {
			t.Fatalf("Do: %v", r.err)
		}
		if !device.AtLeast(k.ran.Load(), r.p.v) {
			t.Fatalf("Do of value %d answered nil with the work run up to %d", r.p.v, k.ran.Load())
		}
	}
}

// TestDoHandsOffParkedRuns: where Do's runs parked while another held the
// submit lock, the holder that makes their attempts hands their waits to
// the supervisor and kicks their values, and each goroutine wakes once,
// with its wait's answer: nil, and only once its work ran.
func TestDoHandsOffParkedRuns(t *testing.T) {
	d, k, s := handOffDevice(t)
	const n = 8
	out := startDos(t, d, s, context.Background(), n)
	d.unlockSubmit()
	if got, last := k.kicked.Load(), d.last.Load(); got != last {
		t.Fatalf("kicked up to value %d of %d submitted once the holder let the lock go", got, last)
	}
	// The waits reach the supervisor with no goroutine of theirs run.
	for d.Waiting() == 0 {
		time.Sleep(10 * time.Microsecond)
	}
	select {
	case r := <-out:
		t.Fatalf("a Do returned before its work ran: %v, %v", r.p, r.err)
	case <-time.After(time.Millisecond):
	}
	k.completeKicked()
	expectRan(t, out, n, k)
	st := d.Stats()
	t.Logf("%d of %d waits handed to the supervisor; %d parked", st.WaitsHanded, n, st.WaitsParked)
	if st.WaitsHanded == 0 || st.WaitsHanded > n {
		t.Fatalf("WaitsHanded %d of %d Do calls whose runs parked", st.WaitsHanded, n)
	}
	if st.WaitsParked < st.WaitsHanded {
		t.Fatalf("WaitsParked %d below WaitsHanded %d", st.WaitsParked, st.WaitsHanded)
	}
	if n := d.Waiting(); n != 0 {
		t.Fatalf("%d waiters counted after every Do returned", n)
	}
}

// TestDoHandOffBoxFull: where the supervisor's box has no room for a
// handed wait, the goroutine waits for its point itself, and Do still
// answers nil once the work ran.
func TestDoHandOffBoxFull(t *testing.T) {
	d, k, s := handOffDevice(t)
	// Hold the supervisor at its next message, and fill its box.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(entered); <-release }) }
	d.sup.handled.Store(&hook)
	reached := d.read()
	fill := func() error {
		w := d.stock.get()
		w.v, w.key, w.idx = reached, reached-d.base, -1
		w.state.Store(waitSent)
		return d.sup.box.TrySend(message{kind: msgRegister, w: w})
	}
	if err := fill(); err != nil {
		t.Fatal(err)
	}
	<-entered
	for fill() == nil {
	}
	const n = 8
	out := startDos(t, d, s, context.Background(), n)
	d.unlockSubmit()
	k.completeKicked()
	close(release)
	expectRan(t, out, n, k)
	if h := d.Stats().WaitsHanded; h != 0 {
		t.Fatalf("%d waits handed to a full box", h)
	}
}

// TestDoHandedWaitEnds: a handed wait ends as Point.Wait does, where ctx
// ends, the device is lost or it is closed before the work ran, and
// leaves nothing counted; the runs, whose waiters the supervisor may
// still hold, then submit and wait again.
func TestDoHandedWaitEnds(t *testing.T) {
	for _, end := range []string{"cancel", "loss", "close"} {
		t.Run(end, func(t *testing.T) {
			d, k, s := handOffDevice(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const n = 8
			out := startDos(t, d, s, ctx, n)
			d.unlockSubmit()
			for d.Waiting() == 0 {
				time.Sleep(10 * time.Microsecond)
			}
			var want error
			switch end {
			case "cancel":
				cancel()
				want = context.Canceled
			case "loss":
				d.lose("handed loss", nil)
				want = ErrLost
			case "close":
				go func() { _ = d.Close() }()
				want = ErrClosed
			}
			for range n {
				r := <-out
				if r.p.d != d {
					t.Fatalf("Do returned no point of the device with %v", r.err)
				}
				if !errors.Is(r.err, want) {
					t.Fatalf("Do: %v, want %v", r.err, want)
				}
			}
			for d.Waiting() != 0 {
				time.Sleep(10 * time.Microsecond)
			}
			if end != "cancel" {
				return
			}
			// The runs again, handed where they park, with the work run.
			k.completeKicked()
			out = startDos(t, d, s, context.Background(), n)
			d.unlockSubmit()
			for d.Waiting() == 0 {
				time.Sleep(10 * time.Microsecond)
			}
			k.completeKicked()
			for range n {
				if r := <-out; r.err != nil || !device.AtLeast(k.ran.Load(), r.p.v) {
					t.Fatalf("Do after the cancelled ones: value %d, %v, the work run up to %d", r.p.v, r.err, k.ran.Load())
				}
			}
		})
	}
}

// TestDoHandOffAllocs: Do of runs that combine and are handed to the
// supervisor allocates nothing once each run made its waiter.
func TestDoHandOffAllocs(t *testing.T) {
	d, k, s := handOffDevice(t)
	const n = 4
	start, out := make(chan struct{}), make(chan doResult, n)
	stop := make(chan struct{})
	var workers sync.WaitGroup
	defer func() {
		close(stop)
		workers.Wait()
	}()
	for range n {
		workers.Go(func() {
			for {
				select {
				case <-start:
				case <-stop:
					return
				}
				p, err := s.Take().Do(context.Background())
				out <- doResult{p, err}
			}
		})
	}
	var bad error
	round := func() {
		d.mu.Lock()
		for range n {
			start <- struct{}{}
		}
		for parkedRuns(d) != n {
			time.Sleep(10 * time.Microsecond)
		}
		d.unlockSubmit()
		for d.Waiting() == 0 {
			time.Sleep(10 * time.Microsecond)
		}
		k.completeKicked()
		for range n {
			if r := <-out; r.err != nil && bad == nil {
				bad = r.err
			}
		}
	}
	for range 10 {
		round()
	}
	before := d.Stats().WaitsHanded
	if raceOn {
		// The rounds above ran the path; the race detector's
		// instrumentation allocates.
		if d.Stats().WaitsHanded == 0 {
			t.Fatal("no wait was handed to the supervisor")
		}
		return
	}
	allocs := testing.AllocsPerRun(50, round)
	if bad != nil {
		t.Fatalf("Do: %v", bad)
	}
	if d.Stats().WaitsHanded == before {
		t.Fatal("no wait was handed to the supervisor")
	}
	if allocs >= 1 {
		t.Fatalf("%.1f allocations a round of %d Do calls handed to the supervisor", allocs, n)
	}
}

// TestHandOverKicksAcrossWrap: a batch of handed runs whose newest value
// is 0 (the values wrapped past 2^64-1) has every value kicked: the run
// of value 0, handed, does not kick it itself, and its Do would wait for
// work the device never sees.
func TestHandOverKicksAcrossWrap(t *testing.T) {
	f := newFake()
	f.held = true
	f.keepOwnWord(math.MaxUint64 - 3)
	k := &stressKick{fake: f}
	k.kicked.Store(math.MaxUint64 - 3)
	k.ran.Store(math.MaxUint64 - 3)
	d, err := Open(context.Background(), device.Opener{Name: "handoff-wrap", Make: func(w *uint64) (device.Driver, error) {
		return quietKick{k}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(); <-d.Done() }()
	if !d.combines {
		t.Fatal("no combining")
	}
	d.SetWaitSpin(0)
	s := empty(t, d)
	// Two values alone: MaxUint64-2 and MaxUint64-1.
	for range 2 {
		if _, err := s.Take().Submit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	k.completeKicked()
	if d.read() != math.MaxUint64-1 {
		t.Fatalf("word %d", d.read())
	}
	// Two Do calls combined and handed: MaxUint64 and 0.
	out := startDos(t, d, s, context.Background(), 2)
	d.unlockSubmit()
	if got := k.kicked.Load(); got != d.last.Load() {
		t.Errorf("kicked up to %d of %d submitted once the holder let the lock go (handed %d)", got, d.last.Load(), d.Stats().WaitsHanded)
	}
	for range 2 {
		k.completeKicked()
		select {
		case r := <-out:
			if r.err != nil {
				t.Fatal(r.err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("a Do hangs: kicked %d, word %d, last %d, waiting %d", k.kicked.Load(), d.read(), d.last.Load(), d.Waiting())
		}
	}
}

// TestHandedDoSampledLatency: Do's submission is sampled for
// Stats.SubmitLatency as Submit's is, a submission whose wait the combiner
// handed to the supervisor among them, up to the hand-off: otherwise the
// samples of the parked (slow) submissions would drop out of the
// histogram.
func TestHandedDoSampledLatency(t *testing.T) {
	d, k, s := handOffDevice(t)
	for d.last.Load()%SubmitSample != 0 {
		if _, err := s.Take().Submit(context.Background()); err != nil {
			t.Fatal(err)
		}
		k.completeKicked()
	}
	before := d.Stats().SubmitLatency.Count
	const n = 8
	// Every one of them begins with last a multiple of SubmitSample: each
	// is sampled.
	out := startDos(t, d, s, context.Background(), n)
	d.unlockSubmit()
	for d.Waiting() == 0 {
		time.Sleep(10 * time.Microsecond)
	}
	k.completeKicked()
	expectRan(t, out, n, k)
	st := d.Stats()
	if got := st.SubmitLatency.Count - before; got != n {
		t.Fatalf("%d of %d sampled Do submissions recorded in SubmitLatency (%d handed)", got, n, st.WaitsHanded)
	}
}

// TestHandOffTimerRace: hand-offs made as the runs' park timers
// fire, some with contexts that end at once; every Do returns, answers nil
// only for work that ran, and nothing stays counted.
func TestHandOffTimerRace(t *testing.T) {
	d, k, s := handOffDevice(t)
	const n = 6
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			k.completeKicked()
			time.Sleep(5 * time.Microsecond)
		}
	}()
	defer func() { close(stop); <-done }()
	for round := range 400 {
		ctx, cancel := context.WithCancel(context.Background())
		out := startDos(t, d, s, ctx, n)
		time.Sleep(time.Duration(round%13) * 10 * time.Microsecond)
		if round%3 == 0 {
			go func() { time.Sleep(time.Duration(round%7) * 20 * time.Microsecond); cancel() }()
		}
		d.unlockSubmit()
		for range n {
			select {
			case r := <-out:
				if r.err == nil && !device.AtLeast(k.ran.Load(), r.p.v) {
					t.Fatalf("nil for value %d with the work run up to %d", r.p.v, k.ran.Load())
				}
				if r.err != nil && r.err != context.Canceled {
					t.Fatalf("round %d: %v", round, r.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: a Do hangs; waiting %d", round, d.Waiting())
			}
		}
		cancel()
		for i := 0; d.Waiting() != 0; i++ {
			if i > 100000 {
				t.Fatalf("round %d: %d still counted", round, d.Waiting())
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	t.Logf("%+v", d.Stats().WaitsHanded)
}
