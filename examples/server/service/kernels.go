package service

import (
	"embed"
	"fmt"
	"math"
	"time"

	"github.com/rig-go/rig/hostdev"
)

// The GPU kernels, built by kernels/build.sh from kernels/saxpy.cu.
//
//go:embed kernels
var kernelFiles embed.FS

// Image returns the binary that holds the service's kernels for a device
// of the driver (host, cuda or nv) and architecture arch.
func Image(driver, arch string) ([]byte, error) {
	switch driver {
	case "host":
		return hostdev.ImageOf("saxpy", "spin", "crash"), nil
	case "nv":
		if arch != "sm_90" {
			return nil, fmt.Errorf("the service carries a cubin for sm_90 only, and the GPU is %s", arch)
		}
		return kernelFiles.ReadFile("kernels/saxpy.sm_90.cubin")
	default:
		if arch == "sm_90" {
			return kernelFiles.ReadFile("kernels/saxpy.sm_90.cubin")
		}
		return kernelFiles.ReadFile("kernels/saxpy.ptx")
	}
}

// The host driver's kernels, the same as the GPU's in Go.
func init() {
	hostdev.RegisterArgs("saxpy", func(k *hostdev.Ctx) {
		n, i := int(k.Uint32(0)), k.Index()
		if i >= n {
			return
		}
		a := math.Float32frombits(k.Uint32(4))
		x := k.Float32s(k.Uint64(8)+4*uint64(i), 1)
		y := k.Float32s(k.Uint64(16)+4*uint64(i), 1)
		y[0] = a*x[0] + y[0]
	}, 4, 4, 8, 8)
	hostdev.RegisterArgs("spin", func(k *hostdev.Ctx) {
		t := time.NewTimer(time.Duration(k.Uint64(0)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-k.Stopped():
		}
	}, 8)
	hostdev.RegisterArgs("crash", func(k *hostdev.Ctx) {
		k.Fault("the crash kernel wrote outside any allocation")
	}, 8)
}
