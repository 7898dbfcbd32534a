package rig_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// A program registers its host kernels once, at init. example.scale
// multiplies the float32 x[i] by a: its parameters are a pointer (8 bytes)
// and a float (4 bytes), laid out as a C compiler lays out
//
//	extern "C" __global__ void scale(float *x, float a);
//
// so that a run sets them by index (Run.SetFloat32).
func init() {
	hostdev.RegisterArgs("example.scale", func(k *hostdev.Ctx) {
		x := k.Float32s(k.Uint64(0)+4*uint64(k.Index()), 1)
		x[0] *= math.Float32frombits(k.Uint32(8))
	}, 8, 4)
}

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
	x, err := g.Alloc(rig.PinnedMemory, 4*n)
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
	// Buffer 0 of each run goes into twice's parameter 0; the kernel reads
	// and writes it.
	s, err := rig.NewSubmission(g, rig.Kernel(twice, rig.ReadWriteArg(0, 0)))
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

	x, err := g.Alloc(rig.PinnedMemory, 4*256)
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
	s, err := rig.NewSubmission(g, rig.Kernel(twice, rig.ReadWriteArg(0, 0)))
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
	x, err := g.Alloc(rig.DeviceMemory, 4*rows*cols)
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

// Open opens a device with a driver's opener; Close stops it, and Done is
// closed once it has given back everything it held. Calls after Close
// return an error matching ErrClosed.
func ExampleOpen() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-open"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(dev.Name(), dev.Arch(), dev.Facts().Queues)

	if err := dev.Close(); err != nil {
		panic(err)
	}
	<-dev.Done()
	_, err = dev.Alloc(rig.DeviceMemory, 64)
	fmt.Println(errors.Is(err, rig.ErrClosed))
	// Output:
	// example-open host [COMPUTE:0 COPY:0]
	// true
}

// Upload and Download copy Go slices into and out of a buffer of any kind
// of memory, here the device's own, which the host does not address. Each
// waits for the work that uses the buffer first.
func ExampleUpload() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-upload"}))
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	x, err := dev.Alloc(rig.DeviceMemory, 4*4)
	if err != nil {
		panic(err)
	}
	if err := rig.Upload(ctx, x, 0, []float32{1, 2, 3, 4}); err != nil {
		panic(err)
	}
	// Two floats from byte 8 on.
	out := make([]float32, 2)
	if err := rig.Download(ctx, out, x, 8); err != nil {
		panic(err)
	}
	fmt.Println(out, x.Bytes() == nil)
	// Output: [3 4] true
}

// Alloc takes memory from the device's budget, and Free gives it back
// once the work that uses the buffer is done (here at once: none does).
// Uses of a freed buffer return an error matching ErrFreed; a second Free
// does nothing.
func ExampleDevice_Alloc() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-alloc", Budget: 1 << 20}))
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	b, err := dev.Alloc(rig.PinnedMemory, 100)
	if err != nil {
		panic(err)
	}
	used, limit := dev.Budget()
	fmt.Println(b.Len(), b.Kind(), used, limit)

	// More than the whole budget fails at once.
	_, err = dev.Alloc(rig.DeviceMemory, 2<<20)
	fmt.Println(errors.Is(err, rig.ErrOutOfMemory))

	if err := b.Free(); err != nil {
		panic(err)
	}
	used, _ = dev.Budget()
	fmt.Println(used, b.Free(), errors.Is(rig.Upload(ctx, b, 0, []byte{1}), rig.ErrFreed))
	// Output:
	// 100 Pinned 4096 1048576
	// true
	// 0 <nil> true
}

