package nvdev

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Waking the supervisor: the GPU's non-stall interrupt.
//
// A value submitted while a waiter is parked ends with its channel's
// semaphore release (with its wait for idle, never the launch's own
// release, which no wait for idle follows) and then NON_STALL_INTERRUPT,
// which the RM delivers to the device's event (nvidia.Event, a file of
// /dev/nvidiactl): Sleep blocks on that file, and the interrupt wakes it
// microseconds after the release. Values submitted while no one is parked
// carry no interrupt, so that a closed loop of one goroutine, which never
// parks, costs the GPU and the kernel nothing more.
//
// At most one value with the interrupt is in flight: a value submitted
// while an earlier one that raises it has not completed raises none, and
// Sleep, woken by the earlier one, bridges to it (below). An interrupt for
// every value of a busy device cost the machine more than it saved: on
// the H200, four timelines of 16 goroutines each waiting for kernels
// of 15 µs raised 32,000 interrupts a second (for 66,000 values), ran 18%
// fewer kernels than with no interrupt at all, and in three runs of twelve
// most of the process's threads stood still for about 100 ms at a time, a
// timeline's supervisor among them, so that its waiters stood still while
// the other timelines ran. With one in flight they raised a sixth as many,
// ran 2% fewer kernels than with none, and none stood still.
//
// The devices of one GPU in the process (its timelines) share a budget of
// interrupts besides (intrBudget): a value raises the interrupt only where
// the budget has one left, at most interruptBurst at once and
// interruptRate a second in the long run; a value refused one is quiet,
// and Sleep bridges to it as to any other. A Sleep that would block on the
// event for longer than bridgeFor first takes one interrupt from the
// budget and holds it (held) for the next value Room plans with the
// interrupt, so that the budget cannot refuse that value once Sleep
// blocks; where the budget has none to hold, Sleep blocks bridgeFor at a
// time. Sleep gives a place it still holds back to the budget as it
// returns; Stop gives back the place of a plan no Submit raised and one
// still held. The GPU raises every non-stall interrupt on one vector, which
// the guest of the H200 serves on one processor: four timelines of two
// goroutines each, copying 16 MiB (70 µs a copy), raised 35,000 interrupts
// a second with one in flight a timeline, and every timeline's waits stood
// still for 191 ms at once (a stop of the world waits for every processor,
// that one among them); with the supervisors never spinning, 29,000 a
// second kept that processor in the interrupts' handling all the time and
// waits stood still up to 1.7 s. At 14,000 a second (one timeline, 64 MiB
// copies) none stood still.
//
// Sleep sets parked as it starts with waiters, and clears it as it
// returns with every value submitted reached (the supervisor then parks
// without calling Sleep) or when no one waits.
//
// The two sides meet as in Dekker's exclusion: Room stores the value it
// plans into quiet before it reads parked and held; Sleep stores parked
// and held before it reads quiet. Either Room sees parked and the place
// Sleep holds, and the value raises the interrupt (or an earlier value's
// interrupt in flight wakes Sleep), or Sleep sees the value in quiet and
// does not block on the event alone until the word reaches it: it waits on
// the event at most bridgeFor at a time. Submit puts quiet back to the
// last value that really went without an interrupt (quietV); so does a
// Room that returns other than RoomOK.

// nonStallNotifier is the subdevice notifier whose non-stall interrupts
// wake the device: that of the graphics engine, whose runlist serves both
// channels of the device's group.
var nonStallNotifier uint32 = nvidia.NotifierGraphics

// Sleep's timing.
const (
	// spinFor is how long Sleep spins on the word, yielding, before it
	// blocks on the event: on the H200 a Sleep woken by the event
	// saw the value 80 to 90 µs (median) after a spinning host would
	// have, most of it the wake-up of an idle virtual CPU (docs/nvdev.md).
	spinFor = 50 * time.Microsecond
	// wakeSpin is how long Sleep spins after the event fired with the
	// word still unmoved: the release may reach the host after the
	// interrupt.
	wakeSpin = 5 * time.Microsecond
	// bridgeFor is the longest Sleep blocks on the event while a value
	// that raises no interrupt is in flight; pollFor is the longest a
	// device without an event sleeps at a time.
	bridgeFor = 100 * time.Microsecond
	pollFor   = 100 * time.Microsecond
)

