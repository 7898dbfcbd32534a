package profile

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// errStampLost is the error failingSettle's Settle returns.
var errStampLost = errors.New("the stamp of a value is lost")

// failingSettle is a host device whose Settle returns errStampLost at its
// call number fail, beside the stamps it converted, as cudadev does where
// CUDA refuses the conversion of one stamp: an error that is no fault,
// after which the device keeps running and stamping.
type failingSettle struct {
	device.Driver
	calls atomic.Int32
	fail  int32
}

func (f *failingSettle) Settle(into []device.Stamp) ([]device.Stamp, error) {
	out, err := f.Driver.Settle(into)
	if f.calls.Add(1) == f.fail && err == nil {
		return out, errStampLost
	}
	return out, err
}

// TestProfileSettleErrorNoFault has a device's Settle fail once with an
// error that is no fault: the device is not lost and keeps stamping, so
// the profile keeps settling it, and Stop returns the error.
func TestProfileSettleErrorNoFault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	op := hostdev.Open(hostdev.Config{Name: "profile-settle-error"})
	mk := op.Make
	op.Make = func(word *uint64) (device.Driver, error) {
		drv, err := mk(word)
		if err != nil {
			return nil, err
		}
		// Call 1 is Start's, which drops the stamps from before; call 2
		// is the test's settle below.
		return &failingSettle{Driver: drv, fail: 2}, nil
	}
	d := testutil.Open(t, op)
	s := submission(t, d, rig.Launch(resolve(t, d, "empty"), 0))
	p, err := StartOptions(Options{Every: time.Hour}, d)
	if err != nil {
		t.Fatal(err)
	}
	run := func() {
		for range 10 {
			if _, err := s.Take().Submit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Last().Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run()
	p.settle(false) // the settler's tick, which meets the error
	if err := d.Err(); err != nil {
		t.Fatalf("the device was lost: %v", err)
	}
	run()
	if err := p.Stop(ctx); !errors.Is(err, errStampLost) {
		t.Errorf("Stop returned %v, want the settle's error", err)
	}
	if n := len(p.Spans()); n != 20 {
		t.Errorf("%d spans, want the 20 values profiled", n)
	}
}
