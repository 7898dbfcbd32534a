package rig_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLossEvents: a loss closes Lost and is logged with its cause, as are
// the open and the close.
func TestLossEvents(t *testing.T) {
	var out logBuffer
	rig.SetLogger(slog.New(slog.NewTextHandler(&out, nil)))
	defer rig.SetLogger(nil)
	d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: "events"}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Lost():
		t.Fatal("Lost is closed on a device that is not lost")
	default:
	}
	s := sub(t, d, rig.Launch(fn(t, d, "panic"), 0))
	if _, err := s.Take().Submit(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost was not closed 10 s after a kernel panicked")
	}
	if d.Err() == nil {
		t.Fatal("Lost closed while Err returns nil")
	}
	_ = d.Close()
	<-d.Done()
	deadline := time.Now().Add(5 * time.Second)
	// The close is logged after Done, and the close of an earlier test's
	// device may reach this logger too: wait for this device's.
	for !strings.Contains(out.String(), `everything given back" device=events`) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	log := out.String()
	for _, want := range []string{`msg="rig: device open" device=events`, `msg="rig: device lost" device=events cause=`, `msg="rig: device closed, everything given back" device=events`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// panicHandler is a slog handler whose Handle panics.
type panicHandler struct{ slog.Handler }

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("the handler's panic") }

// TestLoggerPanics: a logger whose handler panics neither ends the
// process nor the device whose event it logged: Open returns the device,
// which runs work and closes, and the logger is set aside.
func TestLoggerPanics(t *testing.T) {
	rig.SetLogger(slog.New(panicHandler{}))
	defer rig.SetLogger(nil)
	d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: "logger-panics"}))
	if err != nil {
		t.Fatal(err)
	}
	s := sub(t, d, rig.Launch(fn(t, d, "empty"), 0))
	p, err := s.Take().Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
}