// A kernel whose image states its parameters' layout (here a host kernel
// registered with hostdev.RegisterArgs) takes its buffers by parameter
// index (ReadWriteArg) and its other parameters from the run's setters,
// which check each value's size against the parameter's. A setter's error
// is returned by Submit.
func ExampleRun_SetFloat32() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-args"}))
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	img, err := dev.LoadImage(hostdev.ImageOf("example.scale"))
	if err != nil {
		panic(err)
	}
	scale, err := img.Resolve("example.scale")
	if err != nil {
		panic(err)
	}
	x, err := dev.Alloc(rig.DeviceMemory, 4*4)
	if err != nil {
		panic(err)
	}
	if err := rig.Upload(ctx, x, 0, []float32{1, 2, 3, 4}); err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(dev, rig.Kernel(scale, rig.ReadWriteArg(0, 0)))
	if err != nil {
		panic(err)
	}

	run := s.Take()
	run.Threads(0, 4, 1, 1)
	run.SetFloat32(0, 1, 2.5) // a = 2.5
	if _, err := run.Do(ctx, x); err != nil {
		panic(err)
	}

	// Parameter 1 is a float32: an int64 does not fit it.
	run = s.Take()
	run.SetInt64(0, 1, 3)
	_, err = run.Submit(ctx, x)
	fmt.Println(errors.Is(err, rig.ErrInvalid))

	out := make([]float32, 4)
	if err := rig.Download(ctx, out, x, 0); err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// true
	// [2.5 5 7.5 10]
}

// Each device is a timeline of its own, and a buffer of one goes into the
// submissions of another as it is: rig orders the work by the buffers it
// uses, across devices too. Here a fills x on its timeline, and b's copy
// of x into y waits for that fill without the host waiting in between.
// On a GPU the devices would be cudadev.Timeline(0, 0) and
// cudadev.Timeline(0, 1), or nvdev's, two timelines of one GPU.
func ExampleWaitAll() {
	ctx := context.Background()
	a, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-a"}))
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-b"}))
	if err != nil {
		panic(err)
	}
	defer b.Close()

	x, err := a.Alloc(rig.DeviceMemory, 4*4)
	if err != nil {
		panic(err)
	}
	y, err := b.Alloc(rig.DeviceMemory, 4*4)
	if err != nil {
		panic(err)
	}
	fill, err := rig.NewSubmission(a, rig.FillFloat32(0, 0, 4, 7))
	if err != nil {
		panic(err)
	}
	copyXY, err := rig.NewSubmission(b, rig.Copy(0, 0, 1, 0, 4*4))
	if err != nil {
		panic(err)
	}

	pa, err := fill.Take().Submit(ctx, x)
	if err != nil {
		panic(err)
	}
	pb, err := copyXY.Take().Submit(ctx, x, y)
	if err != nil {
		panic(err)
	}
	// Points of several devices: WaitAll returns once each is reached.
	if err := rig.WaitAll(ctx, pa, pb); err != nil {
		panic(err)
	}
	out := make([]float32, 4)
	if err := rig.Download(ctx, out, y, 0); err != nil {
		panic(err)
	}
	fmt.Println(pa.Device().Name(), pb.Device().Name(), out)
	// Output: example-a example-b [7 7 7 7]
}

// A fault of a device's work loses the device: its waiters wake with an
// error that matches ErrLost, Lost is closed, and later calls fail at once.
// A server selects on Lost, closes the lost device and opens its name
// again to go on. The host driver's "panic" kernel injects such a fault.
func ExampleDevice_Lost() {
	ctx := context.Background()
	op := hostdev.Open(hostdev.Config{Name: "example-lost"})
	dev, err := rig.Open(ctx, op)
	if err != nil {
		panic(err)
	}
	img, err := dev.LoadImage(hostdev.ImageOf("panic"))
	if err != nil {
		panic(err)
	}
	fn, err := img.Resolve("panic")
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(dev, rig.Kernel(fn))
	if err != nil {
		panic(err)
	}
	_, err = s.Take().Do(ctx)
	var le *rig.LostError
	fmt.Println(errors.Is(err, rig.ErrLost), errors.As(err, &le) && le.Device == "example-lost")

	<-dev.Lost()
	_, err = dev.Alloc(rig.DeviceMemory, 64)
	fmt.Println(errors.Is(err, dev.Err()))

	// Close the lost device, and open its name again.
	_ = dev.Close()
	<-dev.Done()
	dev, err = rig.Open(ctx, op)
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	fmt.Println(dev.Err())
	// Output:
	// true true
	// true
	// <nil>
}

