package rig

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/mailbox"
)

// The supervisor is the one goroutine per device that owns the driver's
// sleep, the device's loss and stop, and its waiters.
//
// It alone calls Driver.Sleep, Driver.Stop, and Free and Unload after Stop.
// It loops: take the mailbox's messages (waiters that register or cancel,
// faults of other devices of the fault domain, Close), read the word, wake
// every waiter whose value the word passed, give back deferred frees that
// are due, and then, by what it found:
//
//   - waiters registered: spin on a word that moves quickly for a while
//     (spinFirst), then sleep in the driver for at most sleepStill, so
//     that the word's moves wake them at once;
//   - work pending but no waiter: ask the driver for faults (a Sleep of no
//     time) every pollEvery, and bound the work's progress by HangMs;
//   - nothing pending: park. For idleDeep after the device last had work
//     it parks with a tick of idleTick, so that submissions need not wake
//     it; then it parks until a message or a poke, which only the first
//     submission after a deep park sends (one non-blocking send).

const (
	// sleepStill bounds one Sleep, so that cancellations and Close are
	// handled within it.
	sleepStill = 10 * time.Millisecond
	// pollEvery is how often the supervisor looks at a device whose work
	// no one waits for.
	pollEvery = time.Millisecond
	// idleTick is the tick of a shallow park.
	idleTick = 20 * time.Millisecond
	// idleDeep is how long a device has no work before the supervisor
	// parks deeply.
	idleDeep = time.Second
	// mailboxSize bounds the supervisor's mailbox.
	mailboxSize = 4096
)

// Park states.
const (
	running int32 = iota
	shallow
	deep
)

type msgKind uint8

const (
	msgRegister msgKind = iota + 1
	msgCancel
	msgFault
	msgClose
)

type message struct {
	kind  msgKind
	w     *waiter
	cause string
	reply chan error
}

// waiter is a goroutine waiting for a value. The supervisor owns idx, and
// sends at most one answer on ch: none to a waiter that cancelled first.
//
// state says who counts the waiter in Waiting: the supervisor moves it
// from waitSent to waitHeld and counts it as it takes the registration,
// and uncounts it as it moves it to waitAnswered; a waiter whose context
// ends moves it to waitCancelled itself and uncounts it where it was
// held, so that it leaves nothing counted once Wait returns.
type waiter struct {
	v     uint64
	key   uint64 // v - the device's base, the heap's order
	idx   int
	state atomic.Int32
	ch    chan error
	woke  time.Time // when the supervisor answered, for Stats.WakeLatency
}

// Waiter states.
const (
	waitSent int32 = iota
	waitHeld
	waitAnswered
	waitCancelled
)

// answer sends err to the waiter unless it cancelled, and uncounts it
// where the supervisor counted it. Only the supervisor calls it.
func (s *supervisor) answer(w *waiter, err error) {
	if w.state.CompareAndSwap(waitHeld, waitAnswered) {
		s.count.Add(-1)
	} else if !w.state.CompareAndSwap(waitSent, waitAnswered) {
		return
	}
	w.woke = time.Now()
	w.ch <- err
}

// hold counts a registered waiter the supervisor keeps, and reports
// whether it still waits. Only the supervisor calls it.
func (s *supervisor) hold(w *waiter) bool {
	if !w.state.CompareAndSwap(waitSent, waitHeld) {
		return false
	}
	// The waiter may cancel and uncount itself before this count: the
	// sum may dip below zero for that moment, never above the waiters.
	s.count.Add(1)
	return true
}

// cancel withdraws the waiter after its context ended: it is uncounted at
// once, and the supervisor drops it and takes it back for reuse when the
// cancellation reaches it. The waiting goroutine calls it, and must not
// touch w afterwards.
//
// A sent waiter is withdrawn first: the supervisor may hold it after a
// look for a held one and before a look for a sent one, and then it would
// stay counted. Once the look for a sent one fails it is held or
// answered, and only the supervisor's answer moves it on.
func (s *supervisor) cancel(w *waiter) {
	s.withdraw(w)
	// Without waiting for room: where thousands of waits end at once the
	// box fills, and a wait would return only once the supervisor took
	// the cancellations before it. A cancellation the full box refuses
	// leaves the waiter in the heap, cancelled: the supervisor's answer
	// passes it by once its value is reached or the device stops, and the
	// collector takes it.
	_ = s.box.TrySend(message{kind: msgCancel, w: w})
}

