package rig_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestNever submits each part the host driver never runs: each is refused
// with an error naming the part, and nothing is submitted.
func TestNever(t *testing.T) {
	d := host(t, hostdev.Config{})
	empty := fn(t, d, "empty")
	x := alloc(t, d, device.PinnedMemory, 64)
	y := alloc(t, d, device.PinnedMemory, 64)
	cases := []struct {
		name  string
		parts []rig.Part
		set   func(r *rig.Run)
		part  int
	}{
		{"launch on COPY:0", []rig.Part{rig.Launch(empty, 0).On(rig.CopyQueue)}, nil, 0},
		{"queue 5", []rig.Part{rig.Launch(empty, 0).On(5)}, nil, 0},
		{"zero groups", []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Groups(0, 0, 1, 1) }, 0},
		{"zero threads", []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Threads(0, 1, 0, 1) }, 0},
		{"too many threads", []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Threads(0, 64, 32, 1) }, 0},
		{"too much shared memory", []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Shared(0, 1<<20) }, 0},
		{"copy past its source", []rig.Part{rig.Copy(0, 8, 1, 0, 64)}, nil, 0},
		{"copy past its destination", []rig.Part{rig.Copy(0, 0, 1, 1, 64)}, nil, 0},
		{"rows past the destination", []rig.Part{rig.CopyRows(rig.Rows{Src: 0, Dst: 1, RowBytes: 8, Rows: 4, DstPitch: 32})}, nil, 0},
		{"fill past its buffer", []rig.Part{rig.FillBytes(1, 60, 5, 1)}, nil, 0},
		{"words", []rig.Part{rig.Words([]uint32{1, 2})}, nil, 0},
		{"odd words", []rig.Part{rig.Launch(empty, 0), rig.Words([]uint32{1, 2, 3})}, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := rig.NewSubmission(d, c.parts...)
			if err != nil {
				t.Fatal(err)
			}
			before := d.Last()
			r := s.Take()
			if c.set != nil {
				c.set(r)
			}
			_, err = r.Submit(context.Background(), x, y)
			var ref *rig.RefusalError
			if !errors.Is(err, rig.ErrRefused) || !errors.As(err, &ref) {
				t.Fatalf("answer %v, want a refusal", err)
			}
			if ref.Part != c.part || ref.Reason == "" {
				t.Fatalf("refusal of part %d (%q), want part %d with a reason", ref.Part, ref.Reason, c.part)
			}
			if d.Last() != before || x.LastUse().Device() != nil || y.LastUse().Device() != nil {
				t.Fatal("a refused submission took a value or marked its buffers")
			}
		})
	}
	// The device still works.
	wait(t, submit(t, sub(t, d, rig.Copy(0, 0, 1, 0, 64)), x, y))
}

func TestSubmissionChecks(t *testing.T) {
	d := host(t, hostdev.Config{})
	other := host(t, hostdev.Config{})
	twice := fn(t, d, "twice")
	cases := []struct {
		name  string
		parts []rig.Part
	}{
		{"ref past the parameters", []rig.Part{rig.Launch(twice, 8, rig.Write(0, 4))}},
		{"ref to a negative buffer", []rig.Part{rig.Launch(twice, 8, rig.Write(-1, 0))}},
		{"ref of no access", []rig.Part{rig.Launch(twice, 8, rig.Ref{Buf: 0, At: 0})}},
		{"a function of another device", []rig.Part{rig.Launch(fn(t, other, "twice"), 8)}},
		{"no function", []rig.Part{rig.Launch(nil, 0)}},
		{"zero part", []rig.Part{{}}},
		{"after a missing part", []rig.Part{rig.Launch(twice, 8).After(3)}},
		{"after itself", []rig.Part{rig.Launch(twice, 8), rig.Launch(twice, 8).After(1)}},
		{"after a later part", []rig.Part{rig.Launch(twice, 8).After(1), rig.Launch(twice, 8)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := rig.NewSubmission(d, c.parts...); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	s := sub(t, d, rig.Launch(twice, 8, rig.Write(0, 0)))
	if _, err := s.Take().Submit(context.Background()); err == nil {
		t.Fatal("a submission of one buffer went through with none")
	}
	r := s.Take()
	r.Groups(0, -1, 1, 1)
	if _, err := r.Submit(context.Background(), alloc(t, d, device.PinnedMemory, 8)); err == nil {
		t.Fatal("negative groups went through")
	}
}
