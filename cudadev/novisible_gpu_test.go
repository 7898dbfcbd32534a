package cudadev

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// TestGPUNoneVisible runs a child process that CUDA_VISIBLE_DEVICES=-1
// shows no GPU, on a machine that has one: libcuda loads, cuInit answers
// that there is no device, Count returns 0 with no error, and GPU(0)'s
// open says that CUDA sees no GPU 0. Run it with RIG_GPU=1.
func TestGPUNoneVisible(t *testing.T) {
	needGPU(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUNoneVisibleChild$", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=-1", "CUDADEV_NONE_VISIBLE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "none-visible: ok") {
		t.Fatalf("the child answered %v:\n%s", err, out)
	}
}

// TestGPUNoneVisibleChild is TestGPUNoneVisible's child.
func TestGPUNoneVisibleChild(t *testing.T) {
	if os.Getenv("CUDADEV_NONE_VISIBLE") == "" {
		t.Skip("run by TestGPUNoneVisible")
	}
	n, err := Count()
	if err != nil || n != 0 {
		t.Fatalf("Count with no GPU visible = %d, %v; want 0, nil", n, err)
	}
	if _, err := rig.Open(bg, GPU(0)); err == nil || !strings.Contains(err.Error(), "no GPU 0") {
		t.Fatalf("an open of GPU 0 with none visible answered %v", err)
	}
	t.Log("none-visible: ok")
}
