//go:build !linux

package cudadev

import (
	"fmt"
	"runtime"
	"time"
)

// dlopen fails where the OS is not Linux: the driver loads libcuda.so
// only, so GPU(i) and Count return this error at open.
func dlopen(string) (uintptr, error) {
	return 0, fmt.Errorf("the CUDA driver loads libcuda.so on Linux, not on %s", runtime.GOOS)
}

// dlsym is never reached where dlopen fails.
func dlsym(uintptr, string) (uintptr, error) {
	return 0, fmt.Errorf("no CUDA library on %s", runtime.GOOS)
}

// napTime is Sleep's nap where the OS is not Linux.
type napTime struct{}

// sleep sleeps for d.
func (*napTime) sleep(d time.Duration) { time.Sleep(d) }
