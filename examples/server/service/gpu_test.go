package service

import (
	"context"
	"log/slog"
	"os"
	"testing"
)

// needGPU skips a test that needs an NVIDIA GPU unless RIG_GPU=1.
func needGPU(t *testing.T) {
	t.Helper()
	if os.Getenv("RIG_GPU") != "1" {
		t.Skip("needs an NVIDIA GPU: set RIG_GPU=1")
	}
}

// TestGPURecoveryNV: on GPU 0 through nvdev, a faulting kernel loses the
// device; the service opens the replacement on the GPU's other timeline
// while the lost device is still open, serves right answers on it, and
// the lost device is closed after and gives everything back. Three
// rounds; each logs how soon the service served again.
func TestGPURecoveryNV(t *testing.T) {
	needGPU(t)
	open, driver, err := Pick(context.Background(), "nv:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	opens := &openLog{base: open}
	srv, svc, _ := serveDriver(t, 4, driver, opens.open)
	checkRecoveryOrder(t, srv, svc, opens, 3)
}
