package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/examples/server/service"
)

// TestClientsMemory: a level's clients take memory for what they hold (a
// connection's buffers), not room for latencies they have not measured:
// each took 512 KiB for 65,536 of them before its first request, so that
// -c 100000 asked for 50 GB at once.
func TestClientsMemory(t *testing.T) {
	const c = 256
	x, y := make([]float32, 16), make([]float32, 16)
	body := service.Body(x, y)
	want := service.Body(service.Saxpy(2, x, y), nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(want) }))
	defer srv.Close()
	svc, _, err := open(context.Background(), "host", 16, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close(context.Background()) }()
	for _, l := range []struct {
		name string
		run  func() result
	}{
		{"raw", func() result {
			return attack(context.Background(), "raw", 0, strings.TrimPrefix(srv.URL, "http://"), body, want, c, time.Nanosecond, os.Getpid())
		}},
		{"Go API", func() result {
			return direct(context.Background(), svc, body[:len(body)/2], body[len(body)/2:], c, time.Nanosecond)
		}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		l.run()
		runtime.ReadMemStats(&after)
		// A raw client reads into headBuf bytes of its own.
		if per := (after.TotalAlloc - before.TotalAlloc) / c; per > 128<<10 {
			t.Errorf("%s: %d clients allocated %d bytes each, want at most 128 KiB", l.name, c, per)
		}
	}
}
