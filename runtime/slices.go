package rig

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// Element is a type whose values are plain bytes of a fixed size: the
// numbers Upload and Download move between Go slices and buffers.
type Element interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Upload copies the elements of src into dst, starting at byte off, and
// returns once they are there. It first waits for the work that uses dst
// (its last write and the reads since), so that no earlier work sees the
// new bytes. Where the host addresses dst (Bytes is not nil) it copies
// directly; otherwise it stages the bytes in Pinned memory and copies them
// with a submission on the device. A cancelled ctx returns ctx.Err(), with
// dst's range left partly written or not at all; it ends the staging too,
// and the rounds of reclamation its allocation may run. Once dst's device
// is closed it returns an error matching ErrClosed, and once it is lost the
// loss, whatever dst's kind of memory; after Free of dst, also a Free while
// it waits, one matching ErrFreed, also for an empty src, which waits for
// nothing. A Free during the copy to host memory gives dst's memory back
// once the copy ended. Where work of another device that uses dst was
// dropped by that device's Close, it returns an error matching ErrClosed
// that names that device.
//
// Where the device is timed and its Observer panics as it sees the staging
// copy, Upload returns the *ObserverPanicError once the copy completed.
//
// Upload is a convenience for setup and tests: it allocates. A hot path
// keeps a Pinned or Mapped buffer and writes its Bytes, or submits its own
// Copy parts. A nil ctx panics.
func Upload[T Element](ctx context.Context, dst *Buffer, off int, src []T) error {
	if ctx == nil {
		panic("rig: Upload with a nil Context")
	}
	b := asBytes(src)
	if err := dst.checkRange("upload", off, len(b)); err != nil {
		return err
	}
	if len(b) == 0 {
		return dst.s.usable()
	}
	if err := dst.waitUses(ctx, true); err != nil {
		return err
	}
	if host := dst.Bytes(); host != nil {
		err := dst.s.hostCopy(func() { copy(host[off:], b) })
		// dst stays reachable until the copy ends: its collection
		// would free the memory, and a driver that unmaps Mapped
		// memory at Free leaves the slice on other bytes.
		runtime.KeepAlive(dst)
		return err
	}
	return dst.stage(ctx, off, b, true)
}

// Download copies bytes of src, starting at byte off, into the elements of
// dst (as many bytes as dst holds), and returns once they are there. It
// first waits for the last work that writes src. Where the host addresses
// src it copies directly; otherwise it stages through Pinned memory, as
// Upload does, and returns the same errors for a closed or lost device or a freed
// buffer, also for an empty dst, and an Observer's panic once the bytes are
// in dst. Download allocates: see Upload for the
// hot path. A nil ctx panics.
func Download[T Element](ctx context.Context, dst []T, src *Buffer, off int) error {
	if ctx == nil {
		panic("rig: Download with a nil Context")
	}
	b := asBytes(dst)
	if err := src.checkRange("download", off, len(b)); err != nil {
		return err
	}
	if len(b) == 0 {
		return src.s.usable()
	}
	if err := src.waitUses(ctx, false); err != nil {
		return err
	}
	if host := src.Bytes(); host != nil {
		err := src.s.hostCopy(func() { copy(b, host[off:off+len(b)]) })
		// src stays reachable until the copy ends, as dst does in
		// Upload: a copy out of memory freed under it reads zeros.
		runtime.KeepAlive(src)
		return err
	}
	return src.stage(ctx, off, b, false)
}

// hostCopyHook, where set, runs just before a copy to or from a buffer's
// host memory: tests' hook.
var hostCopyHook atomic.Pointer[func()]

// hostCopying runs hostCopyHook, where set.
func hostCopying() {
	if h := hostCopyHook.Load(); h != nil {
		(*h)()
	}
}

// hostCopy runs cp, a copy to or from the buffer's host memory, as a
// counted call that reads the region (use): a Free that comes during the
// copy gives the region back only once the copy ended, so that the copy
// never writes bytes that go nowhere, nor reads those a driver's Free puts
// there (nvdev's Mapped memory reads zeros after Free). It returns the
// error waitUses returns where the buffer was freed, or its device closed
// or lost, after waitUses looked, and cp did not run.
func (s *bufState) hostCopy(cp func()) error {
	if err := s.d.begin(); err != nil {
		if cerr := s.closed(); cerr != nil {
			return cerr
		}
		return err
	}
	defer s.d.end()
	if !s.use() {
		return s.freedErr()
	}
	defer s.done()
	hostCopying()
	cp()
	return nil
}

// asBytes is the memory of s as bytes.
func asBytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// checkRange returns an error matching ErrInvalid unless the n bytes at
// off lie in the buffer, or where the buffer is nil (or a zero Buffer).
func (b *Buffer) checkRange(what string, off, n int) error {
	if b == nil || b.s == nil {
		return fmt.Errorf("rig: %s of %d bytes: the buffer is nil: %w", what, n, ErrInvalid)
	}
	if off < 0 || n < 0 || off > b.s.n || n > b.s.n-off {
		return fmt.Errorf("rig: %s of %d bytes at byte %d of a buffer of %d bytes: out of range: %w", what, n, off, b.s.n, ErrInvalid)
	}
	return nil
}

