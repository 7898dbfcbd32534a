package rig_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestClosedErrorsNameDevice: after Close, the object calls, Submit and a
// wait on a point that Close dropped return errors that match ErrClosed and
// name the device, so that a program of several devices can tell which
// one closed.
func TestClosedErrorsNameDevice(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{MapsHost: true})
	name := d.Name()
	img, err := d.LoadImage(hostdev.ImageOf("empty", "sleep"))
	if err != nil {
		t.Fatal(err)
	}
	b := alloc(t, d, device.DeviceMemory, 16)
	s := sub(t, d, rig.Copy(0, 0, 0, 8, 8))
	long := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8), rig.FillBytes(0, 0, 16, 1).After(0))
	dropped, err := sleepRun(long, 10*time.Second).Submit(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	_, allocErr := d.Alloc(device.DeviceMemory, 16)
	_, mapErr := d.MapHost(make([]byte, 16))
	_, loadErr := d.LoadImage(hostdev.ImageOf("empty"))
	_, resolveErr := img.Resolve("sleep")
	_, submitErr := s.Take().Submit(ctx, b)
	_, settleErr := d.Settle(nil)
	waitErr := dropped.Wait(ctx)
	for _, c := range []struct {
		call string
		err  error
	}{{"Alloc", allocErr}, {"MapHost", mapErr}, {"LoadImage", loadErr}, {"Resolve", resolveErr}, {"Submit", submitErr}, {"Settle", settleErr}, {"a wait on a dropped point", waitErr}} {
		if !errors.Is(c.err, rig.ErrClosed) {
			t.Errorf("%s after Close: %v, want an error matching ErrClosed", c.call, c.err)
			continue
		}
		if !strings.Contains(c.err.Error(), name) {
			t.Errorf("%s after Close: %q does not name the device %s", c.call, c.err, name)
		}
	}
}
