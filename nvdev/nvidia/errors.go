package nvidia

import (
	"errors"
	"fmt"
	"syscall"
)

// The two kinds of refusal. Every *RMError is one
// of them: errors.Is(err, ErrLacking) holds where the RM or the kernel lacked
// memory or another resource the call takes, and errors.Is(err, ErrRefused)
// for any other refusal.
var (
	ErrLacking = errors.New("nvidia: lacking memory or resources")
	ErrRefused = errors.New("nvidia: refused")
)

// ErrClosed matches the answer of a path's calls that make or map memory,
// register a channel or read the GPU's timer after its Stop or Close.
var ErrClosed = errors.New("nvidia: path stopped or closed")

// StatusName is the RM's name of status, such as "NV_ERR_NO_MEMORY", or
// its number in hex where nvstatuscodes.h of release 580 has no name for it.
func StatusName(status uint32) string {
	if n, ok := statusNames[status]; ok {
		return n
	}
	return fmt.Sprintf("NV_STATUS(0x%x)", status)
}

// RMError is the refusal of one call of NVIDIA's kernel driver: the RM's
// status word in the call's parameters, or the ioctl's own failure.
type RMError struct {
	// Call names the call, such as "RM_ALLOC HOPPER_CHANNEL_GPFIFO_A under
	// 0xcaf00002".
	Call string
	// Status is the RM's status (nvstatuscodes.h), or 0 where the ioctl
	// itself failed.
	Status uint32
	// Errno is the ioctl's failure, or 0 where the RM returned with Status.
	Errno syscall.Errno
}

// Error names the call and the RM's status, or the ioctl's errno where
// the RM answered no status.
func (e *RMError) Error() string {
	if e.Status == StatusOK {
		return fmt.Sprintf("nvidia: %s: ioctl: %v", e.Call, e.Errno)
	}
	return fmt.Sprintf("nvidia: %s: %s (0x%x)", e.Call, StatusName(e.Status), e.Status)
}

// Name is the status's name, or the errno's where the ioctl failed.
func (e *RMError) Name() string {
	if e.Status == StatusOK {
		return e.Errno.Error()
	}
	return StatusName(e.Status)
}

// Lacking reports whether the call failed for want of memory or another
// resource: NV_ERR_NO_MEMORY, NV_ERR_INSUFFICIENT_RESOURCES, or ENOMEM.
func (e *RMError) Lacking() bool {
	switch {
	case e.Status == StatusNoMemory, e.Status == StatusInsufficientResources:
		return true
	case e.Status == StatusOK && e.Errno == syscall.ENOMEM:
		return true
	}
	return false
}

// Fatal reports whether the answer says that the GPU is lost or must be
// reset, so that no later call can succeed: a fault rather than a refusal.
func (e *RMError) Fatal() bool {
	switch e.Status {
	case StatusGPUIsLost, StatusGPUInFullchipReset, StatusResetRequired:
		return true
	case StatusOK:
		// EIO and ENODEV: the driver lost the GPU or the file's state.
		return e.Errno == syscall.EIO || e.Errno == syscall.ENODEV
	}
	return false
}

// Is returns errors.Is for ErrLacking and ErrRefused.
func (e *RMError) Is(target error) bool {
	switch target {
	case ErrLacking:
		return e.Lacking()
	case ErrRefused:
		return !e.Lacking()
	}
	return false
}

// AsRMError returns the *RMError err wraps, if any.
func AsRMError(err error) (*RMError, bool) {
	var e *RMError
	ok := errors.As(err, &e)
	return e, ok
}
