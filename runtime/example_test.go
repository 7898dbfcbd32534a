package rig_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// The example: a kernel twice doubles a buffer x of n floats in
// place, n a multiple of 256. On a GPU the image is a cubin compiled from
//
//	extern "C" __global__ void twice(float *x) {
//	  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2;
//	}
//
// and the opener cudadev.GPU(0); here it runs on the host driver.
func Example() {
	ctx := context.Background()
	g, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example"}))
	if err != nil {
		panic(err)
	}
	defer g.Close()

	const n = 1024
	x, err := g.Alloc(device.PinnedMemory, 4*n)
	if err != nil {
		panic(err)
	}
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(x.Bytes()[4*i:], math.Float32bits(float32(i)))
	}

	image, err := g.LoadImage(hostdev.ImageOf("twice"))
	if err != nil {
		panic(err)
	}
	twice, err := image.Resolve("twice")
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(g, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	if err != nil {
		panic(err)
	}
	run := s.Take()
	run.Groups(0, n/256, 1, 1)
	run.Threads(0, 256, 1, 1)
	p, err := run.Submit(ctx, x)
	if err != nil {
		panic(err)
	}
	if err := p.Wait(ctx); err != nil {
		panic(err)
	}
	at := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(x.Bytes()[4*i:])) }
	fmt.Println(at(0), at(1), at(255), at(1023))
	// Output: 0 2 510 2046
}

// A request that waits for its work at once submits and waits in one
// call: Run.Do.
func ExampleRun_Do() {
	ctx := context.Background()
	g, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-do"}))
	if err != nil {
		panic(err)
	}
	defer g.Close()

	x, err := g.Alloc(device.PinnedMemory, 4*256)
	if err != nil {
		panic(err)
	}
	binary.LittleEndian.PutUint32(x.Bytes()[4:], math.Float32bits(21))
	image, err := g.LoadImage(hostdev.ImageOf("twice"))
	if err != nil {
		panic(err)
	}
	twice, err := image.Resolve("twice")
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(g, rig.Launch(twice, 8, rig.ReadWrite(0, 0)))
	if err != nil {
		panic(err)
	}
	run := s.Take()
	run.Threads(0, 256, 1, 1)
	if _, err := run.Do(ctx, x); err != nil {
		panic(err)
	}
	fmt.Println(math.Float32frombits(binary.LittleEndian.Uint32(x.Bytes()[4:])))
	// Output: 42
}

// Fills: a buffer of floats set to 1.5 (FillFloat32), then a column of
// it, the first float of each row of 4, set to zero (FillRows), in one
// submission whose parts run in order on COPY:0, read back with
// Download.
func ExampleFillFloat32() {
	ctx := context.Background()
	g, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-fills"}))
	if err != nil {
		panic(err)
	}
	defer g.Close()

	const rows, cols = 3, 4
	x, err := g.Alloc(device.DeviceMemory, 4*rows*cols)
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(g,
		rig.FillFloat32(0, 0, rows*cols, 1.5),
		rig.FillRows(0, 0, 4, rows, 4*cols, 0))
	if err != nil {
		panic(err)
	}
	if _, err := s.Take().Do(ctx, x); err != nil {
		panic(err)
	}
	out := make([]float32, rows*cols)
	if err := rig.Download(ctx, out, x, 0); err != nil {
		panic(err)
	}
	for r := range rows {
		fmt.Println(out[r*cols : (r+1)*cols])
	}
	// Output:
	// [0 1.5 1.5 1.5]
	// [0 1.5 1.5 1.5]
	// [0 1.5 1.5 1.5]
}
