package profile_test

import (
	"context"
	"fmt"
	"os"

	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/profile"
	rig "github.com/rig-go/rig/runtime"
)

// Example takes a profile of ten launches on a host device, whose spans
// name their parts, and exports it for Perfetto.
func Example() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example"}))
	if err != nil {
		panic(err)
	}
	defer func() { _ = dev.Close(); <-dev.Done() }()
	img, err := dev.LoadImage(hostdev.ImageOf("empty"))
	if err != nil {
		panic(err)
	}
	empty, err := img.Resolve("empty")
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(dev, rig.Launch(empty, 0))
	if err != nil {
		panic(err)
	}

	p, err := profile.Start(dev)
	if err != nil {
		panic(err)
	}
	for range 10 {
		if _, err := s.Take().Submit(ctx); err != nil {
			panic(err)
		}
	}
	if err := p.Stop(ctx); err != nil {
		panic(err)
	}

	spans := p.Spans()
	fmt.Println(len(spans), "spans; the first:", profile.Label(&spans[0]), "on", spans[0].Device, spans[0].Queue)
	fmt.Println(p.Summary().Devices[0].Count, "values on", p.Summary().Devices[0].Device)
	f, err := os.CreateTemp("", "trace-*.json")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := p.WriteTrace(f); err != nil {
		panic(err)
	}
	// Output:
	// 10 spans; the first: empty on example COMPUTE:0
	// 10 values on example
}
