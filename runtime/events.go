package rig

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
)

// logger is the logger SetLogger set, nil for none.
var logger atomic.Pointer[slog.Logger]

// SetLogger sets the logger rig reports its devices' events to: opens,
// losses with their cause, closes once everything was given back, and
// rounds of reclamation. nil (the default) reports nothing. Any goroutine
// may call it; events are logged from the goroutine that met them, which
// then holds no lock that submissions or waits take. That goroutine may
// be a device's supervisor (losses, closes): a handler must return, and
// must not close a device or wait for its points, or the device waits
// for it; select on Lost to act on a loss. A logger whose
// handler panics is set aside, the panic recovered and written to the
// process's standard error, and rig logs nothing more until SetLogger is
// called again: the device whose event it was goes on as if it had logged.
func SetLogger(l *slog.Logger) { logger.Store(l) }

// logEvent logs msg with args at level, where a logger is set.
func logEvent(level slog.Level, msg string, args ...any) {
	if l := logger.Load(); l != nil {
		defer func() {
			if v := recover(); v != nil {
				logger.CompareAndSwap(l, nil)
				fmt.Fprintf(os.Stderr, "rig: the logger's handler panicked on %q: %v; rig logs no more events until SetLogger\n", msg, v)
			}
		}()
		l.Log(context.Background(), level, msg, args...)
	}
}

// Lost returns a channel that is closed once the device is lost, for a
// server to select on beside its other work; Err then returns the loss.
// It is not closed by Close.
func (d *Device) Lost() <-chan struct{} { return d.lost }
