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
		return hostdev.ImageOf("saxpy", "spin", "crash", "trap"), nil
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
	// saxpy: the GPU's thread i computes element i; here the first thread
	// of each group computes the group's elements, so that the memory is
	// looked up twice a group rather than twice an element (the lookups
	// were most of the host driver's CPU per request). The answer is the
	// same for the service's launches, of 1-D groups.
	hostdev.RegisterArgs("saxpy", func(k *hostdev.Ctx) {
		if k.Thread != [3]int{} {
			return
		}
		per := k.Threads[0] * k.Threads[1] * k.Threads[2]
		n, lo := int(k.Uint32(0)), k.Group[0]*per
		if lo >= n {
			return
		}
		m := min(per, n-lo)
		a := math.Float32frombits(k.Uint32(4))
		x := k.Float32s(k.Uint64(8)+4*uint64(lo), m)
		y := k.Float32s(k.Uint64(16)+4*uint64(lo), m)
		for i := range y {
			y[i] = a*x[i] + y[i]
		}
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
	hostdev.RegisterArgs("trap", func(k *hostdev.Ctx) {
		k.Fault("the trap kernel trapped")
	})
}
