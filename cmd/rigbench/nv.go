package main

import (
	_ "embed"
	"fmt"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev"
)

// kernelsNV90 is a cubin for sm_90 that holds the kernels empty and twice
// among others, and no call of the CUDA driver's device functions (printf,
// assert), which the RM driver refuses: a copy of
// ../../nvdev/testdata/kernels_nv.sm_90.cubin, which that folder's build.sh
// builds with nvcc 13.0.
//
//go:embed kernels_nv.sm_90.cubin
var kernelsNV90 []byte

// The RM driver: NVIDIA GPU i through NVIDIA's kernel driver, with no
// CUDA. Where the kernel driver or the GPU is missing, its devices do not
// open. Two devices of one GPU may be open at once (rig's and the
// baseline's, with -compare).
func init() {
	drivers["nv"] = &driver{
		what:   "the RM driver (nvdev)",
		opener: func(i int) (device.Opener, error) { return nvdev.GPU(i), nil },
		image: func(arch, dev, _ string) ([]byte, error) {
			if arch != "sm_90" {
				return nil, fmt.Errorf("rigbench holds a cubin of its kernels for sm_90 only, and %s is %s", dev, arch)
			}
			return kernelsNV90, nil
		},
	}
	timelineOpeners["nv"] = nvdev.Timeline
}
