package cudadev

import (
	"fmt"
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPURandomCopies runs the randomized check of copies and fills
// (gputest.RandomCopies) on GPU 0, a few keys of 500 steps: uploads,
// downloads and submissions of copies and fills of Device and Pinned
// memory and of lent host memory, on both queues, each buffer checked
// against a copy on the host.
func TestGPURandomCopies(t *testing.T) {
	dev := openRig(t, Config{})
	for _, key := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("key=%d", key), func(t *testing.T) {
			gputest.RandomCopies(t, dev, key, 500)
		})
	}
}
