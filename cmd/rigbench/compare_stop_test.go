package main

import (
	"context"
	"errors"
	"testing"
)

// TestSidesStopAtTheRunsEnd: once the run's context ended, a submit on
// rig's lanes and on the host baseline's alike returns the context's
// error and submits nothing, every time: a submitter that took its turn
// in the window as the run ended sends no submission more on one side
// than on the other.
func TestSidesStopAtTheRunsEnd(t *testing.T) {
	devs, _, err := openDevices(context.Background(), []spec{{Driver: "host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDevices(devs)
	const tries = 200
	e := &env{cfg: &config{Workload: "empty", C: 1, Depth: tries + 1}, devs: devs}
	rigLanes, err := workloads["empty"].lanes(e)
	if err != nil {
		t.Fatal(err)
	}
	base := hostBaseline(e)
	defer base.stop()
	baseLanes, err := base.start()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, side := range []struct {
		name   string
		submit func(context.Context) (int64, error)
	}{
		{"rig", func(ctx context.Context) (int64, error) { _, n, err := rigLanes[0].submit(ctx); return n, err }},
		{"the pipeline baseline", func(ctx context.Context) (int64, error) { _, n, err := baseLanes[0].submit(ctx); return n, err }},
	} {
		sent := 0
		for range tries {
			if _, err := side.submit(ctx); !errors.Is(err, context.Canceled) {
				sent++
			}
		}
		if sent > 0 {
			t.Errorf("%s: %d of %d submits after the run's end went ahead; want none", side.name, sent, tries)
		}
	}
}
