package main

import (
	"fmt"

	"github.com/rig-go/rig/cudadev"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
)

// The CUDA driver: GPU i of those CUDA sees. Where libcuda does not load or
// sees no GPU, its devices do not open, and the default device is the
// host's.
func init() {
	drivers["cuda"] = &driver{
		what: "the CUDA driver (cudadev)",
		opener: func(i int) (device.Opener, error) {
			n, err := cudadev.Count()
			if err != nil {
				return device.Opener{}, err
			}
			if i >= n {
				return device.Opener{}, fmt.Errorf("CUDA sees %d GPU(s)", n)
			}
			return cudadev.GPU(i), nil
		},
		image: func(_, _, _ string) ([]byte, error) {
			// The kernels empty and twice as PTX for any GPU; cudadev
			// loads PTX that ends with a NUL byte as it is.
			return append(testkernels.Portable(), 0), nil
		},
		exclusive: true,
	}
	timelineOpeners["cuda"] = cudadev.Timeline
}
