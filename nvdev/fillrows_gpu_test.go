package nvdev

import (
	"testing"

	"github.com/rig-go/rig/internal/gputest"
)

// TestGPUFillRows fills rows with gaps between them, of many shapes, on
// each queue, and checks every byte of the buffer.
func TestGPUFillRows(t *testing.T) {
	gputest.FillRows(t, openRig(t, Config{}))
}

// BenchmarkGPUFillRows times fills of rows with gaps between them.
func BenchmarkGPUFillRows(b *testing.B) {
	gputest.FillRowsBench(b, openRig(b, Config{}))
}
