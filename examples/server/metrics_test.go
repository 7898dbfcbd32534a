package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rig-go/rig/examples/server/service"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestLossesCountedBetweenScrapes: the device the first scrape saw is
// lost, its replacement opened after that scrape is lost in turn, both
// before the next scrape: rig_device_losses_total counts both losses, the
// replacement's too, which no scrape returned.
func TestLossesCountedBetweenScrapes(t *testing.T) {
	name := fmt.Sprintf("server-metrics-%d", time.Now().UnixNano())
	open := func(ctx context.Context, seat int) (*rig.Device, error) {
		return rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("%s/%d", name, seat)}))
	}
	svc, metrics, err := newService(context.Background(), service.Config{Open: open, Driver: "host", Slots: 2, Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := svc.Close(context.Background()); err != nil {
			t.Errorf("closing the service: %v", err)
		}
	}()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(metrics); err != nil {
		t.Fatal(err)
	}
	if got := losses(t, reg); got != 0 {
		t.Fatalf("%v losses before any", got)
	}
	h := svc.Handler()
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/debug/fault", nil))
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("the faulting request answered %d %q", w.Code, w.Body)
		}
		// Served again: a replacement is open and serves.
		for start := time.Now(); ; time.Sleep(100 * time.Microsecond) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
			if w.Code == http.StatusOK {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("not ready 10 s after the loss: %d %q", w.Code, w.Body)
			}
		}
	}
	if got := losses(t, reg); got != 2 {
		t.Fatalf("rig_device_losses_total sums to %v after two losses, want 2", got)
	}
}

// losses sums the rig_device_losses_total series reg gathers.
func losses(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "rig_device_losses_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
