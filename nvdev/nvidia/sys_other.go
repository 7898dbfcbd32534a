//go:build !linux || 386 || arm || mips || mipsle

package nvidia

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// errNotLinux is the error of every system call of the package where the
// OS is not Linux of 64-bit addresses: NVIDIA's RM is reached through the
// ioctls of its Linux kernel driver only, for 64-bit processes, so Open
// fails at the first file it opens.
var errNotLinux = fmt.Errorf("the RM driver needs 64-bit Linux (NVIDIA's kernel driver, /dev/nvidiactl), not %s/%s", runtime.GOOS, runtime.GOARCH)

func sysIoctl(int, uintptr, unsafe.Pointer) syscall.Errno { return syscall.EINVAL }

func openFile(string) (int, error) { return -1, errNotLinux }

func closeFD(int) error { return errNotLinux }

func rawClock() (int64, error) { return 0, errNotLinux }

func munmap(uintptr, uint64) error { return errNotLinux }

func mapFile(uintptr, uint64, int) (uintptr, error) { return 0, errNotLinux }

func mapShared(uintptr, uint64) (uintptr, error) { return 0, errNotLinux }

func mapPrivate(uintptr, uint64) (uintptr, error) { return 0, errNotLinux }

func reserve(uintptr, uint64) error { return errNotLinux }

func unreserveTo(uintptr, uint64) error { return errNotLinux }
