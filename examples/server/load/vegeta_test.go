package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestVegetaResult: a level driven by vegeta counts each request it
// served once and each that failed once, and its latencies are those of
// the requests served, as the raw client's are: of 22 requests of which
// 15 answered 200, 15 were served and 7 failed (the served count taken as
// the requests times vegeta's success ratio, 15/22×22, was 14), and the
// failures' quick 503s are not the level's p50.
func TestVegetaResult(t *testing.T) {
	start := time.Now()
	results := make(chan *vegeta.Result, 22)
	for i := range 22 {
		res := &vegeta.Result{Seq: uint64(i), Code: http.StatusOK, Timestamp: start, Latency: time.Duration(100+i) * time.Microsecond}
		if i%3 == 1 && i < 21 {
			res.Code, res.Error, res.Latency = http.StatusServiceUnavailable, "503 Service Unavailable", time.Microsecond
		}
		results <- res
	}
	close(results)
	r := vegetaResult(results, start, 0, nil)
	if r.n != 15 || r.failed != 7 {
		t.Errorf("%d served, %d failed; want 15 and 7", r.n, r.failed)
	}
	// The served: 100, 102, 103, 105, 106, 108, 109, 111, 112, 114, 115,
	// 117, 118, 120, 121 µs. p50 is the 8th, p99 the 15th.
	if r.p50 != 111*time.Microsecond || r.p99 != 121*time.Microsecond || r.max != 121*time.Microsecond {
		t.Errorf("p50 %v, p99 %v, max %v; want 111µs, 121µs, 121µs", r.p50, r.p99, r.max)
	}
}

// TestVegetaRequestTimeout: a level driven by vegeta against a service
// that never answers ends once its requests time out, as the raw client's
// do, rather than waiting on them for as long as the service holds them.
func TestVegetaRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	old := requestTimeout
	requestTimeout = 200 * time.Millisecond
	defer func() { requestTimeout = old }()
	done := make(chan result, 1)
	go func() {
		done <- attackVegeta(context.Background(), srv.Listener.Addr().String(), []byte("body"), 2, 0, 50*time.Millisecond, os.Getpid())
	}()
	select {
	case r := <-done:
		if r.n != 0 || r.failed == 0 {
			t.Errorf("%d served, %d failed; want none served and the timed-out requests failed", r.n, r.failed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a level of 50ms still waited on a service that never answers 10 s later")
	}
}