// MapHost lends the device host memory without a copy: the device's work
// writes b itself. The host driver maps host memory where its Config says
// so, as the GPU drivers do.
func ExampleDevice_MapHost() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-maphost", MapsHost: true}))
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	b := make([]byte, 8)
	buf, err := dev.MapHost(b)
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(dev, rig.FillBytes(0, 2, 4, 0xab))
	if err != nil {
		panic(err)
	}
	if _, err := s.Take().Do(ctx, buf); err != nil {
		panic(err)
	}
	fmt.Printf("% x\n", b)
	if err := buf.Free(); err != nil {
		panic(err)
	}
	// Output: 00 00 ab ab ab ab 00 00
}

// A server makes one submission at start and shares it: each request, on
// a goroutine of its own, takes a run of it and waits for its work with the
// request's context, here one with a deadline. The errors to tell apart
// are tested with errors.Is: a deadline that passed returns
// context.DeadlineExceeded itself, a lost device an error matching ErrLost,
// a closed one ErrClosed.
func ExampleRun_Submit() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-server"}))
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	img, err := dev.LoadImage(hostdev.ImageOf("twice"))
	if err != nil {
		panic(err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(dev, rig.Kernel(twice, rig.ReadWriteArg(0, 0)))
	if err != nil {
		panic(err)
	}

	// request doubles 256 floats of value v in a buffer of its own.
	request := func(ctx context.Context, v float32) (float32, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		x, err := dev.Alloc(rig.DeviceMemory, 4*256)
		if err != nil {
			return 0, err
		}
		defer x.Free() // given back once the work that uses x is done
		in := make([]float32, 256)
		for i := range in {
			in[i] = v
		}
		if err := rig.Upload(ctx, x, 0, in); err != nil {
			return 0, err
		}
		run := s.Take()
		run.Threads(0, 256, 1, 1)
		p, err := run.Submit(ctx, x)
		if err != nil {
			return 0, err
		}
		if err := p.Wait(ctx); err != nil {
			return 0, err
		}
		out := make([]float32, 1)
		err = rig.Download(ctx, out, x, 4*255)
		return out[0], err
	}

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
	)
	for g := range 64 {
		wg.Go(func() {
			got, err := request(ctx, float32(g))
			var what string
			switch {
			case err == nil && got == 2*float32(g):
				what = "ok"
			case err == nil:
				what = "wrong"
			case errors.Is(err, context.DeadlineExceeded):
				what = "past its deadline"
			case errors.Is(err, rig.ErrLost):
				what = "device lost" // a server reopens it
			case errors.Is(err, rig.ErrClosed):
				what = "device closed"
			default:
				what = err.Error()
			}
			mu.Lock()
			counts[what]++
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println(counts)
	// Output: map[ok:64]
}

// A wait whose context ends returns ctx.Err() itself, and leaves the work
// running: its point says when the work is done, and until then the
// buffers it uses are not the host's to write. Here the host driver's
// "sleep" kernel runs for 200 ms, past a deadline of 5 ms.
func ExamplePoint_Wait() {
	ctx := context.Background()
	dev, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-deadline"}))
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	img, err := dev.LoadImage(hostdev.ImageOf("sleep"))
	if err != nil {
		panic(err)
	}
	sleep, err := img.Resolve("sleep")
	if err != nil {
		panic(err)
	}
	s, err := rig.NewSubmission(dev, rig.Kernel(sleep))
	if err != nil {
		panic(err)
	}
	run := s.Take()
	run.SetUint64(0, 0, uint64(200*time.Millisecond)) // the nanoseconds to sleep
	p, err := run.Submit(ctx)
	if err != nil {
		panic(err)
	}

	dctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	err = p.Wait(dctx)
	fmt.Println(err == context.DeadlineExceeded, p.Reached())

	// The work still runs; a wait with no deadline sees it end.
	fmt.Println(p.Wait(ctx), p.Reached())
	// Output:
	// true false
	// <nil> true
}

// Copies of rows move a block of a matrix between two buffers: here the
// columns 2 to 5 of a 4x8 matrix of bytes on device a, after a fill of
// rows (FillRows) sets them, into a packed 4x4 block on device b. b's copy
// reads a buffer that a's fill writes, so it waits for the fill's point on
// the device, with no wait by the host in between; a run whose work shares
// no buffer with another device's waits for that device's point through
// Run.After.
func ExampleCopyRows() {
	ctx := context.Background()
	a, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-rows-a"}))
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "example-rows-b"}))
	if err != nil {
		panic(err)
	}
	defer b.Close()

	const rows, cols = 4, 8
	m, err := a.Alloc(rig.DeviceMemory, rows*cols)
	if err != nil {
		panic(err)
	}
	in := make([]byte, rows*cols)
	for i := range in {
		in[i] = byte(i)
	}
	if err := rig.Upload(ctx, m, 0, in); err != nil {
		panic(err)
	}
	block, err := b.Alloc(rig.DeviceMemory, rows*4)
	if err != nil {
		panic(err)
	}

	// On a: bytes 2 to 3 of each row (pitch cols) set to 0xff.
	fill, err := rig.NewSubmission(a, rig.FillRows(0, 2, 2, rows, cols, 0xff))
	if err != nil {
		panic(err)
	}
	// On b: 4 rows of 4 bytes from byte 2 of buffer 0, rows cols bytes
	// apart, into buffer 1, rows packed (DstPitch 0 is RowBytes).
	copyBlock, err := rig.NewSubmission(b, rig.CopyRows(rig.Rows{
		Src: 0, Dst: 1, SrcOffset: 2, RowBytes: 4, Rows: rows, SrcPitch: cols,
	}))
	if err != nil {
		panic(err)
	}
	pa, err := fill.Take().Submit(ctx, m)
	if err != nil {
		panic(err)
	}
	pb, err := copyBlock.Take().Submit(ctx, m, block)
	if err != nil {
		panic(err)
	}
	if err := pb.Wait(ctx); err != nil {
		panic(err)
	}
	fmt.Println(pa.Reached())

	out := make([]byte, rows*4)
	if err := rig.Download(ctx, out, block, 0); err != nil {
		panic(err)
	}
	for r := range rows {
		fmt.Printf("% x\n", out[4*r:4*r+4])
	}
	if err := block.Free(); err != nil {
		panic(err)
	}
	_, err = copyBlock.Take().Submit(ctx, m, block)
	fmt.Println(errors.Is(err, rig.ErrFreed))
	// Output:
	// true
	// ff ff 04 05
	// ff ff 0c 0d
	// ff ff 14 15
	// ff ff 1c 1d
	// true
}

