package rig_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestOpenOfAMakeThatFails: an opener whose Make panics, returns neither a
// driver nor an error, or ends its goroutine with runtime.Goexit leaves
// the name free: Open returns an error that says what Make did (the
// goroutine of a Goexit ends), and the next Open of the name opens it.
func TestOpenOfAMakeThatFails(t *testing.T) {
	for _, c := range []struct {
		name   string
		make   func(*uint64) (device.Driver, error)
		says   string
		wraps  error
		goexit bool
	}{
		{"panic", func(*uint64) (device.Driver, error) { panic("no hardware") }, "make panicked: no hardware", nil, false},
		{"panic with an error", func(*uint64) (device.Driver, error) { panic(io.ErrUnexpectedEOF) }, "make panicked", io.ErrUnexpectedEOF, false},
		{"nil driver", func(*uint64) (device.Driver, error) { return nil, nil }, "neither a driver nor an error", nil, false},
		{"goexit", func(*uint64) (device.Driver, error) { runtime.Goexit(); return nil, nil }, "", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "make-" + strings.ReplaceAll(c.name, " ", "-")
			var err error
			var recovered any
			exited := true
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() { recovered = recover() }()
				_, err = rig.Open(context.Background(), device.Opener{Name: name, Make: c.make})
				exited = false
			}()
			<-done
			if recovered != nil {
				t.Fatalf("Open panicked: %v", recovered)
			}
			if c.goexit {
				if !exited {
					t.Fatalf("Open returned past the opener's Goexit: %v", err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), name) {
					t.Fatalf("Open answered %v, want an error naming %q that says %q", err, name, c.says)
				}
				if c.wraps != nil && !errors.Is(err, c.wraps) {
					t.Fatalf("Open answered %v, which does not wrap %v", err, c.wraps)
				}
			}
			d := host(t, hostdev.Config{Name: name})
			wait(t, submitOK(t, sub(t, d, rig.Launch(fn(t, d, "empty"), 0)).Take()))
		})
	}
}
