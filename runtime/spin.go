package rig

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/yield"
)

// spinGate bounds the goroutines that spin on a device's word at once.
//
// A wait spins on the word before it parks only while it holds one of the
// gate's places; a wait that finds none free parks at once, so that a
// thousand waiters cost the CPU of the budget's few, and the goroutines
// that do the work (on the host driver, the device's own) keep the
// processors. Any goroutine may call enter and leave.
type spinGate struct {
	n   atomic.Int32 // places held
	max int32        // the budget, set when the device opens
}

// spinBudget is the places of a device's spin gate for GOMAXPROCS procs.
//
// Where the device's work runs on the process's goroutines (Facts.OnHost)
// a spinner yields at every read, so it holds a place in the run queue
// rather than a processor, and a spin that ends in time costs less than a
// park and a wake by the supervisor: the budget is eight places per
// processor. On a machine of two processors, host driver, closed loop of
// depth 1 (rigbench -c 10 -depth 1), a submission cost about 0.5 µs of
// CPU with every waiter spinning, 0.65 µs with 4 places and 0.8 µs with
// 1 (runs on a loaded machine, interleaved); at 10,000 goroutines the
// budget made no difference beyond that noise. Otherwise a spinner reads
// the word back to back and holds a processor while it spins: half the
// processors, so that the submitters keep the other half. One at least.
func spinBudget(procs int, onHost bool) int32 {
	if onHost {
		return int32(max(1, 8*procs))
	}
	return int32(max(1, procs/2))
}

// init sets the budget for GOMAXPROCS now.
func (g *spinGate) init(onHost bool) { g.max = spinBudget(runtime.GOMAXPROCS(0), onHost) }

// gpuSpinners is the spin gate that every device shares whose work does
// not run on the process's goroutines, for its waits, and gpuLockSpinners
// the gate for their submit locks' waiters: a spinner holds a processor,
// and the processors are the process's, not a device's. Four devices with
// gates of their own spun on four times the processors that one did, and
// their submitters then waited for processors rather than for the GPU (on
// the H200, four timelines of 16 submitters each made 229k submissions a
// second with a gate per device, and 545k with one gate in a run of the
// next build minutes later).
var (
	gpuSpinners, gpuLockSpinners spinGate
	gpuSpinnersOnce              sync.Once
)

// spinGatesFor returns a new device's spin gates, for its waits and for
// its submit lock: its own where its work runs on the process's goroutines
// (a spinner there yields at every read), the shared ones otherwise. Each
// holds half the processors' places, at least one: on the H200 (16
// processors) one device's 16 submitters made 347k submissions a second
// with 8 places for the locks' spinners and 300k with 4, and four
// devices' 64 made 590k with either.
func spinGatesFor(onHost bool) (waits, lock *spinGate) {
	if onHost {
		g := &spinGate{}
		g.init(true)
		return g, nil
	}
	gpuSpinnersOnce.Do(func() {
		procs := runtime.GOMAXPROCS(0)
		gpuSpinners.max = spinBudget(procs, false)
		gpuLockSpinners.max = spinBudget(procs, false)
	})
	return &gpuSpinners, &gpuLockSpinners
}

// Spinning for the next value only (Device.spinNext). Where many
// goroutines submit and wait, most wait for a value with others' values
// ahead of it: 16 goroutines in a closed loop on the H200 (nvdev) waited
// 30 µs at the median, past a wait's spin of 20 µs, so that a spin mostly
// ended in a park after holding a processor for nothing. On a device whose
// submitters combine, a wait spins only where its value is the one that
// completes next and parks at once otherwise, to be woken by the
// supervisor, which spins on the word for all of them. On the H200, in
// runs of the same build beside each other, 16 goroutines' p99 fell from
// 112 to 135 µs to 84 to 105 µs, and 64's from 257 to 281 µs to 227 to
// 259 µs, at the same rates; one goroutine's, whose value is always the
// next, did not move. cudadev's parked waiters wake through CUDA, and
// there the rule took 16 goroutines from 129k to 138k submissions a
// second to 82k: its waits keep spinning where the gate has a place.

