package cudadev

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// CUDA keeps a fault for the process, so each fault runs in a child: the
// test binary again, with -test.run and CUDADEV_FAULT_KERNEL naming the kernel.

// faults are the fault kernels and the CUDA errors each may raise.
var faults = []struct {
	kernel string
	errs   []string
}{
	{"fault_illegal_address", []string{"CUDA_ERROR_ILLEGAL_ADDRESS"}},
	{"fault_misaligned", []string{"CUDA_ERROR_MISALIGNED_ADDRESS"}},
	{"trap", []string{"CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION"}},
}

func TestGPUFaults(t *testing.T) {
	needGPU(t)
	for _, f := range faults {
		t.Run(f.kernel, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestGPUFaultChild$", "-test.v", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), "CUDADEV_FAULT_KERNEL="+f.kernel, "RIG_GPU=1")
			out, err := cmd.CombinedOutput()
			text := string(out)
			if err != nil || !strings.Contains(text, "fault-child: ok") {
				t.Fatalf("the child answered %v:\n%s", err, text)
			}
			named := false
			for _, e := range f.errs {
				named = named || strings.Contains(text, e)
			}
			if !named {
				t.Fatalf("the child's errors name none of %v:\n%s", f.errs, text)
			}
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "fault-child:") {
					t.Log(strings.TrimSpace(l))
				}
			}
		})
	}
}

// TestGPUFaultChild runs one fault kernel: the device is lost with CUDA's
// error, every waiter wakes with it, later submits fail fast, the device
// closes and gives everything back with no goroutine left, and a later
// open of the GPU returns the fault's error.
func TestGPUFaultChild(t *testing.T) {
	kernel := os.Getenv("CUDADEV_FAULT_KERNEL")
	if kernel == "" {
		t.Skip("run by TestGPUFaults")
	}
	needGPU(t)
	ignore := goleak.IgnoreCurrent()
	dev, err := rig.Open(bg, GPU(0))
	if err != nil {
		t.Fatal(err)
	}
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	fn := resolve(t, img, kernel)
	empty := resolve(t, img, "empty")
	buf, err := dev.Alloc(device.DeviceMemory, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var s *rig.Submission
	if fn.Params() > 0 {
		s = submission(t, dev, rig.Launch(fn, 8, rig.Write(0, 0)))
	} else {
		s = submission(t, dev, rig.Launch(fn, 0, rig.Uses(0, rig.Writes)))
	}
	p, err := s.Take().Submit(bg, buf)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.Wait(bg) }()
	}
	start := time.Now()
	err = p.Wait(bg)
	wg.Wait()
	if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), "CUDA_ERROR_") {
		t.Fatalf("the fault answered %v", err)
	}
	println("fault-child: lost after", time.Since(start).String()+":", err.Error())
	for i, e := range errs {
		if !errors.Is(e, rig.ErrLost) {
			t.Fatalf("waiter %d woke with %v", i, e)
		}
	}
	if _, err := submission(t, dev, rig.Launch(empty, 0)).Take().Submit(bg); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("a submit after the loss answered %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dev.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the lost device did not give everything back")
	}
	goleak.VerifyNone(t, ignore)
	_, err = rig.Open(bg, GPU(0))
	if err == nil {
		t.Fatal("the GPU opened again after a fault")
	}
	first := err.Error()
	if !strings.Contains(first, "CUDA_ERROR_") || !errors.Is(err, ErrFaulted) {
		t.Fatalf("the open after the fault answered %v, want CUDA's error and ErrFaulted", err)
	}
	println("fault-child: open again:", first)
	println("fault-child: ok")
}
