package service

import (
	"context"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestDrain: once the service drains, /readyz answers 503 "shutting down",
// so that a load balancer sends no more, and /saxpy still serves the
// requests that come.
func TestDrain(t *testing.T) {
	svc := hostService(t, 2, hostOpener())
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	readyz := func() (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := readyz(); code != 200 {
		t.Fatalf("readyz before the drain: %d %q", code, body)
	}
	svc.Drain()
	if code, body := readyz(); code != 503 || !strings.Contains(body, "shutting down") {
		t.Fatalf("readyz while draining: %d %q, want 503 shutting down", code, body)
	}
	x, y := vectors(100, 2)
	code, got, err := post(context.Background(), srv.Client(), srv.URL+"/saxpy?a=2", Body(x, y))
	if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(2, x, y)) {
		t.Fatalf("a saxpy while draining: %d %v", code, err)
	}
}
