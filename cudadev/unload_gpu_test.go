package cudadev

import (
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPUUnload checks on GPU 0, through libcuda, that a launch after
// Image.Unload returns ErrFreed and never runs code of the unloaded image.
// Run it with RIG_GPU=1.
func TestGPUUnload(t *testing.T) {
	dev := openRig(t, Config{})
	gputest.Unload(t, dev, kernels(t, dev.Arch()))
}
