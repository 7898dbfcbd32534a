package rig

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/reclaim"
)

var (
	// ErrLost is matched (errors.Is) by every error of a lost device. The
	// error is a *LostError that names the cause.
	ErrLost = errors.New("rig: device lost")
	// ErrOutOfMemory is matched by an allocation, an entry or a growth that
	// failed after every round of reclamation, and by an allocation that
	// no reclamation could serve (more bytes than the device's whole
	// budget), which fails at once. The error is an *OutOfMemoryError that
	// states the bytes lacked.
	ErrOutOfMemory = errors.New("rig: out of memory")
	// ErrClosed is matched by the errors of calls on a device after Close
	// and of uses of its buffers, and by waits on points that the word
	// had not reached when Close stopped the device, before or after
	// their wait began.
	ErrClosed = errors.New("rig: device closed")
	// ErrRefused is matched by a *RefusalError: the device can never run a
	// part, however long the caller waits (room will not come), and
	// nothing was submitted.
	ErrRefused = errors.New("rig: part refused")
	// ErrNoFunction is matched when an image has no function of the name.
	ErrNoFunction = errors.New("rig: no such function")
	// ErrFreed is matched by the errors of uses of a freed buffer or of an
	// unloaded image.
	ErrFreed = errors.New("rig: used after free")
	// ErrInvalid is matched by the errors of calls whose arguments no
	// device accepts: a nil device or function, an index, length or count
	// out of its bounds, a run submitted after it went back to its pool.
	ErrInvalid = errors.New("rig: invalid argument")
	// ErrInUse is matched by Open's error where a device of the name is
	// open and neither lost nor closing, or another Open of the name is
	// under way: Close that device first, or wait for that Open.
	ErrInUse = errors.New("rig: device name in use")
)

// closedError is the error of calls and waits on a device after its
// Close: it names the device and matches ErrClosed. A device makes its one
// when it opens, so that returning it allocates nothing.
type closedError struct{ name string }

func (e *closedError) Error() string { return "rig: device " + e.name + " closed" }
func (e *closedError) Unwrap() error { return ErrClosed }

// LostError is the error of a lost device.
type LostError struct {
	// Device is the device's name.
	Device string
	// Cause says why rig lost it: the driver's fault, "no progress for n
	// ms", a fault of another device of its fault domain, or work of the
	// device that waits on a point of another device that the other
	// device, lost or closed, will never reach (the cause names that
	// device and its error).
	Cause string
	// Fault is the driver's fault, where one lost the device.
	Fault *device.Fault
	// Reached is a value the device's word held when the loss happened:
	// the value the fault states (device.Fault.Reached), or else the
	// word's value when rig learned of the loss, but, where a driver
	// answered a Submit or Commit Failed, not past the last value
	// committed before it. Every value up to it completed. A wait on a
	// later point returns the loss even once the word passes it, since
	// drivers raise the word past failed work.
	Reached uint64

	// more holds the lines the driver read after the loss
	// (device.FaultReader).
	more atomic.Pointer[[]string]
}

// Detail returns the fault's detail lines: those of the driver's fault,
// then those the driver read after the loss was reported
// (device.FaultReader), which are there once the device's Done is closed,
// and may be earlier.
func (e *LostError) Detail() []string {
	var lines []string
	if e.Fault != nil {
		lines = append(lines, e.Fault.Detail...)
	}
	if m := e.more.Load(); m != nil {
		lines = append(lines, *m...)
	}
	return lines
}

// Error names the device and the cause.
func (e *LostError) Error() string { return fmt.Sprintf("rig: device %s lost: %s", e.Device, e.Cause) }

// Is matches ErrLost.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap returns the driver's fault, if any.
func (e *LostError) Unwrap() error {
	if e.Fault == nil {
		return nil
	}
	return e.Fault
}

// Format prints the cause with %v, and the detail lines too with %+v
// (Detail).
func (e *LostError) Format(s fmt.State, verb rune) {
	_, _ = fmt.Fprint(s, e.Error())
	if verb == 'v' && s.Flag('+') {
		for _, l := range e.Detail() {
			_, _ = fmt.Fprint(s, "\n\t", l)
		}
	}
}

// OutOfMemoryError is the error of an allocation that reclamation could not
// serve.
type OutOfMemoryError struct {
	// Device is the device's name.
	Device string
	// What was asked for, such as "40960 bytes of Device memory".
	What string
	// Lacking is how many bytes were missing after the last round, or,
	// where no round ran, by how many the request exceeds the most the
	// device could give.
	Lacking int64

	// atOnce is true where no round ran: no reclamation could serve the
	// request.
	atOnce bool
}

// Error names the device, what was asked for and the bytes lacked.
func (e *OutOfMemoryError) Error() string {
	if e.atOnce {
		return fmt.Sprintf("rig: device %s out of memory for %s: %d bytes lacking, more than reclamation can give (no round run)", e.Device, e.What, e.Lacking)
	}
	return fmt.Sprintf("rig: device %s out of memory for %s: %d bytes lacking after %d rounds of reclamation", e.Device, e.What, e.Lacking, reclaim.Rounds)
}

// Is matches ErrOutOfMemory.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// RefusalError says that a device never runs a part of a submission.
type RefusalError struct {
	// Device is the device's name.
	Device string
	// Part is the index of the refused part, -1 for the whole submission.
	Part int
	// Kind is the refused part's kind: Copy, CopyRows, FillBytes,
	// FillRows, FillUint32 and FillFloat32 make copies (device.CopyRows),
	// Fill a fill by a function, Words words, and Kernel and Launch
	// launches.
	Kind device.PartKind
	// Filling is true where the refused copy fills (FillBytes, FillRows,
	// FillUint32, FillFloat32): Error names it a fill of rows.
	Filling bool
	// Reason is the driver's reason.
	Reason string
}

// Error names the device, the part and the driver's reason.
func (e *RefusalError) Error() string {
	if e.Part < 0 {
		return fmt.Sprintf("rig: device %s refuses the submission: %s", e.Device, e.Reason)
	}
	kind := e.Kind.String()
	if e.Filling && e.Kind == device.CopyRows {
		kind = "fill of rows"
	}
	return fmt.Sprintf("rig: device %s refuses part %d (%s): %s", e.Device, e.Part, kind, e.Reason)
}

// Is matches ErrRefused.
func (e *RefusalError) Is(target error) bool { return target == ErrRefused }
