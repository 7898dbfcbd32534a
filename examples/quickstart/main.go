// Command quickstart doubles 1,024 floats with rig on the host driver, the
// device every machine has. README.md quotes this file whole.
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"math"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

func main() {
	ctx := context.Background()

	// Open a device. On a GPU: rig.Open(ctx, cudadev.GPU(0)) or nvdev.GPU(0).
	dev, err := rig.Open(ctx, hostdev.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	// x: n float32s in Pinned memory, which both the host and the device
	// address, so the program writes and reads it through Bytes.
	const n = 1024
	x, err := dev.Alloc(device.Pinned, 4*n)
	if err != nil {
		log.Fatal(err)
	}
	for i := range n {
		binary.LittleEndian.PutUint32(x.Bytes()[4*i:], math.Float32bits(float32(i)))
	}

	// The kernel twice doubles x[i], one thread for each float. On the host
	// driver an image names Go kernels; on a GPU it is a cubin, fatbin or
	// PTX compiled from
	//
	//	extern "C" __global__ void twice(float *x) {
	//	  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2;
	//	}
	img, err := dev.LoadImage(hostdev.ImageOf("twice"))
	if err != nil {
		log.Fatal(err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		log.Fatal(err)
	}

	// A submission is a reusable template of parts. This one launches twice
	// with 8 bytes of parameters (the kernel's one pointer); rig.Write(0, 0)
	// says the launch writes buffer 0 (the first buffer given to Submit)
	// and stores that buffer's device address at parameter byte 0.
	s, err := rig.NewSubmission(dev, rig.Launch(twice, 8, rig.Write(0, 0)))
	if err != nil {
		log.Fatal(err)
	}

	// A run is one use of the template: n/256 groups of 256 threads for
	// part 0, then Submit with the buffers. Submit returns a Point, reached
	// once the device has finished this work and all its earlier work.
	run := s.Take()
	run.Groups(0, n/256, 1, 1)
	run.Threads(0, 256, 1, 1)
	p, err := run.Submit(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		log.Fatal(err)
	}

	at := func(i int) float32 {
		return math.Float32frombits(binary.LittleEndian.Uint32(x.Bytes()[4*i:]))
	}
	fmt.Println(at(0), at(1), at(255), at(1023))
}
