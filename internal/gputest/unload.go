package gputest

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// Unload checks on dev that a launch of a function of an unloaded
// image returns ErrFreed, for a submission made before the Unload and one
// made after, that launches racing an Unload either run or return
// ErrFreed, and that the device keeps working.
func Unload(t *testing.T, dev *rig.Device, bin []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	load := func() (*rig.Image, *rig.Function, *rig.Function) {
		img, err := dev.LoadImage(bin)
		if err != nil {
			t.Fatal(err)
		}
		twice, err := img.Resolve("twice")
		if err != nil {
			t.Fatal(err)
		}
		empty, err := img.Resolve("empty")
		if err != nil {
			t.Fatal(err)
		}
		return img, twice, empty
	}
	const n = 256
	x, err := dev.Alloc(device.PinnedMemory, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	xb := x.Bytes()
	for i := range n {
		binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(1))
	}
	double := func(twice *rig.Function) (*rig.Submission, func() (rig.Point, error)) {
		s, err := rig.NewSubmission(dev, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return s, func() (rig.Point, error) {
			r := s.Take()
			r.Threads(0, n, 1, 1)
			return r.Submit(ctx, x)
		}
	}
	img, twice, _ := load()
	_, before := double(twice)
	p, err := before()
	if err != nil {
		t.Fatal(err)
	}
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("the launch submitted before the Unload: %v", err)
	}
	if _, err := before(); !errors.Is(err, rig.ErrFreed) {
		t.Fatalf("a submission made before the Unload: Submit returned %v, want ErrFreed", err)
	}
	_, after := double(twice)
	if _, err := after(); !errors.Is(err, rig.ErrFreed) {
		t.Fatalf("a submission made after the Unload: Submit returned %v, want ErrFreed", err)
	}
	// The image loaded again runs, on the data the first launch doubled.
	img, twice, empty := load()
	_, again := double(twice)
	p, err = again()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(xb[4*i:])); v != 4 {
			t.Fatalf("x[%d] = %v after two doublings of 1", i, v)
		}
	}
	// Launches racing an Unload run or return ErrFreed; none faults.
	s, err := rig.NewSubmission(dev, rig.Launch(empty, 0))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var last rig.Point
	ran := 0
	start := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 1 << 16 {
				p, err := s.Take().Submit(ctx)
				if err != nil {
					if !errors.Is(err, rig.ErrFreed) {
						t.Errorf("a launch racing Unload returned %v, want nil or ErrFreed", err)
					}
					return
				}
				mu.Lock()
				ran++
				if last.Device() == nil || p.Value()-last.Value() < 1<<63 {
					last = p
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if last.Device() != nil {
		if err := last.Wait(ctx); err != nil {
			t.Fatalf("the last launch before the Unload: %v", err)
		}
	}
	if _, err := s.Take().Submit(ctx); !errors.Is(err, rig.ErrFreed) {
		t.Fatalf("a launch after the Unload returned %v, want ErrFreed", err)
	}
	if err := dev.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d launches ran before the Unload took effect", ran)
}