// withdraw moves the waiter to waitCancelled, where no answer moved it
// first, and uncounts it where the supervisor counted it. The waiting
// goroutine calls it; the supervisor passes the waiter by once its value
// is reached or the device stops, unless a cancellation (cancel) takes it
// out first.
func (s *supervisor) withdraw(w *waiter) {
	if !w.state.CompareAndSwap(waitSent, waitCancelled) && w.state.CompareAndSwap(waitHeld, waitCancelled) {
		s.count.Add(-1)
	}
}

// dropCancelled takes a cancelled waiter out of the heap and back into
// the pool. Only the supervisor calls it, for the waiter's cancellation,
// which comes after its registration.
func (s *supervisor) dropCancelled(w *waiter) {
	if w.idx >= 0 && w.idx < len(s.waiters) && s.waiters[w.idx] == w {
		heap.Remove(&s.waiters, w.idx)
	}
	select {
	case <-w.ch:
	default:
	}
	w.state.Store(waitSent)
	s.d.stock.put(w)
}

type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.idx = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.idx = -1
	return w
}

type supervisor struct {
	d       *Device
	box     *mailbox.Box[message]
	kick    chan struct{}
	parked  atomic.Int32
	waiters waiterHeap
	count   atomic.Int64           // registered waiters, for Waiting
	lost    *LostError             // the loss the supervisor has acted on
	handled atomic.Pointer[func()] // tests' hook, called after each message handled
}

func newSupervisor(d *Device) *supervisor {
	return &supervisor{d: d, box: mailbox.New[message](mailboxSize), kick: make(chan struct{}, 1)}
}

// poke wakes a parked supervisor. Any goroutine may call it; it never blocks.
func (s *supervisor) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// submitted is called by a submitter after it published a value: it pokes
// the supervisor only if it parked deeply.
func (s *supervisor) submitted() {
	if s.parked.Load() == deep && s.parked.CompareAndSwap(deep, running) {
		s.poke()
	}
}

// drainBound bounds the messages one look takes before it wakes the
// waiters the word reached; those past it wait for a later look.
// Registrations that the supervisor answers at once (their value passed
// while they were in the box) come again as soon as their goroutines
// submit and wait: a loop that took messages until the box was empty
// then kept the waiters it held from their wake-up. On the H200, four
// nvdev timelines of 16 goroutines each, in a build whose supervisor
// yielded after every answer, held waiters 45 to 80 ms so; its maxima
// were 159 to 195 ms in three runs (94 to 289 ms in nine, with yields
// after every second or fourth answer too), and 1.5 to 2.4 ms with a
// bound. Where fewer messages come, as they do from a few hundred
// goroutines, a look takes them all as before: the same four timelines
// beside the build before, five rounds each, p99 127 to 140 µs against
// 124 to 146 µs. TestSupervisorWakesUnderMessages.
const drainBound = 256

