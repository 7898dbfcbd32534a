package nvdev

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain runs the tests, then, where the GPU tests ran (RIG_GPU=1),
// fails the binary if libcuda was mapped into the process at any point
// that it still is: the driver runs with no CUDA.
func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("RIG_GPU") == "1" {
		b, err := os.ReadFile("/proc/self/maps")
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "nvdev: reading /proc/self/maps: %v\n", err)
			code = max(code, 1)
		case strings.Contains(string(b), "libcuda"):
			fmt.Fprintln(os.Stderr, "nvdev: libcuda is mapped into the process at the end of the tests")
			code = max(code, 1)
		default:
			fmt.Println("nvdev: libcuda was not mapped into the process at the end of the tests")
		}
	}
	os.Exit(code)
}
