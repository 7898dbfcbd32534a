package nvdev

import (
	"fmt"
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPURandomCopies runs the randomized check of copies and fills
// (gputest.RandomCopies) on GPU 0, a few keys of 500 steps: uploads,
// downloads and submissions of copies and fills of Device, Pinned and
// Mapped memory and of lent host memory, on both queues, each buffer
// checked against a copy on the host. The copies and fills that nvdev
// runs as its own kernels run so by default; the last key runs them all
// on the copy engines (Config.CopyKernels < 0).
func TestGPURandomCopies(t *testing.T) {
	needGPU(t)
	for _, c := range []struct {
		key uint64
		cfg Config
	}{
		{1, Config{}},
		{2, Config{}},
		{3, Config{}},
		{4, Config{CopyKernels: -1}},
	} {
		t.Run(fmt.Sprintf("key=%d,copykernels=%d", c.key, c.cfg.CopyKernels), func(t *testing.T) {
			gputest.RandomCopies(t, openRig(t, c.cfg), c.key, 500)
		})
	}
}
