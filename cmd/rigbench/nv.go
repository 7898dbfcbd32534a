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
		what: "the RM driver (nvdev)",
		opener: func(i int) (device.Opener, error) {
			return nvdev.Open(i, nvdev.Config{SharedGroup: sharedGroups}), nil
		},
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
	timelineOpeners["nv"] = func(i, k int) device.Opener {
		return nvdev.Open(i, nvdev.Config{Timeline: k, SharedGroup: sharedGroups})
	}
}

// sharedGroups is set where -timelines asks for more than one timeline:
// the RM driver's devices then put their channels in the GPU's shared
// channel group, as subcontexts, whose work the GPU runs side by side,
// rather than in groups of their own, which it time-slices.
var sharedGroups bool