// The interrupts' budget of a GPU (intrBudget): a burst of interruptBurst,
// then interruptRate a second.
const (
	interruptRate  = 10_000
	interruptBurst = 8
)

// intrBudget bounds the non-stall interrupts the devices of one GPU plan,
// by the generic cell rate algorithm: an interrupt is allowed where the
// theoretical time of the next one is at most burst-1 intervals ahead of
// now, and moves it an interval on. A nil budget allows every one. Any
// goroutine may call take.
type intrBudget struct {
	every int64         // nanoseconds between interrupts in the long run
	burst int64         // interrupts allowed at once
	tat   atomic.Int64  // the theoretical time of the next, on clock
	clock func() int64  // nanoseconds, monotonic
	taken atomic.Uint64 // interrupts allowed, for tests
}

// newIntrBudget returns a budget of burst interrupts at once and rate a
// second.
func newIntrBudget(rate, burst int64, clock func() int64) *intrBudget {
	return &intrBudget{every: int64(time.Second) / rate, burst: burst, clock: clock}
}

// give returns the place of an interrupt take allowed that was not
// raised.
func (b *intrBudget) give() {
	if b == nil {
		return
	}
	b.tat.Add(-b.every)
	b.taken.Add(^uint64(0))
}

// take reports whether an interrupt is allowed now, and counts it if so.
func (b *intrBudget) take() bool {
	if b == nil {
		return true
	}
	now := b.clock()
	for {
		t := b.tat.Load()
		if t-now > (b.burst-1)*b.every {
			return false
		}
		if b.tat.CompareAndSwap(t, max(t, now)+b.every) {
			b.taken.Add(1)
			return true
		}
	}
}

// intrBudgets are the process's budgets, one a GPU by its bus.
var intrBudgets struct {
	mu sync.Mutex
	m  map[string]*intrBudget
}

// budgetEpoch anchors budgetClock.
var budgetEpoch = time.Now()

// budgetClock is the budgets' clock: nanoseconds since budgetEpoch.
func budgetClock() int64 { return int64(time.Since(budgetEpoch)) }

// budgetFor returns the budget of the GPU at bus, which it makes where
// there is none.
func budgetFor(bus string) *intrBudget {
	intrBudgets.mu.Lock()
	defer intrBudgets.mu.Unlock()
	if intrBudgets.m == nil {
		intrBudgets.m = map[string]*intrBudget{}
	}
	b := intrBudgets.m[bus]
	if b == nil {
		b = newIntrBudget(interruptRate, interruptBurst, budgetClock)
		intrBudgets.m[bus] = b
	}
	return b
}

// events is the device's non-stall event (*nvidia.Event).
type events interface {
	Wait(timeout time.Duration) (bool, error)
	Close() error
}

// eventPath is a path that gives non-stall events.
type eventPath interface {
	NonStallEvent(notifier uint32) (*nvidia.Event, error)
}

// waker is the device's side of the interrupt protocol.
type waker struct {
	ev    events // nil where the path gives none
	evErr error  // the path's refusal of the event, if any

	parked atomic.Bool // set by Sleep while waiters are parked
	// held is set by Sleep where it took a place in the budget for the
	// next value with the interrupt; whoever clears it owns the place.
	// It stands for one place: whoever finds it set as it would set it
	// gives its own place to the budget.
	held   atomic.Bool
	quiet  atomic.Uint64 // the last value that may raise no interrupt
	quietV uint64        // under mu: the last value submitted without one
	intrV  uint64        // under mu: the last value submitted with one
	// planned is set, under mu, where Room's plan took an interrupt from
	// the budget that no Submit has raised yet.
	planned bool
	last    atomic.Uint64 // the last value submitted
	intrs   atomic.Uint64 // values submitted with an interrupt, for tests
	// fromHeld is set, under mu, with planned where the plan took the
	// place Sleep held.
	fromHeld bool
}

