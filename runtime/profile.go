package rig

import (
	"fmt"
	"runtime/debug"

	"github.com/rig-go/rig/device"
)

// Observer sees each timed submission of a device, as the driver got it:
// its value, waits and parts. The profile package records them to name
// what each value's span ran and which points of other devices it waited
// for.
type Observer interface {
	// Submitted is called on the submitting goroutine, inside the device's
	// submit lock, after the driver's Submit returned, for each submission
	// while the device is timed. It must be quick, must not call the
	// device, and must not keep s or anything it points to: while it
	// runs, the device's other submissions, and SetTimed and
	// SetObserver, wait for the lock, so an observer that blocks stalls
	// them until it returns.
	//
	// An observer that panics, or calls runtime.Goexit, is removed from
	// the device, and the submit lock is released; the work it observed
	// was submitted all the same. After a panic, Submit returns the
	// submission's point with an *ObserverPanicError.
	Submitted(d *Device, s *device.Submission)
}

// ObserverPanicError is the error Submit returns beside a valid point when
// the device's Observer panicked while it saw the submission. The work was
// submitted, and the point is reached once it completes; the observer was
// removed, so later submissions see no error of it.
type ObserverPanicError struct {
	// Device is the device's name.
	Device string
	// Value is the value the observer panicked with.
	Value any
	// Stack is the panicking goroutine's stack, as debug.Stack formats it.
	Stack []byte
}

// Error names the device and the panic's value.
func (e *ObserverPanicError) Error() string {
	return fmt.Sprintf("rig: the observer of device %s panicked and was removed: %v", e.Device, e.Value)
}

// Unwrap returns the panic's value where it is an error.
func (e *ObserverPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

type observerBox struct{ o Observer }

// SetTimed turns the stamping of each value's work on or off, and returns
// the point of the last value submitted under the former setting: once it
// is reached, every stamp of a value timed before the change is ready to
// Settle. While on, the driver stamps each value's start and end, and the
// observer (SetObserver) sees each submission.
func (d *Device) SetTimed(on bool) Point {
	d.mu.Lock()
	defer d.unlockSubmit()
	d.timed.Store(on)
	return Point{d: d, v: d.last.Load()}
}

// SetObserver sets the observer of the device's timed submissions; nil
// removes it. An observer that panics is removed (see Observer).
func (d *Device) SetObserver(o Observer) {
	d.mu.Lock()
	defer d.unlockSubmit()
	if o == nil {
		d.observer.Store(nil)
		return
	}
	d.observer.Store(&observerBox{o})
}

// Timed reports whether the device stamps its values.
func (d *Device) Timed() bool { return d.timed.Load() }

// observe hands a timed submission to the observer, inside the submit
// lock, and returns an *ObserverPanicError where the observer panicked.
// An observer that panics or calls runtime.Goexit is removed; at a Goexit,
// which no recover stops, observe releases the submit lock itself, since
// the submitting goroutine ends before its Submit returns, and kicks the
// value unless the driver's Submit of it failed (failed), as Submit would
// have.
func (d *Device) observe(s *device.Submission, failed bool) (err error) {
	b := d.observer.Load()
	if b == nil {
		return nil
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		d.observer.CompareAndSwap(b, nil)
		v := recover()
		if v == nil {
			// runtime.Goexit: the goroutine ends. The value was
			// submitted: a Kicker's device sees it only once kicked,
			// as Submit would have done after the lock.
			d.unlockSubmit()
			if k, ok := d.drv.(device.Kicker); ok && !failed {
				d.kicks.kick(k, s.Value)
			}
			d.sup.submitted()
			return
		}
		err = &ObserverPanicError{Device: d.name, Value: v, Stack: debug.Stack()}
	}()
	b.o.Submitted(d, s)
	returned = true
	return nil
}

// Settle appends the stamps of timed values whose work completed, on the
// host's clock (device.Now), in value order. A failed conversion loses the
// device. After Close it returns ErrClosed, and the stamps not yet settled
// are lost; a Close that begins while the driver settles stops the driver
// once Settle returned.
func (d *Device) Settle(into []device.Stamp) ([]device.Stamp, error) {
	if err := d.made("settle"); err != nil {
		return into, err
	}
	// Settle is a counted call: callMu keeps the driver's Stop from
	// coming while it runs. A lost device still settles.
	d.callMu.RLock()
	defer d.callMu.RUnlock()
	if d.closing.Load() {
		return into, d.closed
	}
	out, err := d.drv.Settle(into)
	if err != nil {
		return out, fmt.Errorf("rig: settle on %s: %w", d.name, d.fault(err))
	}
	return out, nil
}
