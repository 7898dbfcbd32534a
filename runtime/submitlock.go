package rig

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/internal/yield"
)

// submitLock is a device's submit lock: a ticket lock that serves its
// waiters in arrival order, where the first few waiters spin and the rest
// park.
//
// Submitters hold it for a few stores to memory (about a microsecond on
// nvdev, the driver's launch call on cudadev), so a waiter next in line
// takes it in the time a cache line moves between processors if it spins,
// and in a goroutine's wake-up (microseconds, more on a loaded machine) if
// it parked. A mutex that parks its waiters and hands the lock to the
// oldest of them once one waited a millisecond (sync.Mutex) made every
// submission of a device pay a wake-up while many goroutines submitted:
// on the H200, 16 goroutines spent 70% of their time in it, and the lock's
// handoffs set the p99 of a round trip at a millisecond. Here the waiter
// whose ticket comes within ahead of the one being served spins; a waiter
// further back parks, and is woken as the line reaches it, ahead turns
// before its own, so that it spins again by the time the lock comes to it.
// A spinner that has spun for spinFor parks too, so that a holder that
// holds the lock longer (a device's growth, an image's load) costs the
// line no CPU.
//
// Any goroutine may call Lock, TryLock and Unlock; Unlock may be called by
// a goroutine other than the one that locked.
type submitLock struct {
	_       [64]byte
	next    atomic.Uint64 // tickets handed out
	_       [56]byte
	serving atomic.Uint64 // the ticket that holds the lock or may take it
	_       [56]byte
	parked  atomic.Int64 // waiters in slots, each counted before it stores its slot
	// ahead is how far behind the ticket being served a waiter spins,
	// spinFor how long it spins before it parks, and yieldEvery how
	// often a spinner yields (a power of two, less 1), or 0 where it
	// yields at the pace of internal/yield: set before use.
	ahead      atomic.Uint64
	maxAhead   uint64
	holdNs     atomic.Int64 // the sampled hold's moving average, for ahead
	spinFor    time.Duration
	yieldEvery uint
	// gate, where set, gives the places to spin: a waiter that finds
	// none parks until its turn.
	gate *spinGate
	// slots are the parked waiters by ticket modulo nslots, allocated at
	// the first park.
	slots  atomic.Pointer[[]atomic.Pointer[lockParker]]
	nslots uint64
	once   sync.Once
	// parking, where set, is called by a waiter of ticket t that parks,
	// between the first and the second step of its park: tests' hook.
	parking func(t uint64)
}

// lockSlots bounds the waiters that park by ticket (a device's slots take
// 1 MiB once its first waiter parks): 131,072 goroutines that submit to
// one device at once. A waiter whose slot an older waiter holds, lockSlots
// tickets before it, sleeps until the slot may free (pollFor) and looks
// again. With 16,384 slots, 20,000 goroutines submitting to one host
// device on a machine of two processors made a few hundred submissions a
// second: the waiters past the slots, each sleeping 20 µs at a time, kept
// thousands of goroutines runnable, and every turn that came to one of
// them waited for the scheduler.
const (
	lockSlots   = 1 << 17
	lockPoll    = 20 * time.Microsecond
	lockPollMax = 10 * time.Millisecond
)

// lockParker is a parked waiter: its ticket and the channel its wake-up
// comes on.
type lockParker struct {
	t  atomic.Uint64
	ch chan struct{}
}

// lockParkers is a sync.Pool rather than a stock: a park of the lock is
// a handoff on cudadev's submit path, where a stock's one mutex would
// come between a woken waiter and its turn, and at 10,000 goroutines on
// the host driver the pool measured the same allocations (0.04 and 0.05
// a submission, 0.04 and 0.04 with a stock; the runs' spare is what
// counts).
var lockParkers = sync.Pool{New: func() any { return &lockParker{ch: make(chan struct{}, 1)} }}

// init sets how the lock's waiters spin, for procs processors, with
// places from gate. A spinner reads the clock every 64 looks, which on a
// virtual machine costs more than the looks, and yields at the pace of
// internal/yield: a look takes nanoseconds, and a yield every 64 of them
// sent the spinners of four devices through the scheduler's global queue
// and its lock many times a microsecond. Where the device's work runs on
// the process's goroutines (onHost) it yields every 8 looks, as the holder
// may need its processor.
func (l *submitLock) init(procs int, onHost bool, gate *spinGate) {
	l.gate = gate
	l.maxAhead = uint64(min(max(procs/4, 1), 4))
	l.ahead.Store(l.maxAhead)
	l.spinFor = 50 * time.Microsecond
	l.yieldEvery = 0
	l.nslots = lockSlots
	if onHost {
		l.maxAhead = 1
		l.ahead.Store(1)
		l.yieldEvery = 7
	}
}

// lockWake is about a parked goroutine's wake-up on a busy machine: the
// line spins as many waiters as hold the lock, one after another, for
// about that long, so that the one woken as the line reaches it spins by
// its turn.
const lockWake = 6 * time.Microsecond

// held records a sampled hold of the lock, and sets ahead to the holds
// that fill lockWake, from 1 to maxAhead: on nvdev a hold is a microsecond
// of stores, and four spinners kept the line moving (16 submitters on the
// H200, one run: 388k submissions a second against 305k with two and
// 210k with one); on cudadev a hold is a launch through libcuda, several
// microseconds, and four spinners took CPU that the holder's launch
// needed (87k a second against 116k with two). The holder calls it.
func (l *submitLock) held(d time.Duration) {
	avg := l.holdNs.Load()
	if avg == 0 {
		avg = int64(d)
	} else {
		avg += (int64(d) - avg) / 8
	}
	l.holdNs.Store(avg)
	n := uint64(int64(lockWake) / max(avg, 1))
	l.ahead.Store(min(max(n, 1), l.maxAhead))
}

