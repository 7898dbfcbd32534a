package service

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
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
	opens, driver := nvOpenLog(t)
	srv, svc, _ := serveDriver(t, 4, driver, opens.open)
	checkRecoveryOrder(t, srv, svc, opens, 3)
}

// TestGPUStandbyNV: on GPU 0 through nvdev with a standby device (the
// GPU's other timeline, a channel group of its own), a faulting kernel
// loses the device and the requests move to the standby at once; the lost
// device gives everything back and a new standby opens on its seat. Three
// rounds; each logs how soon the service served again.
func TestGPUStandbyNV(t *testing.T) {
	opens, driver := nvOpenLog(t)
	srv, svc, _ := serveStandby(t, 4, driver, opens.open)
	checkStandbyRecovery(t, srv, svc, opens, 3)
}

// nvOpenLog returns an openLog of GPU 0's timelines through nvdev, and
// the driver's name; it skips the test where there is no GPU.
func nvOpenLog(t *testing.T) (*openLog, string) {
	t.Helper()
	needGPU(t)
	open, driver, err := Pick(context.Background(), "nv:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return &openLog{base: open}, driver
}

// TestGPUClientGoesAway: on GPU 0, through nvdev and through cudadev, a
// client that disconnects while its kernel spins frees its handler within
// a millisecond (the kernel spins 20 ms a request).
func TestGPUClientGoesAway(t *testing.T) {
	needGPU(t)
	for _, spec := range []string{"nv:0", "cuda:0"} {
		t.Run(spec, func(t *testing.T) {
			open, driver, err := Pick(context.Background(), spec, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			srv, _, active := serveDriver(t, 2, driver, open)
			clientGoesAway(t, srv, active, 20*time.Millisecond, 10)
		})
	}
}

// TestGPUFaultCUDA: on GPU 0 through cudadev, a faulting kernel loses the
// device for the process: the request answers 503 with the loss, later
// requests 503, and /healthz 500 for an orchestrator to restart the
// process, while the service does not reopen. It runs last of the GPU
// tests, as a CUDA fault ends the GPU for the process.
func TestGPUFaultCUDA(t *testing.T) {
	needGPU(t)
	open, driver, err := Pick(context.Background(), "cuda:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv, svc, _ := serveDriver(t, 4, driver, open)
	c := srv.Client()
	x, y := vectors(1000, 2)
	code, got, err := post(context.Background(), c, srv.URL+"/saxpy?a=0.5", Body(x, y))
	if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(0.5, x, y)) {
		t.Fatalf("a saxpy before the fault: %d %v", code, err)
	}
	code, body, err := post(context.Background(), c, srv.URL+"/debug/fault", nil)
	if err != nil || code != 503 || !strings.Contains(string(body), "lost") {
		t.Fatalf("the faulting request: %d %q %v", code, body, err)
	}
	t.Logf("the faulting request's answer: %d %s", code, strings.TrimSpace(string(body)))
	deadline := time.Now().Add(5 * time.Second)
	for svc.healthy.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the service still reports itself healthy 5 s after a CUDA fault")
		}
		time.Sleep(time.Millisecond)
	}
	resp, err := c.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Fatalf("/healthz after a CUDA fault: %d, want 500", resp.StatusCode)
	}
	code, _, err = post(context.Background(), c, srv.URL+"/saxpy?a=0.5", Body(x, y))
	if err != nil || code != 503 {
		t.Fatalf("a saxpy after the fault: %d %v, want 503", code, err)
	}
}