func (s *supervisor) run() {
	d := s.d
	seen := d.read()
	moved := time.Now()
	busy := moved // when the device last had work pending
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		// Messages first, until the box is empty or drainBound were
		// taken, so that waiters' registrations that keep coming do not
		// keep the waiters already held from their wake-up.
	drain:
		for range drainBound {
			select {
			case m := <-s.box.Receive():
				if m.kind == msgClose {
					s.close(m.reply)
					return
				}
				s.handle(m)
			default:
				break drain
			}
		}
		if le := d.loss.Load(); le != nil && s.lost == nil {
			s.onLoss(le)
		}
		cur := d.read()
		if s.lost == nil && (d.recording.Load() != 0 || d.loss.Load() != nil) {
			// A loss recorded since the look above, or under way, may
			// hold a value read before cur: the next look acts on it,
			// and cur wakes no one with nil past it.
			runtime.Gosched()
			continue
		}
		now := time.Now()
		if cur != seen {
			seen, moved = cur, now
		}
		s.wake(cur)
		d.deferred.Sweep()

		pending := s.lost == nil && !device.AtLeast(cur, d.last.Load())
		if !pending {
			state := shallow
			if now.Sub(busy) > idleDeep && d.deferred.Len() == 0 {
				state = deep
			}
			s.parked.Store(state)
			if s.lost == nil && !device.AtLeast(d.read(), d.last.Load()) {
				s.parked.Store(running)
				continue
			}
			var tick <-chan time.Time
			if state == shallow {
				timer.Reset(idleTick)
				tick = timer.C
			}
			select {
			case m := <-s.box.Receive():
				s.parked.Store(running)
				if m.kind == msgClose {
					s.close(m.reply)
					return
				}
				s.handle(m)
			case <-s.kick:
			case <-tick:
			}
			s.parked.Store(running)
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			// Time parked is no time without progress.
			moved = time.Now()
			continue
		}
		busy = now
		hang := time.Duration(d.facts.HangMs) * time.Millisecond
		if s.commitTail(now.Sub(moved), hang) {
			continue
		}
		still := sleepStill
		if s.waiters.Len() == 0 {
			still = 0
		}
		if hang > 0 {
			left := hang - now.Sub(moved)
			if left <= 0 {
				d.lose(fmt.Sprintf("no progress for %d ms%s", d.facts.HangMs, d.waitedFor(cur)), nil)
				continue
			}
			still = min(still, left)
		}
		if still > 0 && s.spinFirst(cur, now.Sub(moved)) {
			continue
		}
		if err := d.drv.Sleep(cur, still); err != nil {
			if f, ok := device.AsFault(err); ok {
				// The work of values past cur may have failed: the
				// driver may raise the word past them once Sleep
				// returned, so only the fault's own record of the word
				// says more.
				d.loseAt(f.Why, f, faultReached(f, cur))
			}
			continue
		}
		if still == 0 {
			// No one waits: look again in a while, or at a message.
			timer.Reset(pollEvery)
			select {
			case m := <-s.box.Receive():
				if m.kind == msgClose {
					s.close(m.reply)
					return
				}
				s.handle(m)
			case <-timer.C:
			case <-s.kick:
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
	}
}

// commitStill is how long the word stands still, while work is pending and
// the driver holds values uncommitted (device.Pending: the word shows them
// only once committed), before the supervisor commits them; half the hang
// bound where that is shorter. Otherwise a device whose last values no one
// waits for would never show their work's end: its deferred frees would
// never come due, and the hang bound would lose it for work that ended.
const commitStill = 20 * time.Millisecond

// commitTail commits the values submitted where some are uncommitted and
// the word stood still for commitStill (or half of hang, where shorter),
// and reports whether it committed them. Only the supervisor calls it,
// holding no lock.
func (s *supervisor) commitTail(unmoved, hang time.Duration) bool {
	d := s.d
	last := d.last.Load()
	if device.AtLeast(d.committed.Load(), last) {
		return false
	}
	after := commitStill
	if hang > 0 {
		after = min(after, hang/2)
	}
	if unmoved < after {
		return false
	}
	_ = d.commit(last)
	return device.AtLeast(d.committed.Load(), last)
}

// handle acts on message m, then calls the tests' hook (handled), wherever
// the supervisor took m: in its drain, or in a park or a poll.
func (s *supervisor) handle(m message) {
	if h := s.handled.Load(); h != nil {
		defer (*h)()
	}
	switch m.kind {
	case msgRegister:
		w := m.w
		cur := s.d.read()
		if device.AtLeast(cur, w.v) {
			s.answer(w, s.d.passedAnswer(w.v))
			return
		}
		if s.lost != nil {
			s.answer(w, s.lost)
			return
		}
		if s.hold(w) {
			heap.Push(&s.waiters, w)
		}
	case msgCancel:
		s.dropCancelled(m.w)
	case msgFault:
		s.d.lose(m.cause, nil)
	}
}

// wake returns every waiter whose value cur reached. Where it woke any
// and the device's waits park for every value but the next (spinNext), so
// that the supervisor wakes most of them, it yields its processor to them
// (yieldToWoken) before it spins on the word again. On the H200, four
// nvdev timelines of 16 goroutines each, with the combiners' yields and
// spinNext, waited 140 to 144 µs at p99, at most 60 and 504 ms, and spent
// 12 s of CPU a second; with the supervisors' yields too, p99 100 to 102
// µs, at most 1.5 ms, and 9 to 9.6 s of CPU a second, at the same rate
// (the build before: p99 397 to 440 µs and 16 s of CPU a second, every
// processor). cudadev's waits spin rather than park, so that its
// supervisor wakes few of them, and a yield there measured no gain.
//
// The woken run in value order: Go runs the goroutine a send woke last
// first, and the others in the order they were woken, so the waiter of
// the lowest value is answered last (wokenInOrder).
func (s *supervisor) wake(cur uint64) {
	var first *waiter
	for len(s.waiters) > 0 && device.AtLeast(cur, s.waiters[0].v) {
		w := heap.Pop(&s.waiters).(*waiter)
		if first == nil {
			first = w
			continue
		}
		s.answer(w, nil)
	}
	if first == nil {
		return
	}
	s.answer(first, nil)
	if s.d.spinNext {
		yieldToWoken()
	}
}

// wakeAll returns every waiter: nil where reached, err otherwise.
func (s *supervisor) wakeAll(err error) {
	cur := s.d.read()
	for len(s.waiters) > 0 {
		w := heap.Pop(&s.waiters).(*waiter)
		if device.AtLeast(cur, w.v) {
			s.answer(w, s.d.passedAnswer(w.v))
		} else {
			s.answer(w, err)
		}
	}
}

// onLoss acts on the device's loss: it wakes every waiter with the loss's
// error and sends a fault to the other devices of the fault domain, unless
// the fault is the device's alone (device.Fault.Alone).
func (s *supervisor) onLoss(le *LostError) {
	s.lost = le
	s.wakeAll(le)
	s.d.failDebtors()
	s.d.commitLost()
	logEvent(slog.LevelError, "rig: device lost", "device", s.d.name, "cause", le.Cause, "reached", le.Reached)
	if le.Fault == nil {
		return
	}
	if !le.Fault.Alone {
		cause := fmt.Sprintf("a fault of device %s in fault domain %q: %s", s.d.name, s.d.facts.FaultDomain, le.Cause)
		for _, o := range s.d.domainPeers() {
			go func() { _ = o.sup.box.Send(context.Background(), message{kind: msgFault, cause: cause}) }()
		}
	}
	// What the driver reads of the fault after the loss: its waiters and
	// the devices of its domain know of the loss already.
	if fr, ok := s.d.drv.(device.FaultReader); ok {
		if more := fr.ReadFault(le.Fault); len(more) > 0 {
			le.more.Store(&more)
			logEvent(slog.LevelError, "rig: device lost: the fault's detail", "device", s.d.name, "detail", le.Detail())
		}
	}
}

// close stops the driver, replies to the closer, and gives back everything
// once the word reads the last value.
func (s *supervisor) close(reply chan error) {
	d := s.d
	// The stop is recorded first: a loss that another device records
	// comes before it, and is acted on here, so that the waiters woken
	// get the answer that later waits on their points get.
	d.recordStop()
	if le := d.loss.Load(); le != nil && s.lost == nil {
		s.onLoss(le)
	}
	var cause = d.closed
	if s.lost != nil {
		cause = s.lost
	}
	s.wakeAll(cause)
	fault := ""
	if s.lost != nil {
		fault = s.lost.Cause
	}
	d.failDebtors()
	err := d.drv.Stop(fault)
	s.box.Close()
	// Waiters that registered after the last drain are returned too.
	for drained := false; !drained; {
		select {
		case m := <-s.box.Receive():
			if m.kind == msgRegister {
				if device.AtLeast(d.read(), m.w.v) {
					s.answer(m.w, d.passedAnswer(m.w.v))
				} else {
					s.answer(m.w, cause)
				}
			}
		default:
			drained = true
		}
	}
	reply <- err
	s.reap()
}

// awaitOtherUses waits until no work of another device that uses the
// buffers of a device being reaped can run: each point of such work is
// passed, by its work's end or by its device's stop. It first marks them
// freed, so that no submission records a later use. Only the supervisor
// calls it, after the device's own work ended.
func awaitOtherUses(bufs map[*bufState]struct{}) {
	for b := range bufs {
		b.mu.Lock()
		b.freed = true
		b.mu.Unlock()
	}
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		due := true
		for b := range bufs {
			if !b.Due() {
				due = false
				break
			}
		}
		if due {
			return
		}
		time.Sleep(wait)
	}
}

