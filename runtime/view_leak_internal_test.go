package rig

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
)

// viewDrv is a fake whose MapPeer makes a region of its own each call,
// counted, and whose Free counts the frees of those regions. hook, where
// set before use, runs inside the first MapPeer.
type viewDrv struct {
	*fake
	maps, frees atomic.Int32
	hook        func()
	hooked      atomic.Bool
}

type viewRegion struct{ n int32 }

func (v *viewDrv) MapPeer(_ device.Driver, _ device.Region) (device.Region, error) {
	r := &viewRegion{n: v.maps.Add(1)}
	if v.hook != nil && !v.hooked.Swap(true) {
		v.hook()
	}
	return r, nil
}

func (v *viewDrv) Free(r device.Region) error {
	if _, ok := r.(*viewRegion); ok {
		v.frees.Add(1)
	}
	return v.fake.Free(r)
}

func (v *viewDrv) Locate(r device.Region) device.Location {
	if vr, ok := r.(*viewRegion); ok {
		return device.Location{Address: uint64(vr.n) << 20, Handle: 1}
	}
	return v.fake.Locate(r)
}

// openViewPair opens device A on fa and device B on a viewDrv, named
// name-a and name-b: B maps A's buffers through views it counts.
func openViewPair(t *testing.T, name string, fa *fake) (a, b *Device, vb *viewDrv) {
	t.Helper()
	fb := newFake()
	vb = &viewDrv{fake: fb}
	a = openFake(t, name+"-a", fa)
	b = openWith(t, device.Opener{Name: name + "-b", Make: func(w *uint64) (device.Driver, error) {
		fb.facts.Word = w
		return vb, nil
	}})
	return a, b, vb
}

// TestViewsMappedAtOnceAreFreed: device B maps a buffer of device A at its
// first use on B. Where a second submitter of B maps it while the first
// one's mapping is under way, or the buffer is freed while it is, every
// mapping the driver made is freed once the devices close, and a use of
// the freed buffer returns an error matching ErrFreed. The buffer's Free
// frees them, once its uses are reached.
func TestViewsMappedAtOnceAreFreed(t *testing.T) {
	for _, c := range []struct {
		name string
		// during runs inside B's first mapping of x.
		during func(t *testing.T, b *Device, s *Submission, x, y *Buffer)
		want   error
	}{
		{"a second submitter maps it", func(t *testing.T, b *Device, s *Submission, x, y *Buffer) {
			if _, err := s.Take().Submit(context.Background(), x, y); err != nil {
				t.Errorf("the second submission: %v", err)
			}
		}, nil},
		{"the buffer is freed", func(t *testing.T, b *Device, s *Submission, x, y *Buffer) {
			_ = x.Free()
		}, ErrFreed},
	} {
		t.Run(c.name, func(t *testing.T) {
			fa := newFake()
			name := "view-leak-" + map[bool]string{true: "twice", false: "freed"}[c.want == nil]
			a, b, vb := openViewPair(t, name, fa)
			x, err := a.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			y, err := b.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewSubmission(b, Copy(0, 0, 1, 0, 64))
			if err != nil {
				t.Fatal(err)
			}
			vb.hook = func() { c.during(t, b, s, x, y) }
			p, err := s.Take().Submit(context.Background(), x, y)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("the first submission: %v, want %v", err, c.want)
			}
			if err == nil {
				if err := p.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			// x has no use left: its Free gives it back, and every
			// mapping of it, at once.
			_ = x.Free()
			if m, f := vb.maps.Load(), vb.frees.Load(); m != f {
				t.Fatalf("B's driver mapped the freed buffer %d times and freed %d of the mappings", m, f)
			}
			for _, d := range []*Device{b, a} {
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				<-d.Done()
			}
			if m, f := vb.maps.Load(), vb.frees.Load(); m != f {
				t.Fatalf("B's driver mapped the buffer %d times and freed %d of the mappings", m, f)
			}
		})
	}
}
