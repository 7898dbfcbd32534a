// Command quickstart doubles 1,024 floats with rig on the host driver, the
// device every machine has. README.md quotes this file whole.
package main

import (
	"context"
	"fmt"
	"log"

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

	// x: n float32s of the device's own memory, filled from a Go slice.
	const n = 1024
	x, err := dev.Alloc(rig.DeviceMemory, 4*n)
	if err != nil {
		log.Fatal(err)
	}
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i)
	}
	if err := rig.Upload(ctx, x, 0, in); err != nil {
		log.Fatal(err)
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

	// A submission is a reusable template of parts. This one launches twice;
	// rig.ReadWriteArg(0, 0) passes buffer 0 (the first buffer given to
	// Submit) as the kernel's parameter 0, and says the kernel reads and
	// writes it, so that later work that uses x waits for this launch.
	s, err := rig.NewSubmission(dev, rig.Kernel(twice, rig.ReadWriteArg(0, 0)))
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

	// Download waits for the work that writes x, then copies it out.
	out := make([]float32, n)
	if err := rig.Download(ctx, out, x, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0], out[1], out[255], out[1023])
}
