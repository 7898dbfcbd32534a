package rig_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

func init() {
	hostdev.RegisterParams("test_goexit", 0, func(*hostdev.Ctx) { runtime.Goexit() })
}

// TestKernelGoexit checks that a host kernel or fill that calls
// runtime.Goexit faults the device as a panic does: its waiters wake with
// the loss, which names the Goexit, Close gives everything back (Done),
// and the name opens again.
func TestKernelGoexit(t *testing.T) {
	goexitFill := hostdev.FillFunc(func(uintptr) { runtime.Goexit() })
	for _, c := range []struct {
		name string
		// groups is the groups of each launch part, launches their
		// indices.
		groups   int
		launches []int
		parts    func(goexit, empty *rig.Function) []rig.Part
	}{
		{"launch", 1, []int{0}, func(g, _ *rig.Function) []rig.Part { return []rig.Part{rig.Launch(g, 0)} }},
		{"launch of many groups", 256, []int{0}, func(g, _ *rig.Function) []rig.Part { return []rig.Part{rig.Launch(g, 0)} }},
		{"launch beside a copy", 64, []int{0, 2}, func(g, _ *rig.Function) []rig.Part {
			return []rig.Part{rig.Launch(g, 0), rig.FillBytes(0, 0, 64, 1), rig.Launch(g, 0)}
		}},
		{"copy after the launch", 4, []int{0}, func(g, _ *rig.Function) []rig.Part {
			return []rig.Part{rig.Launch(g, 0), rig.FillBytes(0, 0, 64, 1).After(0)}
		}},
		{"fill on COPY:0", 1, nil, func(_, _ *rig.Function) []rig.Part { return []rig.Part{rig.Fill(goexitFill, 0)} }},
		{"fill on COMPUTE:0", 1, nil, func(_, _ *rig.Function) []rig.Part {
			return []rig.Part{rig.Fill(goexitFill, 0).On(device.Compute)}
		}},
		{"fill after a launch", 8, []int{0, 2}, func(_, e *rig.Function) []rig.Part {
			return []rig.Part{rig.Launch(e, 0), rig.Fill(goexitFill, 0).After(0), rig.Launch(e, 0)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "goexit-" + strings.ReplaceAll(c.name, " ", "-")
			d := host(t, hostdev.Config{Name: name})
			goexit, empty := fn(t, d, "test_goexit"), fn(t, d, "empty")
			x := alloc(t, d, device.DeviceMemory, 64)
			parts := c.parts(goexit, empty)
			s := sub(t, d, parts...)
			r := s.Take()
			for _, i := range c.launches {
				r.Groups(i, c.groups, 1, 1)
			}
			p, err := r.Submit(context.Background(), x)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = p.Wait(ctx)
				cancel()
			}
			if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), "Goexit") {
				t.Fatalf("the work answered %v, want a loss that names runtime.Goexit", err)
			}
			// Work submitted after the fault fails at once.
			if _, err := sub(t, d, rig.Launch(empty, 0)).Take().Submit(context.Background()); !errors.Is(err, rig.ErrLost) {
				t.Fatalf("a submit after the loss answered %v, want the loss", err)
			}
			_ = d.Close()
			select {
			case <-d.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the device lost to a Goexit did not give everything back after Close")
			}
			again := host(t, hostdev.Config{Name: name})
			wait(t, submitOK(t, sub(t, again, rig.Launch(fn(t, again, "empty"), 0)).Take()))
		})
	}
}
