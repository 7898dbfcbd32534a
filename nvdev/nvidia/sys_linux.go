//go:build linux && !(386 || arm || mips || mipsle)

package nvidia

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls of the package, which NVIDIA's kernel driver serves on
// 64-bit Linux only; sys_other.go refuses each of them elsewhere.

// sysIoctl is the ioctl system call. It repeats a call that a signal
// interrupted before the driver did anything (EINTR); Go's own preemption
// signals make that common.
func sysIoctl(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		if e != unix.EINTR {
			return e
		}
	}
}

// openFile opens one of the driver's device files for reading and writing.
func openFile(name string) (int, error) {
	return unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
}

// closeFD closes a file of openFile.
func closeFD(fd int) error { return unix.Close(fd) }

// rawClock returns the kernel's raw monotonic clock, in nanoseconds.
func rawClock() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// mmap is mmap(2) at the address hint a.
func mmap(a uintptr, length uint64, prot, flags, fd int, offset int64) (uintptr, error) {
	r, _, e := unix.Syscall6(unix.SYS_MMAP, a, uintptr(length), uintptr(prot), uintptr(flags), uintptr(fd), uintptr(offset))
	if e != 0 {
		return 0, e
	}
	return r, nil
}

// munmap is munmap(2).
func munmap(a uintptr, length uint64) error {
	_, _, e := unix.Syscall(unix.SYS_MUNMAP, a, uintptr(length), 0)
	if e != 0 {
		return e
	}
	return nil
}

// mapFile maps length bytes of the file fd, shared, for reading and
// writing, at a (replacing what is there) or where the kernel chooses if a
// is 0.
func mapFile(a uintptr, length uint64, fd int) (uintptr, error) {
	flags := unix.MAP_SHARED
	if a != 0 {
		flags |= unix.MAP_FIXED
	}
	return mmap(a, length, unix.PROT_READ|unix.PROT_WRITE, flags, fd, 0)
}

// mapShared maps length bytes of zeroed shared memory at a, replacing
// what is there.
func mapShared(a uintptr, length uint64) (uintptr, error) {
	return mmap(a, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS|unix.MAP_FIXED, -1, 0)
}

// mapPrivate maps length bytes of zeroed private memory at a, replacing
// what is there.
func mapPrivate(a uintptr, length uint64) (uintptr, error) {
	return mmap(a, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED, -1, 0)
}

// reservation flags: addresses no one may use, which cost no memory.
const reserveFlags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_NORESERVE

// reserve reserves [a, a+size) of the host's addresses, failing with EEXIST
// if anything is mapped there.
func reserve(a uintptr, size uint64) error {
	r, err := mmap(a, size, unix.PROT_NONE, reserveFlags|unix.MAP_FIXED_NOREPLACE, -1, 0)
	if err != nil {
		return err
	}
	if r != a {
		// A kernel older than 4.17 takes MAP_FIXED_NOREPLACE as a hint.
		_ = munmap(r, size)
		return unix.EEXIST
	}
	return nil
}

// unreserveTo puts the reservation back over [a, a+size), dropping what
// was mapped there.
func unreserveTo(a uintptr, size uint64) error {
	_, err := mmap(a, size, unix.PROT_NONE, reserveFlags|unix.MAP_FIXED, -1, 0)
	return err
}