// enter takes a place, and reports whether it got one.
func (g *spinGate) enter() bool {
	if g.n.Load() >= g.max {
		return false
	}
	if g.n.Add(1) > g.max {
		g.n.Add(-1)
		return false
	}
	return true
}

// leave gives back the place enter took.
func (g *spinGate) leave() { g.n.Add(-1) }

// spinFor reads the word until it reaches v, spin elapses, ctx ends, or
// the device is lost or closing, and reports whether it reached v (a
// closing device's waiters are answered by its supervisor, whose Close
// may leave the word where it is). The caller holds
// a place of the device's gate.
// Where the device's work runs on the process's goroutines (Facts.OnHost)
// it yields at every read; otherwise it reads the word back to back and
// yields at the pace of internal/yield: a yield at each read
// (runtime.Gosched) made the round trip on the H200 1.4 µs longer through
// nvdev, 0.4 µs through cudadev, and yields every few looks sent many
// spinners through the scheduler's lock.
func (d *Device) spinFor(ctx context.Context, v uint64, spin time.Duration) bool {
	onHost := d.facts.OnHost
	start := time.Now()
	var pace yield.Pacer
	pace.Start(start)
	for i := uint(1); ; i++ {
		if device.AtLeast(d.read(), v) {
			return true
		}
		if onHost {
			runtime.Gosched()
		}
		if i%spinCheck == 0 {
			now := time.Now()
			if now.Sub(start) > spin || ctx.Err() != nil || d.loss.Load() != nil || d.closing.Load() {
				return false
			}
			if !onHost {
				pace.Maybe(now)
			}
		}
	}
}

// The supervisor spins on the word before it sleeps in the driver where
// waiters are parked, the word moved within superRecent, and the device's
// work does not run on the process's goroutines: a word that moves
// quickly then wakes its waiters without the driver's sleep and wake-up,
// and a device whose word stands still sleeps at once.
const (
	superSpin   = 20 * time.Microsecond
	superRecent = 200 * time.Microsecond
)

// spinFirst reads the word for up to superSpin, where the supervisor should
// (above), and reports whether it moved from cur or a message came: then
// the supervisor looks again rather than sleeping. since is the time since
// the word last moved. Only the supervisor calls it.
func (s *supervisor) spinFirst(cur uint64, since time.Duration) bool {
	d := s.d
	if d.facts.OnHost || since > superRecent {
		return false
	}
	start := time.Now()
	var pace yield.Pacer
	pace.Start(start)
	for i := uint(1); ; i++ {
		if d.read() != cur {
			return true
		}
		if i%spinCheck == 0 {
			if s.box.Len() > 0 {
				return true
			}
			now := time.Now()
			if now.Sub(start) > superSpin {
				return false
			}
			pace.Maybe(now)
		}
	}
}

// roomLine counts the submitters that wait for room in the driver's
// queues (a Room that returned later). The n-th of them waits until n
// more values complete, each of which frees room for at least one: a
// completed value then wakes about one of them, where a wait of each for
// the next value woke them all to contend for that one value's room.
type roomLine struct{ n atomic.Uint64 }

// join takes a place in the line and returns the values to wait for.
func (l *roomLine) join() uint64 { return l.n.Add(1) }

// leave gives back the place join took.
func (l *roomLine) leave() { l.n.Add(^uint64(0)) }

// waiterStock keeps a device's waiters for reuse. Unlike a sync.Pool it
// keeps them across garbage collections: where thousands of goroutines
// wait at once, a pool that each collection empties made a waiter and its
// channel for most waits, and the collections that this garbage brought
// on scanned every waiting goroutine's stack. It holds at most as many as
// once waited at the same time. Any goroutine may call get and put.
type waiterStock struct {
	mu   sync.Mutex
	free []*waiter
}

// get returns a waiter whose channel holds no answer.
func (s *waiterStock) get() *waiter {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		w := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return w
	}
	s.mu.Unlock()
	return &waiter{ch: make(chan error, 1)}
}

// put keeps w, whose channel holds no answer, for a later get.
func (s *waiterStock) put(w *waiter) {
	s.mu.Lock()
	s.free = append(s.free, w)
	s.mu.Unlock()
}
