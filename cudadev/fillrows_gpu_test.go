package cudadev

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

// TestGPUFillWords fills four-byte words on each queue and checks every
// byte of the buffer; a buffer lent at an address that is not a multiple
// of 4 is refused.
func TestGPUFillWords(t *testing.T) {
	gputest.FillWords(t, openRig(t, Config{}), false)
}

// BenchmarkGPUFillWords times fills of four-byte words.
func BenchmarkGPUFillWords(b *testing.B) {
	gputest.FillWordsBench(b, openRig(b, Config{}))
}

// TestGPUCopyRows copies rows with gaps between them, of several shapes,
// between two Device buffers on each queue, and checks every byte.
func TestGPUCopyRows(t *testing.T) {
	gputest.CopyRows(t, openRig(t, Config{}))
}

// BenchmarkGPUCopyRows times copies of rows with gaps between them.
func BenchmarkGPUCopyRows(b *testing.B) {
	gputest.CopyRowsBench(b, openRig(b, Config{}))
}
