package cudadev_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"testing"

	"github.com/rig-go/rig/cudadev"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// Example doubles n floats on GPU 0 with the kernel
//
//	extern "C" __global__ void twice(float *x) {
//	  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2;
//	}
//
// compiled into a cubin (a fatbin or PTX will do too), and prints
//
//	0 2 510 2046
//
// It has no Output line, so go test compiles it without running it: it
// needs an NVIDIA GPU, and go test runs an example with an Output line on
// every machine. TestGPUExample runs it where RIG_GPU=1 and checks what it
// prints.
func Example() {
	if err := twiceOnGPU(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func twiceOnGPU(ctx context.Context, w io.Writer) error {
	dev, err := rig.Open(ctx, cudadev.GPU(0))
	if err != nil {
		return err
	}
	defer func() { _ = dev.Close(); <-dev.Done() }()
	// The test kernels' image for the GPU (nvcc's cubin where one is
	// built, PTX otherwise); a program reads its own with os.ReadFile or
	// go:embed.
	img, err := dev.LoadImage(testkernels.Image(dev.Arch()))
	if err != nil {
		return err
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		return err
	}
	const n = 1 << 20
	x, err := dev.Alloc(device.DeviceMemory, 4*n)
	if err != nil {
		return err
	}
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i)
	}
	if err := rig.Upload(ctx, x, 0, in); err != nil {
		return err
	}
	// The kernel's parameter 0 is x's address; it reads and writes x.
	s, err := rig.NewSubmission(dev, rig.Kernel(twice, rig.ReadWriteArg(0, 0)))
	if err != nil {
		return err
	}
	run := s.Take()
	run.Groups(0, n/256, 1, 1)
	run.Threads(0, 256, 1, 1)
	if _, err := run.Submit(ctx, x); err != nil {
		return err
	}
	// Download waits for the launch, which writes x.
	out := make([]float32, n)
	if err := rig.Download(ctx, out, x, 0); err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, out[0], out[1], out[255], out[1023])
	return err
}

func TestGPUExample(t *testing.T) {
	testutil.NeedGPU(t)
	var b bytes.Buffer
	if err := twiceOnGPU(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "0 2 510 2046\n"; got != want {
		t.Fatalf("the example printed %q, want %q", got, want)
	}
}
