package nvdev

import (
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPUKernelArgs sets parameters by index, with the layouts the cubin's
// parameter attributes state, and moves slices in and out of Device memory.
func TestGPUKernelArgs(t *testing.T) {
	dev := openRig(t, Config{})
	gputest.KernelArgs(t, dev, cubin(t))
}
