package nvidia

import (
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// fakeRM is a fake of NVIDIA's kernel driver behind the invoker: it checks
// each escape's number against its block's size, names objects, and returns
// the controls the tests send.
type fakeRM struct {
	t       *testing.T
	next    Handle
	objs    map[Handle]uint32 // class of each object
	status  uint32            // the status the next call answers, then 0
	errno   syscall.Errno     // the errno the next call answers, then 0
	calls   []uint32          // classes allocated and commands sent
	lastLen uint32            // the last control's paramsSize
}

func newFakeRM(t *testing.T) *fakeRM {
	return &fakeRM{t: t, next: 0xcaf00000, objs: map[Handle]uint32{0xc1d00001: ClassRootClient}}
}

func (f *fakeRM) conn(sink *faultSink) rm {
	return rm{conn: conn{ioctl: f.ioctl, sink: sink}, ctl: 42, client: 0xc1d00001}
}

// mem is the bytes at a user address the fake was handed.
func mem(a uint64, n uint32) []byte {
	return unsafe.Slice((*byte)(ptrAt(uintptr(a))), n)
}

func (f *fakeRM) ioctl(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	if fd != 42 {
		return syscall.EBADF
	}
	if e := f.errno; e != 0 {
		f.errno = 0
		return e
	}
	nr, size := req&0xff, (req>>16)&0x3fff
	if req>>30 != 3 || (req>>8)&0xff != 'F' {
		return syscall.ENOTTY
	}
	st := f.status
	f.status = 0
	switch nr {
	case escRMAlloc:
		if size != unsafe.Sizeof(rmAllocParams{}) {
			return syscall.EINVAL
		}
		a := (*rmAllocParams)(arg)
		f.calls = append(f.calls, a.Class)
		if st != 0 {
			a.Status = st
			return 0
		}
		if _, ok := f.objs[a.ObjectParent]; !ok {
			a.Status = StatusInvalidObjectParent
			return 0
		}
		if a.Class == ClassChannelGroup && a.ParamsSize > 0 {
			// The RM writes back what it keeps of the parameters.
			p := (*ChannelGroupAllocParams)(unsafe.Pointer(&mem(a.AllocParms, a.ParamsSize)[0]))
			p.ObjectEccError = 0x1234
		}
		f.next++
		f.objs[f.next] = a.Class
		a.ObjectNew = f.next
	case escRMFree:
		if size != unsafe.Sizeof(rmFreeParams{}) {
			return syscall.EINVAL
		}
		p := (*rmFreeParams)(arg)
		if st != 0 {
			p.Status = st
			return 0
		}
		if _, ok := f.objs[p.ObjectOld]; !ok {
			p.Status = StatusInvalidObjectHandle
			return 0
		}
		delete(f.objs, p.ObjectOld)
	case escRMControl:
		if size != unsafe.Sizeof(rmControlParams{}) {
			return syscall.EINVAL
		}
		c := (*rmControlParams)(arg)
		f.calls = append(f.calls, c.Cmd)
		f.lastLen = c.ParamsSize
		if st != 0 {
			c.Status = st
			return 0
		}
		b := mem(c.Params, c.ParamsSize)
		switch c.Cmd {
		case CtrlGetWorkSubmitToken:
			if c.ParamsSize != 4 {
				c.Status = StatusInvalidParamStruct
				return 0
			}
			(*WorkSubmitTokenParams)(unsafe.Pointer(&b[0])).WorkSubmitToken = 0x77
		case CtrlChannelGroupSchedule:
			if c.ParamsSize != 3 || b[0] != 1 {
				c.Status = StatusInvalidArgument
			}
		case CtrlPerfBoost:
			p := (*PerfBoostParams)(unsafe.Pointer(&b[0]))
			if c.ParamsSize != 8 || p.Flags != 0x52 || p.Duration != 0xffffffff {
				c.Status = StatusInvalidArgument
			}
		case CtrlDebugReadMMUFaultInfo:
			if c.ParamsSize != 72 {
				c.Status = StatusInvalidParamStruct
				return 0
			}
			p := (*MMUFaultInfoParams)(unsafe.Pointer(&b[0]))
			p.Count = 1
			p.Entries[0].FaultAddress = 0xdead000
		default:
			c.Status = StatusNotSupported
		}
	default:
		return syscall.ENOTTY
	}
	return 0
}

func TestInvokeAnswers(t *testing.T) {
	f := newFakeRM(t)
	var sink faultSink
	r := f.conn(&sink)
	dev, err := r.alloc(r.client, ClassDevice, bytesOf(&DeviceAllocParams{}))
	if err != nil || dev == 0 {
		t.Fatalf("alloc: %v, %v", dev, err)
	}
	// The RM's status word.
	f.status = StatusNoMemory
	_, err = r.alloc(dev, ClassMemoryLocalUser, bytesOf(&MemoryAllocParams{}))
	e, ok := AsRMError(err)
	if !ok || e.Status != StatusNoMemory || !errors.Is(err, ErrLacking) {
		t.Fatalf("alloc answering NO_MEMORY: %v", err)
	}
	if e.Call != "RM_ALLOC NV01_MEMORY_LOCAL_USER under 0xcaf00001" {
		t.Errorf("call named %q", e.Call)
	}
	// The ioctl's errno.
	f.errno = syscall.ENOMEM
	if _, err := r.alloc(dev, ClassSubdevice, nil); !errors.Is(err, ErrLacking) {
		t.Errorf("ENOMEM: %v", err)
	}
	f.errno = syscall.EINVAL
	if err := r.free(r.client, dev); !errors.Is(err, ErrRefused) {
		t.Errorf("EINVAL: %v", err)
	}
	if sink.load() != nil {
		t.Errorf("a refusal was recorded as fatal: %v", sink.load())
	}
	// A wrong parent.
	if _, err := r.alloc(0xbad, ClassSubdevice, nil); err == nil {
		t.Error("alloc under a missing parent succeeded")
	} else if e, _ := AsRMError(err); e.Status != StatusInvalidObjectParent {
		t.Errorf("alloc under a missing parent: %v", err)
	}
	// A fatal answer is recorded once, the first.
	f.status = StatusGPUIsLost
	if err := r.control(dev, CtrlGetWorkSubmitToken, make([]byte, 4)); err == nil {
		t.Fatal("GPU_IS_LOST passed")
	}
	f.errno = syscall.EIO
	_ = r.control(dev, CtrlGetWorkSubmitToken, make([]byte, 4))
	if e := sink.load(); e == nil || e.Status != StatusGPUIsLost {
		t.Errorf("recorded %v", e)
	}
}

func TestAllocCopiesParams(t *testing.T) {
	f := newFakeRM(t)
	r := f.conn(nil)
	var p ChannelGroupAllocParams
	p.EngineType = EngineGraphics
	if _, err := allocOf(r, r.client, ClassChannelGroup, &p); err != nil {
		t.Fatal(err)
	}
	if p.ObjectEccError != 0x1234 || p.EngineType != EngineGraphics {
		t.Errorf("params after alloc: %+v", p)
	}
}

func TestRMRecord(t *testing.T) {
	f := newFakeRM(t)
	var sink faultSink
	m := newRM(f.conn(&sink), Release, nil)
	if m.Release() != 580 || m.Client() != 0xc1d00001 {
		t.Errorf("release %d client 0x%x", m.Release(), m.Client())
	}
	dev, _ := m.Alloc(m.Client(), ClassDevice, Bytes(&DeviceAllocParams{}))
	tsg, err := m.Alloc(dev, ClassChannelGroup, Bytes(&ChannelGroupAllocParams{EngineType: EngineGraphics}))
	if err != nil {
		t.Fatal(err)
	}
	ch1, _ := m.Alloc(tsg, 0xc86f, Bytes(&ChannelAllocParams{}))
	ch2, _ := m.Alloc(tsg, 0xc86f, Bytes(&ChannelAllocParams{}))
	lone, _ := m.Alloc(dev, 0xc86f, Bytes(&ChannelAllocParams{}))
	if _, err := m.Alloc(ch1, 0xcbc0, nil); err != nil {
		t.Fatal(err)
	}
	got := m.made(ClassChannelGroup, 0xc86f)
	slices.Sort(got)
	if want := []Handle{tsg, lone}; !slices.Equal(got, want) {
		t.Errorf("made: %x, want %x (ch %x %x)", got, want, ch1, ch2)
	}
	if tok, err := m.Token(ch1); err != nil || tok != 0x77 {
		t.Errorf("Token: 0x%x, %v", tok, err)
	}
	if err := m.Schedule(tsg, &ScheduleParams{Enable: 1}); err != nil {
		t.Errorf("Schedule: %v", err)
	}
	if err := m.Boost(dev); err != nil {
		t.Errorf("Boost: %v", err)
	}
	var mf MMUFaultInfoParams
	if err := m.MMUFaults(dev, &mf); err != nil || mf.Count != 1 || mf.Entries[0].FaultAddress != 0xdead000 {
		t.Errorf("MMUFaults: %+v, %v", mf, err)
	}
	var sm SMErrorStatesParams
	if err := m.SMErrors(dev, &sm); !errors.Is(err, ErrRefused) || f.lastLen != 4824 {
		t.Errorf("SMErrors: %v, size %d", err, f.lastLen)
	}
	if err := m.Free(dev, tsg); err != nil {
		t.Fatal(err)
	}
	if got := m.made(ClassChannelGroup, 0xc86f); !slices.Equal(got, []Handle{lone}) {
		t.Errorf("made after freeing the group: %x", got)
	}
	f.status = StatusGPUIsLost
	if _, err := m.Token(lone); !isFault(err) {
		t.Errorf("a lost GPU answered %v", err)
	}
}

// An ioctl on a file of another driver fails with ENOTTY: a refusal.
func TestRealIoctlRefused(t *testing.T) {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDWR, 0)
	if err != nil {
		t.Skip(err)
	}
	defer syscall.Close(fd)
	var sink faultSink
	r := rm{conn: conn{ioctl: sysIoctl, sink: &sink}, ctl: fd, client: 1}
	_, err = r.alloc(0, ClassRootClient, nil)
	e, ok := AsRMError(err)
	if !ok || e.Errno != syscall.ENOTTY || !errors.Is(err, ErrRefused) || e.Fatal() {
		t.Errorf("ioctl on %s: %v", os.DevNull, err)
	}
	if _, ok := device.AsFault(asFault(err)); ok {
		t.Error("a refusal became a fault")
	}
}

// TestOpenRefusesOtherPages: a host whose pages are not of 4 KiB (an
// arm64 kernel of 64 KiB pages) is refused at the system's open, naming
// the pages, before any file is opened.
func TestOpenRefusesOtherPages(t *testing.T) {
	defer func(f func() int) { hostPage = f }(hostPage)
	hostPage = func() int { return 64 << 10 }
	calls := 0
	s, err := openSystem(func(int, uintptr, unsafe.Pointer) syscall.Errno { calls++; return syscall.EINVAL })
	if err == nil {
		_ = s.close()
		t.Fatal("the system opened on a host of 64 KiB pages")
	}
	if !strings.Contains(err.Error(), "65536") || calls != 0 {
		t.Fatalf("open on a host of 64 KiB pages: %v after %d calls, want an error naming the pages and no call", err, calls)
	}
}
