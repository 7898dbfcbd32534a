//go:build linux && !(386 || arm || mips || mipsle)

package cudadev

import (
	"time"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/unix"
)

// osSupported returns nil: the driver runs on 64-bit Linux.
func osSupported() error { return nil }

// dlopen loads the shared library name with its symbols resolved now.
func dlopen(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// dlsym returns the address of the symbol name of the library h.
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// dlclose gives back the library h that dlopen opened.
func dlclose(h uintptr) error { return purego.Dlclose(h) }

// napTime is Sleep's nanosleep: its timespec lives in the device, so a
// nap allocates nothing.
type napTime struct{ ts unix.Timespec }

// sleep sleeps for d with nanosleep(2), not time.Sleep, which sleeps at
// least a millisecond when the runtime has nothing else to run.
func (n *napTime) sleep(d time.Duration) {
	n.ts = unix.Timespec{Nsec: int64(d)}
	_ = unix.Nanosleep(&n.ts, nil)
}
