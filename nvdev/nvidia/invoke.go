package nvidia

import (
	"fmt"
	"math"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// ioctlFunc performs one ioctl of NVIDIA's kernel driver: request req on
// the file fd with the parameter block at arg. Tests replace the real one
// with a fake driver.
type ioctlFunc func(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno

// faultSink keeps the first fatal answer (RMError.Fatal) a path's calls
// met, for Check.
type faultSink struct{ first atomic.Pointer[RMError] }

func (s *faultSink) record(e *RMError) { s.first.CompareAndSwap(nil, e) }

// load is the recorded answer, or nil.
func (s *faultSink) load() *RMError { return s.first.Load() }

// conn is the choke point of the package: every ioctl of NVIDIA's kernel
// driver goes through its invoke, which checks the ioctl's errno and the
// RM's status word in the parameters, once, and returns a *RMError that
// names the call. A fatal answer is recorded in sink.
type conn struct {
	ioctl ioctlFunc
	sink  *faultSink
}

// invoke performs request req on fd with the block at arg, whose RM status
// word is at status (nil for an ioctl without one). call names the call for
// the error; it runs only on failure.
func (c conn) invoke(call func() string, fd int, req uintptr, arg unsafe.Pointer, status *uint32) error {
	errno := c.ioctl(fd, req, arg)
	var e *RMError
	switch {
	case errno != 0:
		e = &RMError{Call: call(), Errno: errno}
	case status != nil && *status != StatusOK:
		e = &RMError{Call: call(), Status: *status}
	default:
		return nil
	}
	if e.Fatal() && c.sink != nil {
		c.sink.record(e)
	}
	return e
}

// heapBytes is n zero bytes on the Go heap, which the collector never
// moves: the home of parameter blocks that another block points to. The
// stack is no place for them, since it moves as it grows, and the kernel
// holds only the address the block stored.
//
//go:noinline
func heapBytes(n int) []byte { return make([]byte, n) }

// minParamBytes is the least size of the copy of an allocation's
// parameters. The RM copies in the size it registered for the class,
// whatever the caller says, so a short block reads zeros rather than
// whatever followed it.
const minParamBytes = 512

// bytesOf is the memory of *p as bytes.
func bytesOf[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// Bytes is the memory of the parameter block *p, for RM.Alloc and
// RM.Control, which read and write it in place.
func Bytes[T any](p *T) []byte { return bytesOf(p) }

// addr is the address of b's first byte, or 0 for an empty b.
func addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// rm is a conn bound to one client on /dev/nvidiactl: the RM calls.
type rm struct {
	conn
	ctl    int    // /dev/nvidiactl
	client Handle // the root client
}

// alloc makes an object of class under parent with params (NV_ESC_RM_ALLOC,
// NVOS64). It copies params to the heap and back.
func (r rm) alloc(parent Handle, class uint32, params []byte) (Handle, error) {
	return r.allocNamed(parent, 0, class, params)
}

// allocNamed is alloc with the new object's handle chosen by the caller, or
// by the RM where name is 0.
func (r rm) allocNamed(parent, name Handle, class uint32, params []byte) (Handle, error) {
	if uint64(len(params)) > math.MaxUint32 {
		return 0, fmt.Errorf("nvidia: RM_ALLOC %s under 0x%x: %d bytes of parameters, past the 2^32 the RM counts", ClassName(class), parent, len(params))
	}
	var buf []byte
	if params != nil {
		buf = heapBytes(max(len(params), minParamBytes))
		copy(buf, params)
	}
	a := rmAllocParams{
		Root:         r.client,
		ObjectParent: parent,
		ObjectNew:    name,
		Class:        class,
		AllocParms:   addr(buf),
		ParamsSize:   uint32(len(params)),
	}
	err := r.invoke(func() string {
		return fmt.Sprintf("RM_ALLOC %s under 0x%x", ClassName(class), parent)
	}, r.ctl, escape(escRMAlloc, unsafe.Sizeof(a)), unsafe.Pointer(&a), &a.Status)
	if params != nil {
		copy(params, buf)
	}
	if err != nil {
		return 0, err
	}
	return a.ObjectNew, nil
}

// free frees object and every object under it (NV_ESC_RM_FREE, NVOS00).
func (r rm) free(parent, object Handle) error {
	f := rmFreeParams{Root: r.client, ObjectParent: parent, ObjectOld: object}
	return r.invoke(func() string {
		return fmt.Sprintf("RM_FREE 0x%x under 0x%x", object, parent)
	}, r.ctl, escape(escRMFree, unsafe.Sizeof(f)), unsafe.Pointer(&f), &f.Status)
}

// control sends the command cmd to object with params (NV_ESC_RM_CONTROL,
// NVOS54), whose size must be the command's.
func (r rm) control(object Handle, cmd uint32, params []byte) error {
	if uint64(len(params)) > math.MaxUint32 {
		return fmt.Errorf("nvidia: RM_CONTROL 0x%08x on 0x%x: %d bytes of parameters, past the 2^32 the RM counts", cmd, object, len(params))
	}
	var buf []byte
	if len(params) > 0 {
		buf = heapBytes(len(params))
		copy(buf, params)
	}
	c := rmControlParams{
		Client:     r.client,
		Object:     object,
		Cmd:        cmd,
		Params:     addr(buf),
		ParamsSize: uint32(len(params)),
	}
	err := r.invoke(func() string {
		return fmt.Sprintf("RM_CONTROL 0x%08x on 0x%x", cmd, object)
	}, r.ctl, escape(escRMControl, unsafe.Sizeof(c)), unsafe.Pointer(&c), &c.Status)
	copy(params, buf)
	return err
}

// controlOf is control with the typed block *p.
func controlOf[T any](r rm, object Handle, cmd uint32, p *T) error {
	return r.control(object, cmd, bytesOf(p))
}

// allocOf is alloc with the typed block *p.
func allocOf[T any](r rm, parent Handle, class uint32, p *T) (Handle, error) {
	return r.alloc(parent, class, bytesOf(p))
}

// uvm is a conn bound to /dev/nvidia-uvm.
type uvm struct {
	conn
	fd int
}

// call sends the UVM command cmd with the block *p, whose status is at
// *status.
func uvmCall[T any](u uvm, name string, cmd uintptr, p *T, status *uint32) error {
	return u.invoke(func() string { return name }, u.fd, cmd, unsafe.Pointer(p), status)
}