// Run.After orders a run after a point of another device with which its
// work shares no buffer: here b's fill of y starts once a's run of the
// host driver's "sleep" kernel (2 ms) completed, and the host waits for
// b's point alone. On a GPU the devices would be two timelines of one GPU,
// and the wait runs there, on a's word.
func ExampleRun_After() {
	ctx := context.Background()
	a, err := rig.Open(ctx, hostdev.Timeline(1))
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := rig.Open(ctx, hostdev.Timeline(2))
	if err != nil {
		panic(err)
	}
	defer b.Close()

	img, err := a.LoadImage(hostdev.ImageOf("sleep"))
	if err != nil {
		panic(err)
	}
	sleep, err := img.Resolve("sleep")
	if err != nil {
		panic(err)
	}
	slow, err := rig.NewSubmission(a, rig.Launch(sleep, sleep.Params()))
	if err != nil {
		panic(err)
	}
	run := slow.Take()
	binary.LittleEndian.PutUint64(run.Params(0), uint64(2*time.Millisecond))
	pa, err := run.Submit(ctx)
	if err != nil {
		panic(err)
	}

	y, err := b.Alloc(rig.PinnedMemory, 16)
	if err != nil {
		panic(err)
	}
	fill, err := rig.NewSubmission(b, rig.FillBytes(0, 0, 16, 7))
	if err != nil {
		panic(err)
	}
	after := fill.Take()
	after.After(pa)
	pb, err := after.Submit(ctx, y)
	if err != nil {
		panic(err)
	}
	if err := pb.Wait(ctx); err != nil {
		panic(err)
	}
	fmt.Println(a.Name(), "reached:", pa.Reached(), "y:", y.Bytes()[:4])
	// Output: host/1 reached: true y: [7 7 7 7]
}
