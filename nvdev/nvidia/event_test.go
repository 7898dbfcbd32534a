package nvidia

import (
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"golang.org/x/sys/unix"
)

// eventFake is a fake of the kernel driver for an event's calls: it
// records them, and returns status to the call numbered failAt.
type eventFake struct {
	ctl    int
	calls  []string
	fds    []int
	params EventAllocParams
	parent Handle
	os     allocOSEventParams
	failAt int
	status uint32
}

func (f *eventFake) ioctl(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	nr, size := req&0xff, (req>>16)&0x3fff
	var name string
	var st *uint32
	switch nr {
	case escAllocOSEvent, escFreeOSEvent:
		if size != 16 {
			return syscall.EINVAL
		}
		p := (*allocOSEventParams)(arg)
		name, st = "ALLOC_OS_EVENT", &p.Status
		if nr == escFreeOSEvent {
			name = "FREE_OS_EVENT"
		} else {
			f.os = *p
		}
	case escRMAlloc:
		a := (*rmAllocParams)(arg)
		name, st = "RM_ALLOC", &a.Status
		f.params = *(*EventAllocParams)(ptrAt(uintptr(a.AllocParms)))
		f.parent = a.ObjectParent
		a.ObjectNew = 0xe0e0
	case escRMFree:
		a := (*rmFreeParams)(arg)
		name, st = "RM_FREE", &a.Status
	default:
		return syscall.ENOTTY
	}
	f.calls = append(f.calls, name)
	f.fds = append(f.fds, fd)
	if len(f.calls) == f.failAt {
		*st = f.status
	}
	return 0
}

// eventPipe is an event on the read end of a pipe, whose write end it
// returns.
func eventPipe(t *testing.T, f *eventFake) (*Event, int, error) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(p[1]) })
	r := rm{conn: conn{ioctl: f.ioctl, sink: &faultSink{}}, ctl: f.ctl, client: 0xc1d00001}
	e, err := openEvent(r, p[0], 0xde, 0x5d, NotifierGraphics)
	return e, p[1], err
}

func TestEventSequence(t *testing.T) {
	f := &eventFake{ctl: 42}
	e, _, err := eventPipe(t, f)
	if err != nil {
		t.Fatal(err)
	}
	fd := e.fd
	if got, want := f.calls, []string{"ALLOC_OS_EVENT", "RM_ALLOC"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if f.fds[0] != fd || f.fds[1] != 42 {
		t.Errorf("ALLOC_OS_EVENT on %d and RM_ALLOC on %d, want %d and 42", f.fds[0], f.fds[1], fd)
	}
	if f.os != (allocOSEventParams{Client: 0xc1d00001, Device: 0xde, FD: uint32(fd)}) {
		t.Errorf("ALLOC_OS_EVENT block %+v", f.os)
	}
	want := EventAllocParams{ParentClient: 0xc1d00001, SrcResource: 0x5d, Class: ClassEventOSEvent,
		NotifyIndex: 12 | 0x08000000 | 0x10000000, Data: uint64(fd)}
	if f.params != want || f.parent != 0x5d {
		t.Errorf("event object %+v under 0x%x, want %+v under 0x5d", f.params, f.parent, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.calls[2:], []string{"RM_FREE", "FREE_OS_EVENT"}; !slices.Equal(got, want) {
		t.Errorf("close's calls %v, want %v", got, want)
	}
	if unix.Close(fd) == nil {
		t.Errorf("close left the file open")
	}
	if err := e.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := e.Wait(time.Millisecond); err == nil {
		t.Errorf("wait on a closed event answered no error")
	}
}

func TestEventRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		at    int
		calls []string
	}{
		{"os event", 1, []string{"ALLOC_OS_EVENT"}},
		{"event object", 2, []string{"ALLOC_OS_EVENT", "RM_ALLOC", "FREE_OS_EVENT"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &eventFake{ctl: 42, failAt: c.at, status: 0x1f}
			e, _, err := eventPipe(t, f)
			if err == nil || e != nil {
				t.Fatalf("answered %v, %v; want a refusal", e, err)
			}
			if !errors.Is(err, ErrRefused) {
				t.Errorf("%v is not a refusal", err)
			}
			if !slices.Equal(f.calls, c.calls) {
				t.Errorf("calls %v, want %v", f.calls, c.calls)
			}
			if unix.Close(f.fds[0]) == nil {
				t.Errorf("the refused event left its file open")
			}
		})
	}
}

func TestEventWait(t *testing.T) {
	e, w, err := eventPipe(t, &eventFake{ctl: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if ok, err := e.Wait(time.Millisecond); ok || err != nil {
		t.Fatalf("wait with nothing raised answered %v, %v", ok, err)
	}
	if _, err := unix.Write(w, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.Wait(time.Hour); !ok || err != nil {
		t.Fatalf("wait with the file readable answered %v, %v", ok, err)
	}
	e.poll = func(fds []unix.PollFd, _ *unix.Timespec) (int, error) { return 0, unix.EINTR }
	if ok, err := e.Wait(time.Hour); ok || err != nil {
		t.Errorf("interrupted wait answered %v, %v; want false, nil", ok, err)
	}
	e.poll = func(fds []unix.PollFd, _ *unix.Timespec) (int, error) {
		fds[0].Revents = unix.POLLHUP
		return 1, nil
	}
	_, err = e.Wait(time.Hour)
	if _, ok := device.AsFault(err); !ok {
		t.Errorf("a lost GPU answered %v, not a fault", err)
	}
	e.poll = func(fds []unix.PollFd, _ *unix.Timespec) (int, error) { return 0, unix.EBADF }
	if _, err = e.Wait(time.Hour); err == nil {
		t.Errorf("a failed poll answered no error")
	}
	e.poll = ppoll
	if a := testing.AllocsPerRun(100, func() { _, _ = e.Wait(0) }); a != 0 {
		t.Errorf("Wait allocates %v times", a)
	}
}
