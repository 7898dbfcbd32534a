package rig

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
)

// nullDrv is the fake with a Room and a Submit that do nothing but store
// the word: what rig's submit path costs on its own.
type nullDrv struct {
	*fake
	w *uint64
}

func (n *nullDrv) Room(*device.Submission) device.RoomAnswer { return device.RoomAnswer{} }

func (n *nullDrv) Submit(s *device.Submission) device.SubmitAnswer {
	atomic.StoreUint64(n.w, s.Value)
	return device.SubmitAnswer{}
}

// BenchmarkSubmitOwnCost is Take, Threads and Submit of a one-launch
// submission on a driver whose Room and Submit only store the word: rig's
// own share of a submission's cost, which the GPU drivers' RigLaunch
// benchmarks add to their driver's.
func BenchmarkSubmitOwnCost(b *testing.B) {
	f := newFake()
	op := device.Opener{Name: "null", Make: func(w *uint64) (device.Driver, error) {
		f.facts.Word = w
		return &nullDrv{fake: f, w: w}, nil
	}}
	d, err := Open(context.Background(), op)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		b.Fatal(err)
	}
	fn, err := img.Resolve("empty")
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewSubmission(d, Launch(fn, 0))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		run := s.Take()
		run.Threads(0, 32, 1, 1)
		if _, err := run.Submit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
