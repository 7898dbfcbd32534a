package rig_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestLaunchAfterUnload checks that a launch of a function of an unloaded
// image is refused with ErrFreed, for a submission made before the Unload
// and for one made after, and that the device keeps working.
func TestLaunchAfterUnload(t *testing.T) {
	d := host(t, hostdev.Config{})
	img, err := d.LoadImage(hostdev.ImageOf("twice"))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		t.Fatal(err)
	}
	x := alloc(t, d, device.PinnedMemory, 4)
	before := sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	p, err := before.Take().Submit(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	if _, err := before.Take().Submit(context.Background(), x); !errors.Is(err, rig.ErrFreed) {
		t.Errorf("a submission made before the Unload: Submit returned %v, want ErrFreed", err)
	}
	after := sub(t, d, rig.FillBytes(0, 0, 4, 1), rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	if _, err := after.Take().Submit(context.Background(), x); !errors.Is(err, rig.ErrFreed) {
		t.Errorf("a submission made after the Unload: Submit returned %v, want ErrFreed", err)
	}
	// The device works on: another image's launches run.
	wait(t, submitOK(t, sub(t, d, rig.Launch(fn(t, d, "empty"), 0)).Take()))
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestUnloadRacesLaunches unloads an image while goroutines submit its
// launches: each Submit either runs (its point is reached with no error)
// or returns ErrFreed; the driver never sees a launch of an image it
// unloaded (the host driver refuses one, which Submit would return as a
// refusal).
func TestUnloadRacesLaunches(t *testing.T) {
	for round := range 20 {
		d := host(t, hostdev.Config{Name: "unload-race-" + itoa(int64(round))})
		img, err := d.LoadImage(hostdev.ImageOf("empty"))
		if err != nil {
			t.Fatal(err)
		}
		empty, err := img.Resolve("empty")
		if err != nil {
			t.Fatal(err)
		}
		s := sub(t, d, rig.Launch(empty, 0))
		start := make(chan struct{})
		var ran atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range 100000 {
					p, err := s.Take().Submit(context.Background())
					if err == nil {
						ran.Add(1)
						if i%8 != 0 {
							continue
						}
						if err = p.Wait(context.Background()); err == nil {
							continue
						}
					}
					if !errors.Is(err, rig.ErrFreed) {
						errs <- err
					}
					return
				}
			}()
		}
		close(start)
		// Unload while the launches stream in.
		for ran.Load() < int64(8*round) {
			runtime.Gosched()
		}
		if err := img.Unload(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		wait(t, d.Last())
		close(errs)
		for err := range errs {
			t.Errorf("round %d: a launch racing Unload returned %v, want nil or ErrFreed", round, err)
		}
		if _, err := s.Take().Submit(context.Background()); !errors.Is(err, rig.ErrFreed) {
			t.Fatalf("round %d: a launch after Unload returned %v, want ErrFreed", round, err)
		}
		if err := d.Err(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		_ = d.Close()
		<-d.Done()
	}
}

func submitOK(t testing.TB, r *rig.Run, bufs ...*rig.Buffer) rig.Point {
	t.Helper()
	p, err := r.Submit(context.Background(), bufs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
