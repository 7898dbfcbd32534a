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
// may call it. The goroutine that met an event, which then holds no lock
// that submissions or waits take, waits while the handler logs it on a
// goroutine of its own. That goroutine may be a device's supervisor
// (losses, closes) or a goroutine in a device's call (rounds of
// reclamation): a handler must return, and must not close, allocate on or
// submit to a device, or wait for its points, or the device waits for it;
// select on Lost to act on a loss. A logger whose handler panics or calls runtime.Goexit is set
// aside, the panic recovered and written to the process's standard error,
// and rig logs nothing more until SetLogger is called again: the device
// whose event it was goes on as if it had logged.
func SetLogger(l *slog.Logger) { logger.Store(l) }

// logEvent logs msg with args at level, where a logger is set. The handler
// runs on a goroutine of its own, which a runtime.Goexit of it ends rather
// than the caller's, a device's supervisor among them.
func logEvent(level slog.Level, msg string, args ...any) {
	l := logger.Load()
	if l == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		returned := false
		defer func() {
			if returned {
				return
			}
			logger.CompareAndSwap(l, nil)
			if v := recover(); v != nil {
				fmt.Fprintf(os.Stderr, "rig: the logger's handler panicked on %q: %v; rig logs no more events until SetLogger\n", msg, v)
				return
			}
			fmt.Fprintf(os.Stderr, "rig: the logger's handler called runtime.Goexit on %q; rig logs no more events until SetLogger\n", msg)
		}()
		l.Log(context.Background(), level, msg, args...)
		returned = true
	}()
	<-done
}

// Lost returns a channel that is closed once the device is lost, for a
// server to select on beside its other work; Err then returns the loss.
// It is not closed by Close.
func (d *Device) Lost() <-chan struct{} { return d.lost }
