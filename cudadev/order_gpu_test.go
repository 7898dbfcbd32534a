package cudadev

import (
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPUPartsOrderedByBuffers submits, with the default queues and no
// After, a copy of host memory into x on COPY:0, launches of twice on x on
// COMPUTE:0 and a copy of x back on COPY:0, many times over: rig orders
// the parts by their buffers, so every float comes back doubled as often
// as launched. Lone launches of twice on another buffer run between (the
// driver's shortest path for one launch).
func TestGPUPartsOrderedByBuffers(t *testing.T) {
	dev := openRig(t, Config{})
	gputest.PartsOrderedByBuffers(t, dev, kernels(t, dev.Arch()))
}