// recordStop records the value the word holds before the driver's Stop,
// which drops the work not yet run and raises the word past it: a wait on
// a later value then returns ErrClosed, not nil. Only the supervisor
// calls it, once, inside stopMu: failDebtors loses no device once its stop
// is recorded.
func (d *Device) recordStop() {
	d.recordRead(func() {
		at := d.read()
		d.stopMu.Lock()
		d.stopAt.Store(at)
		d.stopped.Store(true)
		d.stopMu.Unlock()
	})
}

// reap waits until the word reads the last value, then frees every region
// and unloads every image, uncounted, dropping their faults.
func (s *supervisor) reap() {
	d := s.d
	last := d.last.Load()
	for wait := 50 * time.Microsecond; !device.AtLeast(d.read(), last); wait = min(2*wait, 10*time.Millisecond) {
		time.Sleep(wait)
	}
	d.objMu.Lock()
	views := d.views
	bufs := d.buffers
	imgs := d.images
	d.views, d.buffers, d.images = nil, nil, nil
	d.objMu.Unlock()
	// Free and Unload queue their deferred frees inside objMu, and queue
	// none once the lists are nil: every deferred free is queued by now.
	// Those waiting for other devices' points wait for those too.
	for wait := 50 * time.Microsecond; d.deferred.Len() > 0; wait = min(2*wait, 10*time.Millisecond) {
		if d.deferred.Sweep() == 0 {
			time.Sleep(wait)
		}
	}
	for b := range views {
		b.dropView(d)
	}
	for im := range imgs {
		im.release()
	}
	awaitOtherUses(bufs)
	for b := range bufs {
		b.release()
	}
	// Regions whose views on closing devices outlived their release go
	// back as those devices' reaping frees the views; it frees them before
	// any wait of its own on other devices' reaping. A drop that came once
	// this device closed leaves the region here (left), after the stop.
	for wait := 50 * time.Microsecond; d.regionsLeft.Load() > 0; wait = min(2*wait, 10*time.Millisecond) {
		d.objMu.Lock()
		left := d.left
		d.left = nil
		d.objMu.Unlock()
		for _, b := range left {
			b.freeRegion()
			d.regionsLeft.Add(-1)
		}
		if len(left) == 0 {
			time.Sleep(wait)
		}
	}
	if d.facts.Word == nil && d.facts.OwnWord != nil {
		// Readers of the word read final from here on, before the
		// driver frees the word.
		d.final = d.drv.Signaled()
		d.reaped.Store(true)
		// Reads that began before reaped was stored may still be in
		// the driver's Signaled: the word is freed once they return.
		for d.signaling.Load() != 0 {
			time.Sleep(50 * time.Microsecond)
		}
		_ = d.drv.Free(d.facts.OwnWord)
	} else {
		d.final = d.read()
		d.reaped.Store(true)
	}
	timelineGive(d.slot)
	d.unregister()
	close(d.done)
	logEvent(slog.LevelInfo, "rig: device closed, everything given back", "device", d.name)
}

// Waiting is the number of waiters registered with the device's
// supervisor. A wait that returned, answered or cancelled, is not among
// them.
func (d *Device) Waiting() int { return int(max(d.sup.count.Load(), 0)) }
