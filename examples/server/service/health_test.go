package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestHealthWhileReopensFail: while the reopens of a lost device keep
// failing, no device serves and /healthz answers 503 with the loss and
// the last reopen's error; once a reopen succeeds it answers 200 again,
// and the service serves.
func TestHealthWhileReopensFail(t *testing.T) {
	name := fmt.Sprintf("server-test-%d", names.Add(1))
	var refuse atomic.Bool
	var refused atomic.Int64
	open := func(ctx context.Context, seat int) (*rig.Device, error) {
		if refuse.Load() {
			refused.Add(1)
			return nil, errors.New("the GPU is not there")
		}
		return rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("%s/%d", name, seat)}))
	}
	srv, _, _ := serveOn(t, 2, open)
	c := srv.Client()
	health := func() (int, string) {
		t.Helper()
		resp, err := c.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := health(); code != http.StatusOK {
		t.Fatalf("/healthz before the loss: %d %q", code, body)
	}
	refuse.Store(true)
	if code, body, err := post(context.Background(), c, srv.URL+"/debug/fault", nil); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("the faulting request: %d %q %v", code, body, err)
	}
	// The opens beside the lost device and after its close are refused,
	// and the reopens go on: /healthz answers 503 meanwhile, each time.
	deadline := time.Now().Add(10 * time.Second)
	for refused.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d opens 10 s after the loss, want 3 refused", refused.Load())
		}
		code, body := health()
		if code != http.StatusServiceUnavailable {
			t.Fatalf("/healthz while no device serves: %d %q, want 503", code, body)
		}
		time.Sleep(time.Millisecond)
	}
	code, body := health()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "lost") || !strings.Contains(body, "the GPU is not there") {
		t.Fatalf("/healthz while the reopens fail: %d %q, want 503 with the loss and the reopen's error", code, body)
	}
	refuse.Store(false)
	for {
		code, body := health()
		if code == http.StatusOK {
			if body != "ok\n" {
				t.Fatalf("/healthz after the reopen: %q", body)
			}
			break
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("/healthz during the reopens: %d %q", code, body)
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("/healthz still %d %q after the opens were let through", code, body)
		}
		time.Sleep(time.Millisecond)
	}
	x, y := vectors(8, 1)
	if code, got, err := post(context.Background(), c, srv.URL+"/saxpy?a=2", Body(x, y)); err != nil || code != http.StatusOK || !slices.Equal(floats(got), Saxpy(2, x, y)) {
		t.Fatalf("a saxpy after /healthz answered 200: %d %v", code, err)
	}
}