// openEvents makes the device's event where the path gives one; a refusal
// leaves the device to poll, with the reason in evErr. The protocol's
// values start at the word's, so that they compare with the values
// submitted in circular order wherever the word starts.
func (d *gpu) openEvents() {
	d.wk.intrV, d.wk.quietV = d.base, d.base
	d.wk.quiet.Store(d.base)
	d.wk.last.Store(d.base)
	if ep, ok := d.p.(eventPath); ok {
		ev, err := ep.NonStallEvent(nonStallNotifier)
		if err != nil {
			d.wk.evErr = err
			return
		}
		d.wk.ev = ev
		d.budget = budgetFor(d.p.Bus())
	}
}

// planInterrupt is Room's half of the protocol for value v, under mu: it
// returns whether v must raise the interrupt: where waiters are parked, no
// earlier value that raises it is in flight, and the GPU's budget has one.
func (d *gpu) planInterrupt(v uint64) bool {
	if d.wk.ev == nil {
		return false
	}
	d.wk.quiet.Store(v)
	if d.wk.planned {
		// An earlier plan whose value was never submitted (its Submit
		// failed): its place goes back.
		d.givePlanned()
	}
	if d.wk.parked.Load() && device.AtLeast(atomic.LoadUint64(d.word), d.wk.intrV) {
		d.wk.fromHeld = d.wk.held.Load() && d.wk.held.Swap(false)
		d.wk.planned = d.wk.fromHeld || d.budget.take()
	}
	return d.wk.planned
}

// givePlanned gives the place of a plan whose value was not submitted
// back where it came from, under mu: to the Sleep that held it, which
// still blocks on the next value's interrupt (a Sleep that returned
// meanwhile leaves it to the next Sleep, or to the next value planned with
// the interrupt), or to the budget, also where that Sleep holds another
// place by now.
func (d *gpu) givePlanned() {
	if !d.wk.fromHeld || !d.wk.held.CompareAndSwap(false, true) {
		d.budget.give()
	}
	d.wk.planned, d.wk.fromHeld = false, false
}

// holdInterrupt is Sleep's reservation before it blocks on the event for
// longer than bridgeFor: it reports whether a place in the budget is held
// for the next value with the interrupt, taking one where none is held.
func (d *gpu) holdInterrupt() bool {
	if d.wk.held.Load() {
		return true
	}
	if !d.budget.take() {
		return false
	}
	if !d.wk.held.CompareAndSwap(false, true) {
		// A plan Room did not admit gave its place back to hold meanwhile:
		// the flag stands for that one, and this one goes back.
		d.budget.give()
	}
	return true
}

// releaseInterrupt gives the place Sleep holds, if Room has not used it,
// back to the budget.
func (d *gpu) releaseInterrupt() {
	if d.wk.held.Load() && d.wk.held.Swap(false) {
		d.budget.give()
	}
}

// unplanInterrupt undoes planInterrupt for a value Room did not admit:
// the interrupt it planned gives its place in the budget back.
func (d *gpu) unplanInterrupt() {
	if d.wk.ev != nil {
		d.wk.quiet.Store(d.wk.quietV)
		if d.wk.planned {
			d.givePlanned()
		}
	}
}

// submittedInterrupt records, under mu, that v was submitted, with the
// interrupt or without.
func (d *gpu) submittedInterrupt(v uint64, intr bool) {
	if d.wk.ev == nil {
		return
	}
	d.wk.last.Store(v)
	d.wk.planned, d.wk.fromHeld = false, false
	if intr {
		d.wk.intrV = v
		d.wk.intrs.Add(1)
		d.wk.quiet.Store(d.wk.quietV)
		return
	}
	d.wk.quietV = v
}
