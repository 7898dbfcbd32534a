//go:build linux && !(386 || arm || mips || mipsle)

package nvidia

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Event is a file of /dev/nvidiactl that becomes readable when the GPU
// raises the non-stall interrupt of an engine: Wait blocks on it. One
// goroutine at a time may call Wait; Close may be called from any
// goroutine once, and ends Wait's use of the file.
type Event struct {
	r         rm
	fd        int
	subdevice Handle
	device    Handle
	obj       Handle

	// poll waits on the file; tests replace it.
	poll func(fds []unix.PollFd, ts *unix.Timespec) (int, error)
	pfd  [1]unix.PollFd
	ts   unix.Timespec

	mu     sync.RWMutex // held by Wait as it polls (read) and by Close (write)
	closed bool
}

// NonStallEvent makes an event for the non-stall interrupts of the engine
// whose notifier index on the subdevice is notifier (NotifierGraphics for
// the channels of the graphics engine's groups).
func (p *Client) NonStallEvent(notifier uint32) (*Event, error) {
	fd, err := openDevice("/dev/nvidiactl")
	if err != nil {
		return nil, err
	}
	return openEvent(p.r, fd, p.device, p.subdevice, notifier)
}

// openEvent makes the event on the file fd, which it owns from then on:
// it registers fd as an OS event of r's client, then makes the event
// object under subdevice.
func openEvent(r rm, fd int, device, subdevice Handle, notifier uint32) (_ *Event, err error) {
	e := &Event{r: r, fd: fd, subdevice: subdevice, device: device, poll: ppoll}
	e.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI}
	registered := false
	defer func() {
		if err == nil {
			return
		}
		if registered {
			_ = e.freeOSEvent()
		}
		_ = unix.Close(fd)
	}()
	a := allocOSEventParams{Client: r.client, Device: device, FD: uint32(fd)}
	if err = r.invoke(func() string { return "NV_ESC_ALLOC_OS_EVENT" }, fd,
		escape(escAllocOSEvent, unsafe.Sizeof(a)), unsafe.Pointer(&a), &a.Status); err != nil {
		return nil, asFault(err)
	}
	registered = true
	ep := EventAllocParams{
		ParentClient: r.client,
		SrcResource:  subdevice,
		Class:        ClassEventOSEvent,
		NotifyIndex:  notifier&0xffff | eventNonStall | eventWithoutData,
		Data:         uint64(fd),
	}
	if e.obj, err = r.alloc(subdevice, ClassEventOSEvent, bytesOf(&ep)); err != nil {
		return nil, asFault(err)
	}
	return e, nil
}

// ppoll is the ppoll system call.
func ppoll(fds []unix.PollFd, ts *unix.Timespec) (int, error) {
	return unix.Ppoll(fds, ts, nil)
}

// Wait blocks until the engine raised its non-stall interrupt since the
// last Wait, or for at most timeout, and reports whether it did. A signal
// may end it early, reporting false. It returns an error once the GPU is
// lost or the event closed.
func (e *Event) Wait(timeout time.Duration) (bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return false, errors.New("nvidia: wait on a closed event")
	}
	e.ts = unix.NsecToTimespec(max(int64(timeout), 0))
	e.pfd[0].Revents = 0
	n, err := e.poll(e.pfd[:], &e.ts)
	switch {
	case err == unix.EINTR:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("nvidia: poll of the non-stall event: %w", err)
	case n == 0:
		return false, nil
	}
	switch ev := e.pfd[0].Revents; {
	case ev&unix.POLLHUP != 0:
		return false, asFault(&RMError{Call: "poll of the non-stall event", Status: StatusGPUIsLost})
	case ev&(unix.POLLERR|unix.POLLNVAL) != 0:
		return false, fmt.Errorf("nvidia: poll of the non-stall event: revents 0x%x", ev)
	}
	return true, nil
}

// freeOSEvent unregisters the file as an OS event.
func (e *Event) freeOSEvent() error {
	f := allocOSEventParams{Client: e.r.client, Device: e.device, FD: uint32(e.fd)}
	return e.r.invoke(func() string { return "NV_ESC_FREE_OS_EVENT" }, e.fd,
		escape(escFreeOSEvent, unsafe.Sizeof(f)), unsafe.Pointer(&f), &f.Status)
}

// Close frees the event object, unregisters the OS event and closes the
// file. It waits for a Wait in flight, which returns within its timeout.
func (e *Event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	if e.obj != 0 {
		if err := e.r.free(e.subdevice, e.obj); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.freeOSEvent(); err != nil {
		errs = append(errs, err)
	}
	if err := unix.Close(e.fd); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
