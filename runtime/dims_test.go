package rig_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestDimsOfNoLaunch sets the groups, threads or shared memory of a part
// that is no launch (a copy beside a launch, the index that a caller
// meant for the launch): Submit refuses the run with an error matching
// ErrInvalid that names the part, rather than running the launch with
// its dimensions unset, and the device runs the next run.
func TestDimsOfNoLaunch(t *testing.T) {
	d := host(t, hostdev.Config{Name: "dims-of-no-launch"})
	empty := fn(t, d, "empty")
	x := alloc(t, d, device.DeviceMemory, 64)
	s := sub(t, d, rig.FillBytes(0, 0, 64, 1), rig.Launch(empty, 0))
	for _, c := range []struct {
		name string
		set  func(r *rig.Run)
	}{
		{"groups", func(r *rig.Run) { r.Groups(0, 64, 1, 1) }},
		{"threads", func(r *rig.Run) { r.Threads(0, 128, 1, 1) }},
		{"shared memory", func(r *rig.Run) { r.Shared(0, 1024) }},
	} {
		r := s.Take()
		c.set(r)
		_, err := r.Submit(context.Background(), x)
		if !errors.Is(err, rig.ErrInvalid) || !strings.Contains(err.Error(), "part 0") || !strings.Contains(err.Error(), "not a launch") {
			t.Errorf("%s of a copy: Submit answered %v, want ErrInvalid naming part 0, not a launch", c.name, err)
		}
	}
	r := s.Take()
	r.Groups(1, 64, 1, 1)
	wait(t, submitOK(t, r, x))
}
