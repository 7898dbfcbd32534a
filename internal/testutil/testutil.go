// Package testutil holds the helpers that the tests of rig's packages
// share: the check that skips a GPU test where no GPU is offered, and
// must-helpers that open a device, allocate, resolve, submit and wait,
// failing the test with the error where a step fails.
//
// Every helper takes the test's testing.TB and may be called from the
// test's goroutine only (they call t.Fatal). Devices opened here are
// closed when the test ends, and the test fails if a closed device did
// not give everything back within Timeout.
package testutil

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// Timeout bounds each wait of these helpers: a close giving everything
// back, and a point reached by Wait and SubmitWait.
const Timeout = 20 * time.Second

// GPU reports whether GPU tests run: where the environment sets RIG_GPU=1,
// on a machine with an NVIDIA GPU.
func GPU() bool { return os.Getenv("RIG_GPU") == "1" }

// NeedGPU skips the test or benchmark unless GPU tests run.
func NeedGPU(t testing.TB) {
	t.Helper()
	if !GPU() {
		t.Skip("RIG_GPU unset: needs an NVIDIA GPU")
	}
}

// Open opens the device op makes through rig and closes it when the test
// ends, failing the test if it did not give everything back within
// Timeout.
func Open(t testing.TB, op device.Opener) *rig.Device {
	t.Helper()
	dev, err := rig.Open(context.Background(), op)
	if err != nil {
		t.Fatalf("open %s: %v", op.Name, err)
	}
	t.Cleanup(func() {
		_ = dev.Close()
		select {
		case <-dev.Done():
		case <-time.After(Timeout):
			t.Errorf("%s: the closed device did not give everything back in %v", dev.Name(), Timeout)
		}
	})
	return dev
}

// CloseDone closes dev and waits, at most Timeout for the close and
// Timeout more, until it gave everything back; it reports whether it did,
// failing the test where it did not.
func CloseDone(t testing.TB, dev *rig.Device) bool {
	t.Helper()
	t0 := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- dev.Close() }()
	var err error
	select {
	case err = <-closed:
	case <-time.After(Timeout):
		t.Errorf("%s: Close did not return in %v", dev.Name(), Timeout)
		return false
	}
	select {
	case <-dev.Done():
		t.Logf("%s closed (%v) and gave everything back in %v", dev.Name(), err, time.Since(t0))
		return true
	case <-time.After(Timeout):
		t.Errorf("%s closed (%v) and did not give everything back in %v", dev.Name(), err, Timeout)
		return false
	}
}

// Load loads the image bin on dev.
func Load(t testing.TB, dev *rig.Device, bin []byte) *rig.Image {
	t.Helper()
	img, err := dev.LoadImage(bin)
	if err != nil {
		t.Fatalf("%s: load image: %v", dev.Name(), err)
	}
	return img
}

// Resolve resolves the function name of img.
func Resolve(t testing.TB, img *rig.Image, name string) *rig.Function {
	t.Helper()
	f, err := img.Resolve(name)
	if err != nil {
		t.Fatalf("resolve %s: %v", name, err)
	}
	return f
}

// Functions loads bin on dev and resolves each of names, in their order.
func Functions(t testing.TB, dev *rig.Device, bin []byte, names ...string) []*rig.Function {
	t.Helper()
	img := Load(t, dev, bin)
	fs := make([]*rig.Function, len(names))
	for i, n := range names {
		fs[i] = Resolve(t, img, n)
	}
	return fs
}

// Alloc allocates n bytes of memory m on dev.
func Alloc(t testing.TB, dev *rig.Device, m device.Memory, n int) *rig.Buffer {
	t.Helper()
	b, err := dev.Alloc(m, n)
	if err != nil {
		t.Fatalf("%s: alloc of %d bytes of %v memory: %v", dev.Name(), n, m, err)
	}
	return b
}

// Submission makes a submission of parts on dev.
func Submission(t testing.TB, dev *rig.Device, parts ...rig.Part) *rig.Submission {
	t.Helper()
	s, err := rig.NewSubmission(dev, parts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Context returns a context that ends after d or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Wait waits for p, at most Timeout.
func Wait(t testing.TB, p rig.Point) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("wait for value %d: %+v", p.Value(), err)
	}
}

// SubmitWait submits r with bufs and waits for its point, both within d,
// and returns the point.
func SubmitWait(t testing.TB, r *rig.Run, d time.Duration, bufs ...*rig.Buffer) rig.Point {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p, err := r.Submit(ctx, bufs...)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("wait for value %d: %+v", p.Value(), err)
	}
	return p
}

// ReadSum sums b's bytes, failing the test where reading b faults: debug's
// SetPanicOnFault turns a read of unmapped memory into a panic that
// ReadSum recovers, rather than a crash of the test binary. It checks that
// a slice Bytes returned is still readable.
func ReadSum(t testing.TB, b []byte) (sum int) {
	t.Helper()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("reading a slice that Bytes returned faulted: %v", r)
		}
	}()
	for _, c := range b {
		sum += int(c)
	}
	return sum
}

// Settle collects garbage until dev's budget counts used bytes, so that
// the frees deferred to points and cleanups have run, failing the test
// where it does not within Timeout.
func Settle(t testing.TB, dev *rig.Device, used int64) {
	t.Helper()
	for end := time.Now().Add(Timeout); ; time.Sleep(time.Millisecond) {
		runtime.GC()
		if u, _ := dev.Budget(); u == used {
			return
		}
		if time.Now().After(end) {
			u, _ := dev.Budget()
			t.Fatalf("%s: the budget counts %d bytes, want %d", dev.Name(), u, used)
		}
	}
}
