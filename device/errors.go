package device

import (
	"errors"
	"fmt"
)

// ErrNoMemory is returned by Alloc where the device has no memory to give.
// rig's Device.Alloc returns an error matching it, at once, for a kind of
// memory the device has none of (Facts.Kinds).
var ErrNoMemory = errors.New("no memory")

// ErrAbsent is returned by Entry where the image has no such function.
var ErrAbsent = errors.New("no such function")

// ErrNoRoom is returned by MapPeer and MapHost where the device lacked
// room to map the memory now.
var ErrNoRoom = errors.New("no room to map")

// ErrNever is returned by MapPeer and MapHost where the device never maps
// that memory. rig's Device.MapHost returns an error matching it on a
// device that maps no host memory (Facts.MapsHost false).
var ErrNever = errors.New("cannot map")

// Fault reports that the device faulted. A *Fault from a counted call loses
// the device.
type Fault struct {
	// Why is the cause, such as CUDA's error name and text.
	Why string
	// Detail holds further lines, such as the RM's notifier lines and MMU
	// faults; %+v prints them.
	Detail []string
	// Reached, where HasReached is true, is the value the device's word
	// held when the driver found the fault: the work of that value and of
	// every earlier one completed, that of the next did not. rig records
	// it as what the lost device reached. Where the driver does not say,
	// rig records a value the word held before the fault was returned:
	// for Sleep, the value rig passed as seen.
	Reached    uint64
	HasReached bool
	// Alone, where true, says that the fault is the device's own, found on
	// the host's side (such as a failed read of its own stamps), and stops
	// no work that the other devices of its fault domain share: rig loses
	// the device and none of the others.
	Alone bool
}

// Faultf makes a *Fault.
func Faultf(format string, args ...any) *Fault {
	return &Fault{Why: fmt.Sprintf(format, args...)}
}

// Error returns "fault: " and Why.
func (f *Fault) Error() string { return "fault: " + f.Why }

// Format prints Why with %v and %s, and Why with every line of Detail
// with %+v.
func (f *Fault) Format(s fmt.State, verb rune) {
	_, _ = fmt.Fprint(s, f.Error())
	if verb == 'v' && s.Flag('+') {
		for _, l := range f.Detail {
			_, _ = fmt.Fprint(s, "\n\t", l)
		}
	}
}

// AsFault returns the *Fault err wraps, if any.
func AsFault(err error) (*Fault, bool) {
	var f *Fault
	ok := errors.As(err, &f)
	return f, ok
}

// NoMemory is returned by Entry where the device has no memory for the N
// bytes the function's launches need; Entry made nothing.
type NoMemory struct{ N int64 }

// Error names the bytes lacked.
func (e *NoMemory) Error() string { return fmt.Sprintf("no memory for %d bytes", e.N) }

// Short is returned by Grow where the device has no memory for the N bytes
// the growth takes.
type Short struct{ N int64 }

// Error names the bytes lacked.
func (e *Short) Error() string { return fmt.Sprintf("short of %d bytes to grow the queues", e.N) }
