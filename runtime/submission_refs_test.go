package rig_test

import (
	"context"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestSubmissionKeepsItsRefs: a submission keeps the refs NewSubmission
// checked. A caller that changes the slice of refs it passed, to build
// another submission from it, changes neither what the first submission
// checked nor the buffer it writes: its runs submit as before.
func TestSubmissionKeepsItsRefs(t *testing.T) {
	d := host(t, hostdev.Config{})
	twice := fn(t, d, "twice")
	fill := hostdev.FillFunc(func(uintptr) {})
	for _, c := range []struct {
		name   string
		part   func(refs []rig.Ref) rig.Part
		refs   []rig.Ref
		change rig.Ref
	}{
		{"launch: a buffer past those the run is given", func(refs []rig.Ref) rig.Part { return rig.Launch(twice, 8, refs...) },
			[]rig.Ref{rig.ReadWrite(0, 0)}, rig.ReadWrite(3, 0)},
		{"launch: an address past the parameters", func(refs []rig.Ref) rig.Part { return rig.Launch(twice, 8, refs...) },
			[]rig.Ref{rig.ReadWrite(0, 0)}, rig.ReadWrite(0, 4096)},
		{"launch: a negative buffer", func(refs []rig.Ref) rig.Part { return rig.Launch(twice, 8, refs...) },
			[]rig.Ref{rig.ReadWrite(0, 0)}, rig.ReadWrite(-1, 0)},
		{"fill: a buffer past those the run is given", func(refs []rig.Ref) rig.Part { return rig.Fill(fill, 0, refs...) },
			[]rig.Ref{rig.Uses(0, rig.Writes)}, rig.Uses(7, rig.Writes)},
	} {
		t.Run(c.name, func(t *testing.T) {
			refs := append([]rig.Ref(nil), c.refs...)
			s := sub(t, d, c.part(refs))
			refs[0] = c.change
			x := alloc(t, d, device.PinnedMemory, 64)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Submit panicked after the caller changed its refs: %v", p)
					}
				}()
				p, err := s.Take().Submit(context.Background(), x)
				if err != nil {
					t.Fatalf("Submit after the caller changed its refs: %v", err)
				}
				wait(t, p)
			}()
		})
	}
}
