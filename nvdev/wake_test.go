package nvdev

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// fakeEvent is the device's non-stall event on the fake: the fake's
// NON_STALL_INTERRUPT sends on c. Each Wait's timeout goes to waits.
type fakeEvent struct {
	c      chan struct{}
	waits  chan time.Duration
	closed bool
}

func (e *fakeEvent) Wait(timeout time.Duration) (bool, error) {
	select {
	case e.waits <- timeout:
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.c:
		return true, nil
	case <-t.C:
		return false, nil
	}
}

func (e *fakeEvent) Close() error { e.closed = true; return nil }

// withEvent gives r's device a fake event.
func withEvent(r *raw) *fakeEvent {
	e := &fakeEvent{c: make(chan struct{}, 1), waits: make(chan time.Duration, 1024)}
	r.d.wk.ev = e
	r.f.intr = e.c
	return e
}

// parkWaiters has the device's Sleep see waiters parked, as the
// supervisor's Sleep with a waiter does.
func parkWaiters(r *raw) { _ = r.d.Sleep(r.d.Signaled(), time.Microsecond) }

// noWaiters has Sleep see no one waiting.
func noWaiters(r *raw) { _ = r.d.Sleep(r.d.Signaled(), 0) }

// TestWakeInterrupt checks which values raise the non-stall interrupt: a
// value submitted while waiters are parked ends with its release, then
// NON_STALL_INTERRUPT, on the channel that ends it, and its launch does
// not release it; a value submitted while no one is parked raises none
// and is left in quiet.
func TestWakeInterrupt(t *testing.T) {
	r := openRaw(t, Config{NoLinkLaunches: true})
	ev := withEvent(r)
	e := r.entry("twice")
	x := r.alloc(device.DeviceMemory, 1024)
	m := r.alloc(device.PinnedMemory, 4096)
	for _, c := range []struct {
		name   string
		parked bool
		parts  []device.Part
		ch     string
	}{
		{"launch, no one parked", false, []device.Part{launch(e, 1, 32, u64s(x.Address))}, "channel 0"},
		{"launch, waiters parked", true, []device.Part{launch(e, 1, 32, u64s(x.Address))}, "channel 0"},
		{"copy fill, waiters parked", true, []device.Part{fillPart(qCopy, m, 0, 8, 1)}, "channel 1"},
		{"copy fill, no one parked", false, []device.Part{fillPart(qCopy, m, 0, 8, 1)}, "channel 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.parked {
				parkWaiters(r)
			} else {
				noWaiters(r)
			}
			quiet := r.d.wk.quiet.Load()
			intrs, own := r.f.intrs, r.f.ownReleases
			r.f.trace = map[string][]hw.Write{}
			v := r.submit(nil, c.parts...)
			r.wait(v)
			got := r.f.trace[c.ch]
			n := len(got)
			raised := n >= 2 && got[n-1].Method == hw.HostNonStallInterrupt && got[n-2].Method == hw.HostSemExecute &&
				got[n-2].Value&7 == hw.SemRelease
			if raised != c.parked || r.f.intrs-intrs != b2i(c.parked) {
				t.Errorf("the %s's last writes %v, %d interrupts; want the release and an interrupt: %v", c.ch, got[max(n-2, 0):], r.f.intrs-intrs, c.parked)
			}
			if c.parked {
				if r.f.ownReleases != own {
					t.Error("the launch released the value that raises the interrupt")
				}
				if q := r.d.wk.quiet.Load(); q != quiet {
					t.Errorf("quiet %d after a value that raises the interrupt, want %d", q, quiet)
				}
				select {
				case <-ev.c:
				default:
					t.Error("the event did not fire")
				}
			} else if q := r.d.wk.quiet.Load(); q != v {
				t.Errorf("quiet %d after a value that raises none, want %d", q, v)
			}
		})
	}
	// Room that returns other than RoomOK, here for entries beyond the
	// ring, leaves quiet as it was.
	noWaiters(r)
	q := r.d.wk.quiet.Load()
	e0, e1 := hw.Segment(m.Address, 2, hw.Subroutine, false).Words()
	words := make([]uint32, 0, 2*r.d.ch[qCompute].entries)
	for range r.d.ch[qCompute].entries {
		words = append(words, e0, e1)
	}
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{{Kind: device.Words, Queue: qCompute, Words: words}}}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of more entries than the ring holds: %+v", a)
	}
	if got := r.d.wk.quiet.Load(); got != q {
		t.Errorf("quiet %d after a room that answered RoomGrow, want %d", got, q)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sleepAsync runs Sleep(seen, still) on a goroutine and returns its error.
func sleepAsync(r *raw, seen uint64, still time.Duration) chan error {
	done := make(chan error, 1)
	go func() { done <- r.d.Sleep(seen, still) }()
	return done
}

// TestWakeOneInFlight checks that at most one value with the interrupt is
// in flight: with waiters parked, the first value raises it, a value
// submitted while the first is in flight raises none and is left in
// quiet, and once the word reached the first, the next value raises it
// again.
func TestWakeOneInFlight(t *testing.T) {
	r := openRaw(t, Config{})
	withEvent(r)
	m := r.alloc(device.PinnedMemory, 4096)
	parkWaiters(r)
	r.f.pause()
	intrs := r.f.intrs
	v1 := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	v2 := r.submit(nil, fillPart(qCompute, m, 0, 8, 2))
	if got := r.d.wk.intrs.Load(); got != 1 {
		t.Errorf("%d values planned with the interrupt of two submitted back to back, want 1", got)
	}
	if q := r.d.wk.quiet.Load(); q != v2 {
		t.Errorf("quiet %d, want %d, the value without the interrupt", q, v2)
	}
	r.f.resume()
	r.wait(v2)
	if n := r.f.intrs - intrs; n != 1 {
		t.Errorf("%d interrupts for values %d and %d, want 1", n, v1, v2)
	}
	parkWaiters(r)
	v3 := r.submit(nil, fillPart(qCompute, m, 0, 8, 3))
	r.wait(v3)
	if n := r.f.intrs - intrs; n != 2 {
		t.Errorf("%d interrupts after value %d, submitted with the word past the last one's, want 2", n, v3)
	}
}

// TestWakeOnEvent checks that Sleep, with every value in flight raising
// the interrupt, blocks on the event for as long as it may, and returns
// once the interrupt arrives with the word moved.
func TestWakeOnEvent(t *testing.T) {
	r := openRaw(t, Config{})
	ev := withEvent(r)
	m := r.alloc(device.PinnedMemory, 4096)
	parkWaiters(r)
	r.f.pause()
	v := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	done := sleepAsync(r, v-1, time.Hour)
	select {
	case w := <-ev.waits:
		if w < time.Minute {
			t.Errorf("Sleep waited on the event for %v, not the rest of its hour", w)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep never waited on the event")
	}
	r.f.resume()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return after the interrupt")
	}
	if got := r.d.Signaled(); got != v {
		t.Errorf("the word reads %d, want %d", got, v)
	}
}

// TestWakeBridge checks that Sleep, with a value in flight that raises no
// interrupt (submitted before anyone parked), waits on the event at most
// bridgeFor at a time, and returns once the word moves.
func TestWakeBridge(t *testing.T) {
	r := openRaw(t, Config{})
	ev := withEvent(r)
	m := r.alloc(device.PinnedMemory, 4096)
	noWaiters(r)
	r.f.pause()
	v := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	done := sleepAsync(r, v-1, time.Hour)
	for range 3 {
		select {
		case w := <-ev.waits:
			if w > bridgeFor {
				t.Fatalf("Sleep waited on the event for %v with a quiet value in flight; want at most %v", w, bridgeFor)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Sleep never waited on the event")
		}
	}
	r.f.resume()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return after the word moved")
	}
}

// TestWakeParked checks when Sleep sets and clears parked: set by a Sleep
// with waiters, kept as it returns with a value still in flight, cleared
// as it returns with every value reached, and by a Sleep with no one
// waiting.
func TestWakeParked(t *testing.T) {
	r := openRaw(t, Config{})
	withEvent(r)
	m := r.alloc(device.PinnedMemory, 4096)
	w := takeWord(t)
	atomic.StoreUint64(w, 0)
	parkWaiters(r)
	if !r.d.wk.parked.Load() {
		t.Fatal("Sleep with waiters left parked clear")
	}
	r.f.pause()
	v1 := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	v2 := r.submit([]device.Wait{{Word: w, Value: 1}}, fillPart(qCompute, m, 0, 8, 2))
	done := sleepAsync(r, v1-1, time.Hour)
	r.f.resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.d.Signaled(); got != v1 {
		t.Fatalf("the word reads %d, want %d", got, v1)
	}
	if !r.d.wk.parked.Load() {
		t.Error("Sleep returned with a value in flight and cleared parked")
	}
	atomic.StoreUint64(w, 1)
	r.f.pump()
	if err := r.d.Sleep(v1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := r.d.Signaled(); got != v2 {
		t.Fatalf("the word reads %d, want %d", got, v2)
	}
	if r.d.wk.parked.Load() {
		t.Error("Sleep returned with every value reached and left parked set")
	}
	parkWaiters(r)
	noWaiters(r)
	if r.d.wk.parked.Load() {
		t.Error("Sleep with no one waiting left parked set")
	}
}

// TestWakeStopClosesEvent checks that Stop closes the event.
func TestWakeStopClosesEvent(t *testing.T) {
	r := openRaw(t, Config{})
	ev := withEvent(r)
	if err := r.d.Stop(""); err != nil {
		t.Fatal(err)
	}
	if !ev.closed {
		t.Error("Stop left the event open")
	}
}

// TestIntrBudget checks the interrupts' budget: a burst at once, then one
// an interval, with no credit saved beyond the burst while none is asked.
func TestIntrBudget(t *testing.T) {
	var now int64
	b := newIntrBudget(10_000, 3, func() int64 { return now }) // 100 µs apart
	us := int64(time.Microsecond)
	for _, step := range []struct {
		at   int64 // µs
		want bool
	}{
		{0, true}, {0, true}, {0, true}, // the burst
		{0, false},
		{99, false},
		{100, true}, // an interval on
		{100, false},
		{250, true},
		{250, false},
		{10_000, true}, {10_000, true}, {10_000, true}, // a long gap refills the burst, no more
		{10_000, false},
	} {
		now = step.at * us
		if got := b.take(); got != step.want {
			t.Fatalf("take at %d µs = %v, want %v", step.at, got, step.want)
		}
	}
	var none *intrBudget
	for range 100 {
		if !none.take() {
			t.Fatal("a nil budget refused an interrupt")
		}
	}
}

// TestIntrBudgetConcurrent checks that goroutines taking from one budget
// at the same time get the burst between them, not more.
func TestIntrBudgetConcurrent(t *testing.T) {
	b := newIntrBudget(1, 50, func() int64 { return 0 })
	var got atomic.Int64
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				if b.take() {
					got.Add(1)
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	if n := got.Load(); n != 50 {
		t.Errorf("8 goroutines took %d interrupts of a burst of 50", n)
	}
}

// TestWakeBudget checks that a value with waiters parked and none in
// flight still raises no interrupt where the GPU's budget has none left:
// it is quiet, so that Sleep bridges to it, and the next value once the
// budget refilled raises it again.
func TestWakeBudget(t *testing.T) {
	r, _, now := budgetOfOne(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	parkWaiters(r)
	v1 := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	r.wait(v1)
	parkWaiters(r)
	v2 := r.submit(nil, fillPart(qCompute, m, 0, 8, 2))
	if got := r.d.wk.intrs.Load(); got != 1 {
		t.Errorf("%d values with the interrupt, want 1: the budget had none for value %d", got, v2)
	}
	if q := r.d.wk.quiet.Load(); q != v2 {
		t.Errorf("quiet %d, want %d, the value the budget refused", q, v2)
	}
	r.wait(v2)
	*now += int64(time.Millisecond)
	parkWaiters(r)
	v3 := r.submit(nil, fillPart(qCompute, m, 0, 8, 3))
	r.wait(v3)
	if got := r.d.wk.intrs.Load(); got != 2 {
		t.Errorf("%d values with the interrupt after the budget refilled, want 2 (value %d)", got, v3)
	}
}

// TestWakeBudgetRoomGrow checks that a Room that does not admit its value
// takes nothing of the GPU's budget of interrupts: with one interrupt in
// the budget, a value whose first Room returns RoomGrow still raises it
// once Grow has made the rings and Room admits it.
func TestWakeBudgetRoomGrow(t *testing.T) {
	r, _, _ := budgetOfOne(t, Config{SegmentBytes: 4096})
	m := r.alloc(device.PinnedMemory, 4096)
	parts := byteFills(m, 200)
	parkWaiters(r)
	s := device.Submission{Value: r.v + 1, Parts: parts}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 200 fills on a segment ring of a page: %+v", a)
	}
	r.wait(r.submit(nil, parts...))
	if got := r.d.wk.intrs.Load(); got != 1 {
		t.Errorf("%d values with the interrupt, want 1: the Room that grew took the budget's one", got)
	}
	if got := r.d.budget.taken.Load(); got != 1 {
		t.Errorf("the budget gave %d interrupts, want 1", got)
	}
}

// TestWakeBudgetPlanAgain has Room admit a value, with the budget's one
// interrupt, and then admit it again without a Submit between (as after a
// Submit that failed before it ran anything): the first plan's place goes
// back to the budget, so that the value submitted raises the interrupt,
// and the budget counts one interrupt given.
func TestWakeBudgetPlanAgain(t *testing.T) {
	r, _, _ := budgetOfOne(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	parkWaiters(r)
	s := device.Submission{Value: r.v + 1, Parts: []device.Part{fillPart(qCopy, m, 0, 1, 7)}}
	for range 2 {
		if a := r.d.Room(&s); a.Kind != device.RoomOK {
			t.Fatalf("room of one fill: %+v", a)
		}
	}
	r.v++
	if a := r.d.Submit(&s); a.Kind == device.Failed {
		t.Fatalf("submit: %s", a.Reason)
	}
	r.d.Kick(r.v)
	r.wait(r.v)
	if got := r.d.wk.intrs.Load(); got != 1 {
		t.Errorf("%d values with the interrupt, want 1: the first plan kept the budget's one", got)
	}
	if got := r.d.budget.taken.Load(); got != 1 {
		t.Errorf("the budget counts %d interrupts given, want 1", got)
	}
}

// TestWakeInterruptFromAnyWord: the interrupt protocol's values start at
// the word's value at make, so that a value submitted with waiters parked
// and nothing in flight raises the interrupt wherever the word starts,
// also at or past 2^63, where a start at 0 lay ahead of the word in
// circular order and no value ever raised it.
func TestWakeInterruptFromAnyWord(t *testing.T) {
	for _, base := range []uint64{100, 1<<63 + 100, ^uint64(0) - 100} {
		r := openRawAt(t, Config{}, base)
		withEvent(r)
		m := r.alloc(device.PinnedMemory, 4096)
		parkWaiters(r)
		v := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
		r.wait(v)
		if got := r.d.wk.intrs.Load(); got != 1 {
			t.Errorf("word made at %#x: value %#x, submitted with waiters parked and nothing in flight, raised %d interrupts, want 1",
				base, v, got)
		}
	}
}

// TestWakeBudgetHeldForBlockedSleep: a Sleep that blocks on the event
// with nothing in flight holds a place in the GPU's budget, so that
// another timeline that takes the budget's last place meanwhile cannot
// leave the next value quiet: that value raises the interrupt and wakes
// the Sleep, which a quiet value would have left blocked for the rest of
// its hour.
func TestWakeBudgetHeldForBlockedSleep(t *testing.T) {
	r, ev, _ := budgetOfOne(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	done := blockedSleep(t, r, ev)
	other := r.d.budget.take() // another timeline of the GPU
	v := r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	wokenByInterrupt(t, r, done, v, other)
}

// blockedSleep parks r's waiters and returns the answer of a Sleep of an
// hour, once it blocks on ev with nothing in flight.
func blockedSleep(t *testing.T, r *raw, ev *fakeEvent) chan error {
	t.Helper()
	parkWaiters(r)
	done := sleepAsync(r, r.d.Signaled(), time.Hour)
	select {
	case w := <-ev.waits:
		if w < time.Minute {
			t.Fatalf("Sleep with nothing in flight waited on the event for %v, not the rest of its hour", w)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep never waited on the event")
	}
	return done
}

// wokenByInterrupt checks that the blocked Sleep answering on done
// returned after value v, which raised the interrupt with the place it
// held, though another timeline asked the budget for one (other: its
// answer) meanwhile.
func wokenByInterrupt(t *testing.T, r *raw, done chan error, v uint64, other bool) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Sleep still blocked 5 s after value %d (another timeline took a place of the budget: %v); %d values raised the interrupt",
			v, other, r.d.wk.intrs.Load())
	}
	if got := r.d.wk.intrs.Load(); got != 1 {
		t.Errorf("%d values with the interrupt, want 1", got)
	}
	if other {
		t.Error("another timeline took the place the blocked Sleep held")
	}
}

// TestWakeBudgetNoneToHold: where the GPU's budget has no place for a
// Sleep to hold, it blocks on the event at most bridgeFor at a time, and
// returns once a value the budget left quiet moves the word.
func TestWakeBudgetNoneToHold(t *testing.T) {
	r, ev, _ := budgetOfOne(t, Config{})
	m := r.alloc(device.PinnedMemory, 4096)
	if !r.d.budget.take() {
		t.Fatal("a fresh budget refused its first place")
	}
	parkWaiters(r)
	done := sleepAsync(r, r.d.Signaled(), time.Hour)
	for range 3 {
		select {
		case w := <-ev.waits:
			if w > bridgeFor {
				t.Fatalf("Sleep waited on the event for %v with no place in the budget; want at most %v", w, bridgeFor)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Sleep never waited on the event")
		}
	}
	r.submit(nil, fillPart(qCompute, m, 0, 8, 1))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Sleep did not return after a quiet value moved the word")
	}
	if got := r.d.wk.intrs.Load(); got != 0 {
		t.Errorf("%d values with the interrupt from an empty budget, want 0", got)
	}
}

// TestWakeBudgetHeldGivenBack: a Sleep that held a place in the budget
// and returns without a value using it gives the place back.
func TestWakeBudgetHeldGivenBack(t *testing.T) {
	r, _, _ := budgetOfOne(t, Config{})
	parkWaiters(r)
	if err := r.d.Sleep(r.d.Signaled(), 2*bridgeFor+spinFor); err != nil {
		t.Fatal(err)
	}
	if got := r.d.budget.taken.Load(); got != 0 {
		t.Errorf("the budget counts %d places taken after Sleep returned, want 0", got)
	}
	if !r.d.budget.take() {
		t.Error("the budget had no place after Sleep returned: Sleep kept the one it held")
	}
}

// TestWakeBudgetHeldPastRoomGrow: the place a blocked Sleep holds, which
// Room's plan for the next value took, goes back to the Sleep where that
// Room does not admit the value (here RoomGrow), not to the GPU's
// budget: another timeline that takes the budget's place before Grow and
// the next Room cannot leave the value quiet and the Sleep blocked for
// the rest of its hour.
func TestWakeBudgetHeldPastRoomGrow(t *testing.T) {
	r, ev, _ := budgetOfOne(t, Config{SegmentBytes: 4096})
	m := r.alloc(device.PinnedMemory, 4096)
	parts := byteFills(m, 200)
	done := blockedSleep(t, r, ev)
	s := device.Submission{Value: r.v + 1, Parts: parts}
	if a := r.d.Room(&s); a.Kind != device.RoomGrow {
		t.Fatalf("room of 200 fills on a segment ring of a page: %+v", a)
	}
	other := r.d.budget.take() // another timeline of the GPU, after the first Room
	v := r.submit(nil, parts...)
	wokenByInterrupt(t, r, done, v, other)
}

// TestWakeHeldPlaceGivenBackOnce: Room's plan takes the place a Sleep
// holds, and does not admit its value (RoomLater, RoomGrow), while the
// Sleep, which runs without the device's lock, holds a place again: the
// Sleep and the plan each had a place of the GPU's budget, and the one
// flag that says a place is held cannot stand for both. Whichever stores
// it second gives its place back to the budget, so that once the Sleep
// returns the budget counts none taken, in either order.
func TestWakeHeldPlaceGivenBackOnce(t *testing.T) {
	for _, sleepFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("sleep first %v", sleepFirst), func(t *testing.T) {
			r := openRaw(t, Config{})
			withEvent(r)
			var now int64
			var during func() // runs inside the budget's next look at its clock
			r.d.budget = newIntrBudget(1000, 4, func() int64 {
				if f := during; f != nil {
					during = nil
					f()
				}
				return now
			})
			parkWaiters(r)
			if !r.d.holdInterrupt() {
				t.Fatal("Sleep found no place to hold in a fresh budget")
			}
			// Room's plan takes the place the Sleep holds.
			r.d.mu.Lock()
			planned := r.d.planInterrupt(r.v + 1)
			r.d.mu.Unlock()
			if !planned || !r.d.wk.fromHeld {
				t.Fatalf("the plan did not take the place the Sleep held (planned %v, from it %v)", planned, r.d.wk.fromHeld)
			}
			// Room does not admit the value: its place goes back to the
			// Sleep, as the Sleep looks for one to hold again.
			unplan := func() {
				r.d.mu.Lock()
				r.d.unplanInterrupt()
				r.d.mu.Unlock()
			}
			if sleepFirst {
				if !r.d.holdInterrupt() {
					t.Fatal("Sleep found no place to hold")
				}
				unplan()
			} else {
				during = unplan // between the Sleep's look at the flag and its store
				if !r.d.holdInterrupt() {
					t.Fatal("Sleep found no place to hold")
				}
				if during != nil {
					t.Fatal("Sleep took no place of the budget")
				}
			}
			if !r.d.wk.held.Load() {
				t.Fatal("no place held after the Room gave its place back")
			}
			r.d.releaseInterrupt() // the Sleep returns
			if got := r.d.budget.taken.Load(); got != 0 {
				t.Errorf("the budget counts %d places taken after the Sleep returned, want 0: a place was lost", got)
			}
		})
	}
}

// budgetOfOne opens a device whose Sleep blocks on a fake event, with a
// budget of one interrupt (1,000 a second) on a clock that stands at
// *now until the test moves it.
func budgetOfOne(t *testing.T, c Config) (r *raw, ev *fakeEvent, now *int64) {
	t.Helper()
	r = openRaw(t, c)
	ev = withEvent(r)
	now = new(int64)
	r.d.budget = newIntrBudget(1000, 1, func() int64 { return *now })
	return r, ev, now
}

// byteFills is n fills of one byte each on COPY:0, into bytes 0 to n-1
// of m, byte i with i.
func byteFills(m *nvidia.Memory, n int) []device.Part {
	var parts []device.Part
	for i := range n {
		parts = append(parts, fillPart(qCopy, m, uint64(i), 1, byte(i)))
	}
	return parts
}
