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

// TestClosedOtherDeviceNamed: a buffer of device a whose last write was
// work of device b that b's Close dropped: a submission on a that uses the
// buffer, and an Upload and a Download of it, return an error that matches
// ErrClosed and names b, not a bare ErrClosed that reads as a's close, and
// a stays open.
func TestClosedOtherDeviceNamed(t *testing.T) {
	ctx := context.Background()
	a := host(t, hostdev.Config{})
	b := host(t, hostdev.Config{})
	buf := alloc(t, a, device.DeviceMemory, 64)
	write := sub(t, b, rig.Launch(fn(t, b, "sleep"), 8), rig.FillBytes(0, 0, 64, 1).After(0))
	if _, err := sleepRun(write, 10*time.Second).Submit(ctx, buf); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	fill := sub(t, a, rig.FillBytes(0, 0, 64, 2))
	_, subErr := fill.Take().Submit(ctx, buf)
	for what, err := range map[string]error{
		"a submission on a": subErr,
		"an upload to a":    rig.Upload(ctx, buf, 0, []byte{1}),
		"a download from a": rig.Download(ctx, []byte{1}, buf, 0),
	} {
		if !errors.Is(err, rig.ErrClosed) || !strings.Contains(err.Error(), "device "+b.Name()) {
			t.Errorf("%s of a buffer whose write b's Close dropped: %v, want ErrClosed naming device %s", what, err, b.Name())
		}
	}
	if err := a.Err(); err != nil {
		t.Fatalf("device a: %v", err)
	}
	if _, err := a.Alloc(device.DeviceMemory, 8); err != nil {
		t.Fatalf("device a after b's close: %v", err)
	}
}
