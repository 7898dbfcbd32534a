package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
	"github.com/rig-go/rig/reclaim"
)

// Device is an open device: a driver, its timeline word and its supervisor.
//
// A Device is safe for use by any goroutine. It lives from Open until Close;
// Close stops the driver, and the supervisor then gives back every buffer
// and image once the word reads the last value submitted and no work of
// another device that uses one of its buffers can run (that work ended, or
// its device was stopped). The methods are for a Device that Open
// returned. Given a nil or zero Device, Close, Alloc, MapHost, LoadImage
// and Settle return an error matching ErrInvalid, and NewSubmission does;
// the other methods are not for them: on a nil Device they panic, and on a
// zero one some panic and the others return zero values (Done and Lost a
// nil channel, which is never closed).
type Device struct {
	name string
	// closed is the error of calls and waits after Close: it matches
	// ErrClosed and names the device.
	closed error
	drv    device.Driver
	facts  *device.Facts
	// word is the word rig reads: the array's, or nil where the driver
	// keeps its own, read through Signaled.
	word *uint64
	// slot is the array's slot make was given.
	slot int
	base uint64

	// mu is the submit lock: it orders values, hazards and the driver's
	// Room, Submit and Commit. It is never held across a wait.
	mu        submitLock
	last      atomic.Uint64 // last value submitted; written under mu
	committed atomic.Uint64 // last value committed; written under mu
	kicks     kicks         // a device.Kicker's combined kicks (kick.go)
	combines  bool          // submitters combine (combine.go)
	spinNext  bool          // a wait spins only for the value that completes next (point.go)
	cq        combQueue     // runs that wait for an attempt (combine.go)
	timed     atomic.Bool
	observer  atomic.Pointer[observerBox]
	spin      atomic.Int64 // nanoseconds a wait reads the word before it parks
	spinners  *spinGate    // the places of the goroutines that spin now (spin.go)
	roomWait  roomLine     // the submitters that wait for room
	stock     waiterStock  // waiters for reuse

	// state
	closing atomic.Bool
	loss    atomic.Pointer[LostError]
	reaped  atomic.Bool
	final   uint64 // the word's last value, once reaped
	// signaling counts the reads of a driver's own word in flight
	// (Signaled): the reaping frees the word only once none is.
	signaling atomic.Int32
	// regionsLeft counts the regions of released buffers that wait for
	// the drop of views of them on closing devices (giveBack): the
	// reaping waits for them.
	regionsLeft atomic.Int32
	// left are the buffers whose regions the drop of their last view left
	// to the device's reaping, as the device closed (freeLeft). Guarded
	// by objMu.
	left []*bufState
	// stopped is set, after stopAt, once the supervisor is about to stop
	// the driver: stopAt is then the value the word held before the stop,
	// which raises it past the values it drops.
	stopped atomic.Bool
	stopAt  atomic.Uint64
	// recording counts the records of a loss or a stop under way, each
	// from before its read of the word to after it publishes the value
	// read (recordRead): a reader that found the word past a value waits
	// for them before it answers nil for it, since the value a record
	// read may lie below the word the reader found.
	recording atomic.Int32
	// stopMu orders the stop's record against a loss that another
	// device's failDebtors records: that loss comes before the stop, or
	// not at all.
	stopMu sync.Mutex
	// debts are what the device's work owes to other devices' points
	// (debt.go), written under mu.
	debts atomic.Pointer[[]*debt]

	budget   *reclaim.Budget
	deferred reclaim.Deferred
	stats    stats

	// callMu is held, shared, across each counted driver call of the
	// object paths (alloc, map, image, entry, growth, dma, settle), and taken whole
	// by Close, so that the driver's Stop comes with no counted call in
	// flight, as the contract requires.
	callMu sync.RWMutex

	// objMu guards the live objects that Close gives back.
	objMu   sync.Mutex
	buffers map[*bufState]struct{}
	images  map[*imageState]struct{}
	views   map[*bufState]struct{} // buffers of other devices this one maps

	sup       *supervisor
	done      chan struct{}
	lost      chan struct{} // closed at the loss
	closeOnce sync.Once
	closeErr  error
}

var (
	regMu   sync.Mutex
	names   = map[string]*Device{}
	opening = map[string]bool{}
	domains = map[string]map[*Device]struct{}{}
)