// waitUses waits for the points of the work that uses the buffer: its last
// write, and where writing, the reads since too. It returns an error
// matching ErrClosed where the buffer's device was closed, and the loss
// where it was lost, before the wait or during it, which the close or
// loss ends, also a wait for another device's work; and one matching
// ErrFreed for a buffer of an open device freed before the wait or during
// it, whose memory may have gone back as the wait ended.
func (b *Buffer) waitUses(ctx context.Context, writing bool) error {
	s := b.s
	var fixed [4]Point
	points := fixed[:0]
	if err := s.closed(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.freed {
		s.mu.Unlock()
		return s.freedErr()
	}
	points = append(points, s.lastWrite)
	if writing {
		points = append(points, s.reads...)
	}
	s.mu.Unlock()
	what := func() string { return fmt.Sprintf("a copy to or from a buffer of %d bytes of %s", s.n, s.d.name) }
	for _, p := range points {
		var err error
		if p.d != nil && p.d != s.d {
			// The buffer's device's close or loss ends a wait for
			// another device's work, as its supervisor ends a wait for
			// its own.
			err = s.d.waitOther(ctx, p, what())
		} else if err = p.Wait(ctx); err != nil {
			err = closedWait(what(), p, err)
		}
		if err != nil {
			if cerr := s.closed(); cerr != nil {
				return cerr
			}
			return err
		}
	}
	return s.usable()
}

// closedWait is the error of what, which waited for point p of another
// device where the wait answered err: where p's device was closed before
// it reached p, the error names that device and still matches ErrClosed,
// so that it is not taken for a close of the device of what (a loss names
// its device itself).
func closedWait(what string, p Point, err error) error {
	if p.d == nil || !errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("rig: %s waits for value %d of device %s, which was closed before it reached it: %w", what, p.v, p.d.name, err)
}

// usable returns the error of a copy to or from the buffer that its state
// refuses, as waitUses does, without a wait: an error matching ErrClosed
// where its device was closed, one matching ErrFreed where it was freed,
// and nil otherwise.
func (s *bufState) usable() error {
	if err := s.closed(); err != nil {
		return err
	}
	s.mu.Lock()
	freed := s.freed
	s.mu.Unlock()
	if freed {
		return s.freedErr()
	}
	return nil
}

// freedErr is the error of a copy to or from the buffer once freed: the
// close of its device, where it closed after the caller's look at it,
// since the reaping marks the device's buffers freed, and one matching
// ErrFreed otherwise.
func (s *bufState) freedErr() error {
	if err := s.closed(); err != nil {
		return err
	}
	return fmt.Errorf("rig: a copy to or from a buffer of %d bytes of device %s, freed before the copy: %w", s.n, s.d.name, ErrFreed)
}

// closed returns an error matching ErrClosed where the buffer's device was
// closed: its buffers are given back, and no copy to or from them succeeds;
// and the device's loss where it was lost.
func (s *bufState) closed() error {
	if s.d.closing.Load() {
		return fmt.Errorf("rig: a buffer of %d bytes of device %s, used after its device closed: %w", s.n, s.d.name, ErrClosed)
	}
	if le := s.d.loss.Load(); le != nil {
		// Later calls of a lost device fail at once, whatever the
		// buffer's kind of memory.
		return le
	}
	return nil
}

// stage copies host bytes into the buffer at off (in) or out of it, through
// a Pinned buffer of the device and a copy on its queues.
func (b *Buffer) stage(ctx context.Context, off int, host []byte, in bool) error {
	d := b.s.d
	if !d.facts.Kinds.Has(device.PinnedMemory) {
		return fmt.Errorf("rig: copying %d bytes to or from a buffer of %s: the host does not address it and the device has no Pinned memory to stage through: %w", len(host), d.name, device.ErrNever)
	}
	// The staging buffer's rounds of reclamation end where ctx ends.
	st, err := d.alloc(ctx, device.PinnedMemory, len(host))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return cerr
		}
		return err
	}
	defer st.Free()
	sb := st.Bytes()
	if sb == nil {
		return fmt.Errorf("rig: staging on %s: its Pinned memory is not addressed by the host", d.name)
	}
	part := Copy(1, uint64(off), 0, 0, uint64(len(host)))
	if in {
		copy(sb, host)
		part = Copy(0, 0, 1, uint64(off), uint64(len(host)))
	}
	s, err := NewSubmission(d, part)
	if err != nil {
		return err
	}
	// A copy whose observer panicked was submitted all the same: it
	// completes, then returns the panic.
	p, err := s.Take().Submit(ctx, st, b)
	var observed *ObserverPanicError
	if err != nil && !errors.As(err, &observed) {
		return err
	}
	if err := p.Wait(ctx); err != nil {
		return err
	}
	if !in {
		copy(host, sb)
	}
	return err
}
