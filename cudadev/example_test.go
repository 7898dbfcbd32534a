package cudadev_test

import (
	"context"
	"log"
	"os"

	"github.com/rig-go/rig/cudadev"
	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// The example: doubles x, n floats on GPU 0, with the kernel
//
//	extern "C" __global__ void twice(float *x) {
//	  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2;
//	}
//
// compiled into a cubin (a fatbin or PTX will do too). TestExampleTwice
// runs it on a GPU.
func Example() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, cudadev.GPU(0))
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	bin, err := os.ReadFile("testdata/kernels.sm_90.cubin")
	if err != nil {
		log.Fatal(err)
	}
	img, err := dev.LoadImage(bin)
	if err != nil {
		log.Fatal(err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		log.Fatal(err)
	}
	const n = 1 << 20
	x, err := dev.Alloc(device.Device, 4*n)
	if err != nil {
		log.Fatal(err)
	}
	// The kernel's parameters are its one pointer: the ref writes the
	// address of x's first byte into those 8 bytes.
	s, err := rig.NewSubmission(dev, rig.Launch(twice, 8, rig.Write(0, 0)))
	if err != nil {
		log.Fatal(err)
	}
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
}