// Open opens a device with op and starts its supervisor. One device of a
// name is open at a time: Open returns an error matching ErrInUse, at
// once, while a device of op's name is open, or another Open of the name
// is under way. Opening the name of a lost device that was not closed
// closes it first; where a closed or lost device of the name has not yet
// given back what it holds (its work still runs), Open waits for that
// while ctx allows, and returns an error wrapping ctx's if it ends first.
// Where op.Make panics, or returns neither a driver nor an error, Open
// returns an error that says so, and the name can be opened again; an
// opener with no Make returns an error matching ErrInvalid.
func Open(ctx context.Context, op device.Opener) (*Device, error) {
	if ctx == nil {
		panic("rig: Open with a nil Context")
	}
	if op.Make == nil {
		return nil, fmt.Errorf("rig: open %q: the opener has no make: %w", op.Name, ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := reserveName(ctx, op.Name); err != nil {
		return nil, err
	}
	reserved := true
	defer func() {
		if reserved {
			// The opener's Make called runtime.Goexit: the name is free
			// again as the goroutine ends.
			regMu.Lock()
			delete(opening, op.Name)
			regMu.Unlock()
		}
	}()
	d, err := open(op)
	reserved = false
	regMu.Lock()
	delete(opening, op.Name)
	if err == nil {
		names[op.Name] = d
		if dom := d.facts.FaultDomain; dom != "" {
			if domains[dom] == nil {
				domains[dom] = map[*Device]struct{}{}
			}
			domains[dom][d] = struct{}{}
		}
	}
	regMu.Unlock()
	if err != nil {
		return nil, err
	}
	go d.sup.run()
	logEvent(slog.LevelInfo, "rig: device open", "device", d.name, "arch", d.facts.Arch)
	return d, nil
}

// reserveName marks name as being opened, once no device of the name is
// open: it closes a lost device of the name, on a goroutine of its own,
// and waits while ctx allows for a closed or lost one to give back what
// it holds.
func reserveName(ctx context.Context, name string) error {
	regMu.Lock()
	defer regMu.Unlock()
	for {
		if opening[name] {
			return fmt.Errorf("rig: open %q: another open of that name is under way: %w", name, ErrInUse)
		}
		old := names[name]
		if old == nil {
			opening[name] = true
			return nil
		}
		lost := old.loss.Load() != nil
		if !lost && !old.closing.Load() {
			return fmt.Errorf("rig: open %q: a device of that name is open: %w", name, ErrInUse)
		}
		regMu.Unlock()
		if lost {
			// The close of a lost device waits for the driver's Stop,
			// which ctx does not bound: it runs on a goroutine of its
			// own, and this open waits for its end as for a closed
			// device's, while ctx allows.
			go func() { _ = old.Close() }()
		}
		var err error
		select {
		case <-old.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		regMu.Lock()
		if err != nil && names[name] == old {
			what := "closed"
			if lost {
				what = "lost"
			}
			return fmt.Errorf("rig: open %q: the %s device's work still runs: %w", name, what, err)
		}
	}
}

func open(op device.Opener) (*Device, error) {
	slot, w, err := timeline.Take()
	if err != nil {
		return nil, fmt.Errorf("rig: open %q: %w", op.Name, err)
	}
	drv, err := callMake(op.Make, slot, w)
	if err != nil {
		timeline.Give(slot)
		return nil, fmt.Errorf("rig: open %q: %w", op.Name, err)
	}
	f := drv.Facts()
	if f == nil || len(f.Queues) == 0 {
		_ = drv.Stop("")
		timeline.Give(slot)
		return nil, fmt.Errorf("rig: open %q: the driver declares no queues", op.Name)
	}
	d := &Device{
		name:    op.Name,
		closed:  &closedError{op.Name},
		drv:     drv,
		facts:   f,
		word:    f.Word,
		slot:    slot,
		budget:  reclaim.NewBudget(f.Budget),
		buffers: map[*bufState]struct{}{},
		images:  map[*imageState]struct{}{},
		views:   map[*bufState]struct{}{},
		done:    make(chan struct{}),
		lost:    make(chan struct{}),
	}
	d.base = d.read()
	d.last.Store(d.base)
	d.committed.Store(d.base)
	d.kicks.want.Store(d.base)
	d.kicks.done.Store(d.base)
	d.sup = newSupervisor(d)
	d.spin.Store(int64(DefaultWaitSpin))
	var lockGate *spinGate
	d.spinners, lockGate = spinGatesFor(f.OnHost)
	d.mu.init(runtime.GOMAXPROCS(0), f.OnHost, lockGate)
	_, kicker := drv.(device.Kicker)
	d.combines = kicker && !f.OnHost
	d.spinNext = d.combines
	return d, nil
}

// callMake calls mk with the word of timeline slot slot. A panic of mk,
// or a nil driver with a nil error, returns an error that names it; where
// mk calls runtime.Goexit, the slot is given back as the goroutine ends.
func callMake(mk func(*uint64) (device.Driver, error), slot int, w *uint64) (drv device.Driver, err error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover()
		if v == nil {
			timeline.Give(slot)
			return
		}
		drv = nil
		if e, ok := v.(error); ok {
			err = fmt.Errorf("the opener's make panicked: %w", e)
		} else {
			err = fmt.Errorf("the opener's make panicked: %v", v)
		}
	}()
	drv, err = mk(w)
	returned = true
	if drv == nil && err == nil {
		err = errors.New("the opener's make returned neither a driver nor an error")
	}
	return drv, err
}

// Name is the name of the device's opener.
func (d *Device) Name() string { return d.name }

// Facts is what the driver declared when the device opened. The caller
// must not change it.
func (d *Device) Facts() *device.Facts { return d.facts }

// Arch is the device's architecture, such as "sm_90".
func (d *Device) Arch() string { return d.facts.Arch }

// Err is the error of the device's loss, or nil while it is not lost.
func (d *Device) Err() error {
	if le := d.loss.Load(); le != nil {
		return le
	}
	return nil
}

// Word is the device's word in rig's array, as the waits of other devices'
// submissions name it (device.Wait.Word), or nil where the device keeps a
// word of its own. Nothing but the device's work may write it.
func (d *Device) Word() *uint64 { return d.word }

// Last is the point of the last value submitted.
func (d *Device) Last() Point { return Point{d: d, v: d.last.Load()} }

// Done is closed once a closed device has given back everything it held.
func (d *Device) Done() <-chan struct{} { return d.done }

// Budget returns the bytes the device's buffers and images take, each in
// whole units of the driver's alignment (a page on the host driver), and
// its budget (0 for none).
func (d *Device) Budget() (used, limit int64) { return d.budget.Used(), d.budget.Limit() }

// read is the value in the device's word.
func (d *Device) read() uint64 {
	if d.word != nil {
		if d.reaped.Load() {
			return d.final
		}
		return atomic.LoadUint64(d.word)
	}
	// Counted before reaped is read: the reaping stores reaped before it
	// reads the count, so that either this read finds reaped or the
	// reaping waits for it before the driver frees the word.
	d.signaling.Add(1)
	if d.reaped.Load() {
		d.signaling.Add(-1)
		return d.final
	}
	v := d.drv.Signaled()
	d.signaling.Add(-1)
	return v
}

// lose records the loss of the device, once, and tells the supervisor.
// It never blocks, so any goroutine may call it holding any lock.
func (d *Device) lose(cause string, f *device.Fault) *LostError {
	return d.loseRead(cause, f, d.read)
}

// loseRead is lose where reached, which reads the word, says the value it
// held when the loss happened: it is read inside a record (recordRead).
func (d *Device) loseRead(cause string, f *device.Fault, reached func() uint64) *LostError {
	if le := d.loss.Load(); le != nil {
		return le
	}
	var le *LostError
	d.recordRead(func() { le = d.loseAt(cause, f, reached()) })
	return le
}

// recordRead runs rec, which reads the word and records a loss or a stop
// with the value read, as a record under way (recording): a reader that
// reads the word before the record's read and finds no record published
// waits for it (passedAnswer), so that no point answers nil and then, once
// the record is published, the record's error.
func (d *Device) recordRead(rec func()) {
	d.recording.Add(1)
	defer d.recording.Add(-1)
	rec()
}

// loseAt is lose where the word held reached when the loss happened.
func (d *Device) loseAt(cause string, f *device.Fault, reached uint64) *LostError {
	le := &LostError{Device: d.name, Cause: cause, Fault: f, Reached: reached}
	if !d.loss.CompareAndSwap(nil, le) {
		return d.loss.Load()
	}
	close(d.lost)
	d.sup.poke()
	return le
}

// fault loses the device if err is a *device.Fault of a counted call, and
// returns the error the caller returns.
func (d *Device) fault(err error) error {
	if f, ok := device.AsFault(err); ok {
		return d.loseRead(f.Why, f, func() uint64 { return faultReached(f, d.read()) })
	}
	return err
}

// faultReached is the value a loss by fault f records: the word's value
// that the fault states, or seen, a value the word held before the fault
// was returned.
func faultReached(f *device.Fault, seen uint64) uint64 {
	if f.HasReached {
		return f.Reached
	}
	return seen
}

// passedAnswer is the answer of a wait on v once the word passed v: nil,
// the loss where v lies past the value reached when it happened, or
// ErrClosed where v lies past the value the word held when the device was
// stopped. The word is read before it: a stop is recorded before the
// driver's Stop raises the word. It waits for the records of a loss or a
// stop under way (recording).
func (d *Device) passedAnswer(v uint64) error {
	_, err := d.passedAnswerIf(v, true)
	return err
}

// passedAnswerIf is passedAnswer, which, where wait is false, rather than
// wait for a record under way, reports that the answer is not settled.
// A record that began after the caller read the word read a value at
// least that one; one that began before is waited for, or published.
func (d *Device) passedAnswerIf(v uint64, wait bool) (settled bool, err error) {
	for d.recording.Load() != 0 {
		if !wait {
			return false, nil
		}
		runtime.Gosched()
	}
	if le := d.loss.Load(); le != nil && !device.AtLeast(le.Reached, v) {
		return true, le
	}
	if d.stopped.Load() && !device.AtLeast(d.stopAt.Load(), v) {
		return true, d.closed
	}
	return true, nil
}

// begin enters a counted driver call of the object paths: it returns the
// error of a device that takes no more calls, or holds callMu shared until
// end.
func (d *Device) begin() error {
	if err := d.made("a call"); err != nil {
		return err
	}
	d.callMu.RLock()
	if err := d.usable(); err != nil {
		d.callMu.RUnlock()
		return err
	}
	return nil
}

// made returns an error matching ErrInvalid, which names the call, for
// a nil Device, or a zero one, which Open did not make.
func (d *Device) made(call string) error {
	if d == nil || d.sup == nil {
		return fmt.Errorf("rig: %s on a nil device, or a zero one, which Open did not make: %w", call, ErrInvalid)
	}
	return nil
}

// end leaves a counted driver call that begin entered.
func (d *Device) end() { d.callMu.RUnlock() }

// usable returns the error of a device that takes no more work.
func (d *Device) usable() error {
	if d.closing.Load() {
		return d.closed
	}
	if le := d.loss.Load(); le != nil {
		return le
	}
	return nil
}

// Close stops the device: later calls that use it (allocations, loads,
// submissions, copies) return an error matching ErrClosed, waiters whose
// point is not reached are woken with ErrClosed, and the driver is stopped
// without waiting for its work. A point the word had not reached when the
// driver stopped is never reached: its waits return ErrClosed. The
// supervisor then gives back every buffer and image once the word reads
// the last value and the work of other devices that uses its buffers
// ended (Done); other devices can no longer use its buffers. Close is safe
// to call more than once, from any goroutine; each call returns the stop's
// error. A nil Device, or a zero one (Open did not make it), returns an
// error matching ErrInvalid, as a deferred Close after a failed Open calls
// it.
func (d *Device) Close() error {
	if d == nil || d.sup == nil {
		return fmt.Errorf("rig: close of a nil device: %w", ErrInvalid)
	}
	d.closeOnce.Do(func() {
		d.closing.Store(true)
		// A submission in flight holds mu, and a counted call of the
		// object paths holds callMu: both end before the stop.
		d.mu.Lock()
		d.closing.Store(true)
		d.unlockSubmit()
		d.callMu.Lock()
		//lint:ignore SA2001 the empty section waits for the calls in flight
		d.callMu.Unlock()
		reply := make(chan error, 1)
		if err := d.sup.box.Send(context.Background(), message{kind: msgClose, reply: reply}); err != nil {
			d.closeErr = err
			return
		}
		d.closeErr = <-reply
	})
	return d.closeErr
}

// domainPeers returns the other open devices of d's fault domain.
func (d *Device) domainPeers() []*Device {
	dom := d.facts.FaultDomain
	if dom == "" {
		return nil
	}
	regMu.Lock()
	defer regMu.Unlock()
	var out []*Device
	for o := range domains[dom] {
		if o != d {
			out = append(out, o)
		}
	}
	return out
}

// unregister forgets the device's name and domain once it is reaped.
func (d *Device) unregister() {
	regMu.Lock()
	if names[d.name] == d {
		delete(names, d.name)
	}
	if dom := d.facts.FaultDomain; dom != "" {
		delete(domains[dom], d)
	}
	regMu.Unlock()
}
