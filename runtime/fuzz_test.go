package rig_test

import (
	"context"
	"errors"
	"math/bits"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// FuzzSubmission builds submissions from random parts, refs and dimensions:
// each is either refused with an error or runs to its point, and the device
// keeps working either way.
func FuzzSubmission(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 1, 8, 1, 1})
	f.Add([]byte{1, 0, 0, 64, 2, 3, 200, 7})
	f.Add([]byte{2, 1, 1, 0, 0, 0, 9, 4, 3, 1, 2, 3, 4, 5})
	f.Add([]byte{0, 1, 5, 0, 255, 255, 255, 255, 3, 3, 3})
	f.Add([]byte{5, 0, 0, 0, 0, 0, 0, 0, 0, 16, 1, 255, 255, 255, 255, 255, 255, 255, 156, 0, 0, 0, 0, 0, 0, 0, 200})
	f.Add([]byte{6, 1, 0, 0, 0, 0, 0, 0, 0, 8, 127, 255, 255, 255, 255, 255, 255, 252, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{7, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255})
	// A ref whose two offsets add to 2^64.
	f.Add([]byte{6, 1, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0})
	var (
		d    *rig.Device
		fns  []*rig.Function
		bufs []*rig.Buffer
	)
	// shut closes d and waits until it has given back what it held, so
	// that a fuzz run of an hour keeps one device's memory.
	shut := func() error {
		if d == nil {
			return nil
		}
		_ = d.Close()
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			return errors.New("a closed device did not give its memory back")
		}
		d, fns, bufs = nil, fns[:0], bufs[:0]
		return nil
	}
	f.Cleanup(func() {
		if err := shut(); err != nil {
			f.Error(err)
		}
	})
	// reopen opens a fresh device after a loss, closing the lost one: a
	// kernel that strays out of its buffers faults the host device, as it
	// would a GPU.
	reopen := func() error {
		if err := shut(); err != nil {
			return err
		}
		var err error
		if d, err = rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: "fuzz-" + itoa(names.Add(1)), Ring: 64, Grow: true})); err != nil {
			return err
		}
		for _, k := range []string{"empty", "twice", "copy"} {
			img, err := d.LoadImage(hostdev.ImageOf(k))
			if err != nil {
				return err
			}
			f, err := img.Resolve(k)
			if err != nil {
				return err
			}
			fns = append(fns, f)
		}
		for _, c := range []struct {
			kind device.Memory
			n    int
		}{{device.PinnedMemory, 4096}, {device.PinnedMemory, 4096}, {device.DeviceMemory, 512}} {
			b, err := d.Alloc(c.kind, c.n)
			if err != nil {
				return err
			}
			bufs = append(bufs, b)
		}
		return nil
	}
	if err := reopen(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if d.Err() != nil {
			if err := reopen(); err != nil {
				t.Fatal(err)
			}
		}
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		// big is an integer of eight bytes, of any size or sign.
		big := func() uint64 {
			var v uint64
			for range 8 {
				v = v<<8 | uint64(next())
			}
			return v
		}
		var parts []rig.Part
		var dims [][7]int
		// set says which parts' dimensions are set: every launch's, and
		// some of the other parts', which Submit refuses.
		var set []bool
		// past says that a ref's offsets add past 2^64, which
		// NewSubmission refuses.
		past := false
		for len(data) > 0 && len(parts) < 6 {
			var p rig.Part
			kind := next() % 8
			switch kind {
			case 0, 1:
				f := fns[next()%len(fns)]
				params := next() % 40
				var refs []rig.Ref
				if params >= 8 {
					refs = append(refs, rig.ReadWrite(next()%len(bufs), (next()%(params-7))))
				}
				p = rig.Launch(f, params, refs...)
			case 2:
				p = rig.Copy(next()%len(bufs), uint64(next()*16), next()%len(bufs), uint64(next()*16), uint64(next()*16))
			case 3:
				p = rig.FillBytes(next()%len(bufs), uint64(next()*8), uint64(next()*8), byte(next()))
			case 4:
				p = rig.Words([]uint32{uint32(next()), uint32(next())})
			case 5:
				p = rig.Copy(next()%len(bufs), big(), next()%len(bufs), big(), big())
			case 6:
				f, params := fns[next()%len(fns)], int(big())
				r := rig.ReadWrite(int(big()), int(big()))
				a, b := big(), big()
				if _, c := bits.Add64(a, b, 0); c != 0 {
					past = true
				}
				p = rig.Launch(f, params, r.Plus(a).Plus(b))
			case 7:
				p = rig.CopyRows(rig.Rows{Src: next() % len(bufs), Dst: next() % len(bufs), SrcOffset: big(), DstOffset: big(),
					RowBytes: big(), Rows: big(), SrcPitch: big(), DstPitch: big()})
			}
			if q := next(); q%7 == 0 {
				p = p.On(q % 3)
			}
			if a := next(); a%5 == 0 && len(parts) > 0 {
				p = p.After(a % (len(parts) + 1))
			}
			parts = append(parts, p)
			dims = append(dims, [7]int{next() % 5, next() % 3, 1, next() % 300, next() % 5, 1, next() * 300})
			set = append(set, kind == 0 || kind == 1 || kind == 6 || next()%8 == 0)
		}
		s, err := rig.NewSubmission(d, parts...)
		if past && err == nil {
			t.Fatal("NewSubmission took a ref whose offsets add past 2^64")
		}
		if err != nil {
			if !errors.Is(err, rig.ErrInvalid) {
				t.Fatalf("NewSubmission's error does not match ErrInvalid: %v", err)
			}
			return
		}
		r := s.Take()
		for i, p := range dims {
			if !set[i] {
				continue
			}
			r.Groups(i, p[0], p[1], p[2])
			r.Threads(i, p[3], p[4], p[5])
			r.Shared(i, p[6])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pt, err := r.Submit(ctx, bufs...)
		if err == nil {
			err = pt.Wait(ctx)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the submission neither ran nor was refused: %v", err)
		}
		if err != nil && !errors.Is(err, rig.ErrLost) && !errors.Is(err, rig.ErrRefused) && !errors.Is(err, rig.ErrInvalid) {
			t.Fatalf("neither refused, invalid nor lost: %v", err)
		}
		if (errors.Is(err, rig.ErrRefused) || errors.Is(err, rig.ErrInvalid)) && d.Err() != nil {
			t.Fatalf("a refusal lost the device: %v", d.Err())
		}
	})
}
