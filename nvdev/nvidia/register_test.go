package nvidia

import (
	"errors"
	"github.com/rig-go/rig/device"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// regFake answers UVM's channel registrations over peerFake, records the
// channels registered, and runs during, once, inside the next
// UVM_REGISTER_CHANNEL.
type regFake struct {
	*peerFake
	during     func()
	registered map[Handle]bool
	calls      []string
}

func (f *regFake) ioctl(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	if fd == 43 {
		switch req {
		case uvmRegisterChannel:
			p := (*uvmRegisterChannelParams)(arg)
			f.calls = append(f.calls, "UVM_REGISTER_CHANNEL")
			f.registered[p.Channel] = true
			if d := f.during; d != nil {
				f.during = nil
				d()
			}
			return 0
		case uvmUnregisterChannel:
			p := (*uvmUnregisterChannelParams)(arg)
			f.calls = append(f.calls, "UVM_UNREGISTER_CHANNEL")
			if !f.registered[p.Channel] {
				p.RMStatus = StatusInvalidArgument
				return 0
			}
			delete(f.registered, p.Channel)
			return 0
		}
	}
	return f.peerFake.ioctl(fd, req, arg)
}

// regRig is a path on regFake with the host-visible reservation made and
// an RM, whose teardown reaches no file: another path holds the GPU and
// the process's client.
func regRig(t *testing.T) (*regFake, *Client) {
	a := heldRig(t)
	f := &regFake{peerFake: &peerFake{t: t, statuses: map[string][]uint32{}}, registered: map[Handle]bool{}}
	a.r.ioctl = f.ioctl
	a.u.conn = a.r.conn
	a.rm = newRM(a.r, 580, nil)
	a.gpuState.refs++
	a.sys.refs = 2
	return f, a
}

// A channel Register registers while Stop runs is unregistered before
// Register returns, and its addresses go back: Stop took its list of
// channels before Register recorded the channel.
func TestRegisterDuringStop(t *testing.T) {
	f, a := regRig(t)
	const ch = Handle(0xc0de0001)
	free := a.sys.host.freeBytes()
	f.during = func() {
		if err := a.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}
	if err := a.Register(ch); !errors.Is(err, errStopped) {
		t.Errorf("Register during Stop answered %v, want %v", err, errStopped)
	}
	if f.registered[ch] {
		t.Errorf("the channel is still registered with UVM after Stop (calls %v)", f.calls)
	}
	if len(a.channels) != 0 {
		t.Errorf("the path still lists channels %v after Stop", a.channels)
	}
	if got := a.sys.host.freeBytes(); got != free {
		t.Errorf("host-visible pool has %d bytes free after Stop, %d before Register", got, free)
	}
}

// A channel Register registers while Close runs holds off the path's
// release until its registration is undone.
func TestRegisterDuringClose(t *testing.T) {
	f, a := regRig(t)
	const ch = Handle(0xc0de0002)
	free := a.sys.host.freeBytes()
	f.during = func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		a.mu.Lock()
		released := a.released
		a.mu.Unlock()
		if released {
			t.Error("Close released the path while a Register was in flight")
		}
	}
	if err := a.Register(ch); !errors.Is(err, errStopped) {
		t.Errorf("Register during Close answered %v, want %v", err, errStopped)
	}
	if f.registered[ch] {
		t.Errorf("the channel is still registered with UVM after Close (calls %v)", f.calls)
	}
	if !a.released {
		t.Error("the path is not released after Close and the Register in flight")
	}
	if got := a.sys.host.freeBytes(); got != free {
		t.Errorf("host-visible pool has %d bytes free after Close, %d before Register", got, free)
	}
}

// Stop ends the registrations of channels registered before it, and
// Register refuses after it.
func TestRegisterThenStop(t *testing.T) {
	f, a := regRig(t)
	const ch = Handle(0xc0de0003)
	free := a.sys.host.freeBytes()
	if err := a.Register(ch); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if f.registered[ch] || len(a.channels) != 0 || a.sys.host.freeBytes() != free {
		t.Errorf("after Stop: registered %v, channels %v, %d bytes free of %d", f.registered, a.channels, a.sys.host.freeBytes(), free)
	}
	if err := a.Register(ch + 1); !errors.Is(err, errStopped) || !errors.Is(err, ErrClosed) {
		t.Errorf("Register after Stop answered %v, want %v, which matches ErrClosed", err, errStopped)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(device.PinnedMemory, 4096); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close answered %v, want an error matching ErrClosed", err)
	}
}

// TestStopBesideUnregister: an Unregister of a channel that Stop is
// unregistering at the same time (any goroutine may call the path's
// methods) waits for Stop's, rather than ask UVM a second time, and Stop
// answers nil: the channel was unregistered and nothing of the device
// runs.
func TestStopBesideUnregister(t *testing.T) {
	f, a := regRig(t)
	const ch = Handle(0xc0de00a1)
	free := a.sys.host.freeBytes()
	if err := a.Register(ch); err != nil {
		t.Fatal(err)
	}
	inner := f.ioctl
	var unregisters atomic.Int32
	devErr := make(chan error, 1)
	a.r.ioctl = func(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
		if fd == 43 && req == uvmUnregisterChannel && unregisters.Add(1) == 1 {
			// The device's own Unregister of the channel comes while
			// Stop's is in UVM.
			go func() { devErr <- a.Unregister(ch) }()
			time.Sleep(50 * time.Millisecond)
		}
		return inner(fd, req, arg)
	}
	a.u.conn = a.r.conn
	err := a.Stop()
	derr := <-devErr
	if n := unregisters.Load(); n != 1 {
		t.Errorf("UVM was asked %d times to unregister the channel", n)
	}
	if f.registered[ch] || len(a.channels) != 0 || a.sys.host.freeBytes() != free {
		t.Fatalf("after Stop: registered %v, channels %v, %x bytes free of %x", f.registered, a.channels, a.sys.host.freeBytes(), free)
	}
	if err != nil {
		t.Errorf("Stop with the channel unregistered and nothing left running: %v", err)
	}
	if !errors.Is(derr, errNotRegistered) {
		t.Errorf("the device's Unregister after Stop's: %v, want an error saying the channel is not registered", derr)
	}
}

// A Register of a channel that another Register is registering is
// refused: UVM registers the channel once, and once it is unregistered
// every address its registration took is back in the pool.
func TestRegisterBesideRegister(t *testing.T) {
	f, a := regRig(t)
	const ch = Handle(0xc0de0005)
	free := a.sys.host.freeBytes()
	var beside error
	f.during = func() { beside = a.Register(ch) }
	if err := a.Register(ch); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if beside == nil {
		t.Error("a Register of the channel beside another answered nil")
	}
	n := 0
	for _, c := range f.calls {
		if c == "UVM_REGISTER_CHANNEL" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("UVM registered the channel %d times (calls %v), want once", n, f.calls)
	}
	if err := a.Unregister(ch); err != nil {
		t.Fatalf("Unregister: %v", err)
	}
	if got := a.sys.host.freeBytes(); got != free {
		t.Errorf("host-visible pool has %d bytes free after Unregister, %d before the Registers", got, free)
	}
	if err := a.Register(ch); err != nil {
		t.Errorf("Register after Unregister: %v", err)
	}
}
