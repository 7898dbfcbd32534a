package rig_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestPeerBufferGone checks that a buffer of device A that was freed, or
// whose device was closed, used by device B's work returns ErrFreed or
// ErrClosed (not the driver's refusal to map it), for launches and copies,
// and that B keeps working.
func TestPeerBufferGone(t *testing.T) {
	for _, c := range []struct {
		name string
		gone func(a *rig.Device, x *rig.Buffer)
		want error
	}{
		{"freed", func(_ *rig.Device, x *rig.Buffer) { _ = x.Free() }, rig.ErrFreed},
		{"closed", func(a *rig.Device, _ *rig.Buffer) { _ = a.Close() }, rig.ErrClosed},
		{"closed and given back", func(a *rig.Device, _ *rig.Buffer) { _ = a.Close(); <-a.Done() }, rig.ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := host(t, hostdev.Config{})
			twice := fn(t, b, "twice")
			for _, parts := range [][]rig.Part{
				{rig.Launch(twice, 8, rig.ReadWrite(0, 0))},
				{rig.Copy(0, 0, 1, 0, 64)},
				{rig.Copy(1, 0, 0, 0, 64)},
			} {
				a := host(t, hostdev.Config{})
				x := alloc(t, a, device.DeviceMemory, 64)
				y := alloc(t, b, device.DeviceMemory, 64)
				c.gone(a, x)
				_, err := sub(t, b, parts...).Take().Submit(context.Background(), x, y)
				if !errors.Is(err, c.want) {
					t.Errorf("B's work on a %s buffer of A returned %v, want %v", c.name, err, c.want)
				}
			}
			wait(t, submitOK(t, sub(t, b, rig.Launch(fn(t, b, "empty"), 0)).Take()))
			if err := b.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
