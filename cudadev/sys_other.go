//go:build !linux || 386 || arm || mips || mipsle

package cudadev

import (
	"fmt"
	"runtime"
	"time"
)

// osSupported returns the error of every open where the system is not
// 64-bit Linux: the driver loads libcuda.so, NVIDIA's CUDA library for
// 64-bit Linux, so GPU(i), Count and Buses fail with it.
func osSupported() error {
	return fmt.Errorf("cudadev: the CUDA driver runs on 64-bit Linux only (it loads libcuda.so), not on %s/%s", runtime.GOOS, runtime.GOARCH)
}

// dlopen, dlsym and dlclose are never reached where osSupported fails.
func dlopen(string) (uintptr, error) { return 0, osSupported() }

func dlsym(uintptr, string) (uintptr, error) { return 0, osSupported() }

func dlclose(uintptr) error { return osSupported() }

// napTime is Sleep's nap where osSupported fails.
type napTime struct{}

// sleep sleeps for d.
func (*napTime) sleep(d time.Duration) { time.Sleep(d) }
