package main

import (
	"fmt"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/nvdev"
)

// The RM driver: NVIDIA GPU i through NVIDIA's kernel driver, with no
// CUDA. Where the kernel driver or the GPU is missing, its devices do not
// open. Two devices of one GPU may be open at once (rig's and the
// baseline's, with -compare).
func init() {
	drivers["nv"] = &driver{
		what:   "the RM driver (nvdev)",
		opener: func(i int) (device.Opener, error) { return nvdev.GPU(i), nil },
		image: func(arch, dev, _ string) ([]byte, error) {
			// The test kernels without CUDA's printf and assert, which
			// the RM driver refuses; they hold empty and twice.
			b, ok := testkernels.NVCubin(arch)
			if !ok {
				return nil, fmt.Errorf("rigbench holds a cubin of its kernels for %v only, and %s is %s", testkernels.NVArchs, dev, arch)
			}
			return b, nil
		},
	}
	timelineOpeners["nv"] = nvdev.Timeline
}
