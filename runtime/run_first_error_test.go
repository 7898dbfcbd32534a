package rig_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestRunFirstError: of the errors a run's setters meet, whichever the
// setters, Submit returns the first.
func TestRunFirstError(t *testing.T) {
	d := host(t, hostdev.Config{})
	s := sub(t, d, rig.Launch(fn(t, d, "twice"), 8))
	for _, c := range []struct {
		name string
		set  func(r *rig.Run)
		want string
	}{
		{"groups, then threads", func(r *rig.Run) { r.Groups(5, 1, 1, 1); r.Threads(0, -1, 1, 1) }, "groups of part 5"},
		{"threads, then shared", func(r *rig.Run) { r.Threads(0, -1, 1, 1); r.Shared(0, -1) }, "-1 threads along axis 0"},
		{"shared, then groups", func(r *rig.Run) { r.Shared(0, -1); r.Groups(7, 1, 1, 1) }, "-1 bytes of dynamic shared memory"},
		{"params, then groups", func(r *rig.Run) { _ = r.Params(3); r.Groups(0, -1, 1, 1) }, "part 3"},
		{"a setter, then params", func(r *rig.Run) { r.Groups(0, -2, 1, 1); r.SetUint64(0, 9, 1) }, "-2 groups along axis 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.Take()
			c.set(r)
			_, err := r.Submit(context.Background())
			if !errors.Is(err, rig.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Submit returned %v; want the first error, naming %q", err, c.want)
			}
		})
	}
}
