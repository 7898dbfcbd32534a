//go:build !linux

package cudadev

import (
	"fmt"
	"runtime"
	"time"
)

// osSupported returns the error of every open where the OS is not Linux:
// the driver loads libcuda.so, NVIDIA's CUDA library for Linux, so GPU(i),
// Count and Buses fail with it.
func osSupported() error {
	return fmt.Errorf("cudadev: the CUDA driver runs on Linux only (it loads libcuda.so), not on %s", runtime.GOOS)
}

// dlopen and dlsym are never reached where osSupported fails.
func dlopen(string) (uintptr, error) { return 0, osSupported() }

func dlsym(uintptr, string) (uintptr, error) { return 0, osSupported() }

// napTime is Sleep's nap where the OS is not Linux.
type napTime struct{}

// sleep sleeps for d.
func (*napTime) sleep(d time.Duration) { time.Sleep(d) }
