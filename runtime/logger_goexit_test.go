package rig_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// goexitHandler is a slog handler whose Handle calls runtime.Goexit, as
// a handler that calls testing.T's FailNow does.
type goexitHandler struct{ slog.Handler }

func (goexitHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (goexitHandler) Handle(context.Context, slog.Record) error { runtime.Goexit(); return nil }

// TestLoggerGoexit: a logger whose handler calls runtime.Goexit ends
// neither the goroutine that logged nor the device's supervisor, which
// logs losses and closes: a lost device's waits return the loss, and its
// Close returns and gives everything back.
func TestLoggerGoexit(t *testing.T) {
	d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: "logger-goexit"}))
	if err != nil {
		t.Fatal(err)
	}
	// Set after the open, so that the loss is the first event it sees.
	rig.SetLogger(slog.New(goexitHandler{}))
	defer rig.SetLogger(nil)
	s := sub(t, d, rig.Launch(fn(t, d, "panic"), 0))
	p, err := s.Take().Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background()); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the wait on a panicking kernel answered %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return 10 s after a logger's handler called runtime.Goexit")
	}
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the device did not give everything back after its logger's handler called runtime.Goexit")
	}
}
