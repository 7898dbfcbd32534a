package cudadev

import (
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPUKernelArgs sets parameters by index, with the layouts that
// cuFuncGetParamInfo states, and moves slices in and out of Device memory.
func TestGPUKernelArgs(t *testing.T) {
	dev := openRig(t, Config{})
	gputest.KernelArgs(t, dev, kernels(t, dev.Arch()))
}