// Lock takes the lock, after every goroutine that asked for it before.
func (l *submitLock) Lock() {
	t := l.next.Add(1) - 1
	if l.serving.Load() == t {
		return
	}
	l.wait(t)
}

// TryLock takes the lock where no one holds it or waits for it, and
// reports whether it did.
func (l *submitLock) TryLock() bool {
	t := l.next.Load()
	return l.serving.Load() == t && l.next.CompareAndSwap(t, t+1)
}

// Unlock gives the lock to the next waiter.
func (l *submitLock) Unlock() {
	s := l.serving.Add(1)
	if l.parked.Load() == 0 {
		return
	}
	// The waiter now served, where it spun too long and parked, and the
	// one that comes within ahead, so that it spins by its turn.
	l.wake(s)
	l.wake(s + l.ahead.Load())
}

// wake wakes the waiter of ticket t where it is parked.
func (l *submitLock) wake(t uint64) {
	slots := l.slots.Load()
	if slots == nil {
		return
	}
	slot := &(*slots)[t%l.nslots]
	p := slot.Load()
	// p may be taken back and parked again for a later ticket between
	// the reads: the waiter then wakes early, and looks again.
	if p == nil || p.t.Load() != t || !slot.CompareAndSwap(p, nil) {
		return
	}
	l.parked.Add(-1)
	p.ch <- struct{}{}
}

// wait waits for ticket t's turn.
func (l *submitLock) wait(t uint64) {
	for {
		s := l.serving.Load()
		if s == t {
			return
		}
		near := t-s <= l.ahead.Load()
		if near && (l.gate == nil || l.gate.enter()) {
			ok := l.spin(t)
			if l.gate != nil {
				l.gate.leave()
			}
			if ok {
				return
			}
		}
		l.park(t, near)
	}
}

// spin reads serving until it reaches t, for at most spinFor, and reports
// whether it did.
func (l *submitLock) spin(t uint64) bool {
	var start time.Time
	var pace yield.Pacer
	for i := uint(1); ; i++ {
		if l.serving.Load() == t {
			return true
		}
		if l.yieldEvery != 0 && i&l.yieldEvery == 0 {
			runtime.Gosched()
		}
		if i%64 == 0 { // the clock costs more than a look on a virtual machine
			now := time.Now()
			if start.IsZero() {
				start = now
				pace.Start(now)
			} else if now.Sub(start) > l.spinFor {
				return false
			} else if l.yieldEvery == 0 {
				pace.Maybe(now)
			}
		}
	}
}

// pollFor is how long a waiter of ticket t, whose slot an older waiter
// holds, sleeps before it looks again: the holds of the tickets before
// the slot's holder is woken (ahead of its turn), at the sampled hold
// (holdNs), from lockPoll to lockPollMax. A slot frees no sooner.
func (l *submitLock) pollFor(t uint64) time.Duration {
	s := l.serving.Load()
	before := t - s // tickets served before t's turn
	if away := l.nslots + l.ahead.Load(); before > away {
		hold := max(l.holdNs.Load(), 0)
		if n := before - away; n < uint64(lockPollMax) && hold < int64(lockPollMax) {
			return min(max(time.Duration(n)*time.Duration(hold), lockPoll), lockPollMax)
		}
		return lockPollMax
	}
	return lockPoll
}

// park blocks until the line comes within ahead of ticket t, or, where t
// was that near and its spin ran out, until t's turn; or until it may look
// again.
func (l *submitLock) park(t uint64, near bool) {
	slots := l.slots.Load()
	if slots == nil {
		l.once.Do(func() {
			if l.nslots == 0 {
				l.nslots = lockSlots
			}
			s := make([]atomic.Pointer[lockParker], l.nslots)
			l.slots.Store(&s)
		})
		slots = l.slots.Load()
	}
	p := lockParkers.Get().(*lockParker)
	p.t.Store(t)
	slot := &(*slots)[t%l.nslots]
	// The waiter is counted before it stores its slot and uncounted only
	// after it left it, so that parked is never below the waiters in
	// slots: an unlocker that takes a slot uncounts its waiter, and a
	// waiter counted only after it stored its slot could so bring the
	// count to zero with others parked, and the Unlock that gave one of
	// them its turn would wake no one (TestSubmitLockWakesWhileAnotherParks).
	l.parked.Add(1)
	if l.parking != nil {
		l.parking(t)
	}
	if !slot.CompareAndSwap(nil, p) {
		l.parked.Add(-1)
		lockParkers.Put(p)
		time.Sleep(l.pollFor(t))
		return
	}
	// The unlocker stores serving and then reads parked and the slot; this
	// waiter counted itself, stored the slot and now reads serving: one of
	// them sees the other.
	s := l.serving.Load()
	if s == t || (!near && t-s <= l.ahead.Load()) {
		if slot.CompareAndSwap(p, nil) {
			l.parked.Add(-1)
			lockParkers.Put(p)
			return
		}
		// An unlocker took it and sends.
	}
	<-p.ch
	lockParkers.Put(p)
}
