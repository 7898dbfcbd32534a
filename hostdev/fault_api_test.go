package hostdev_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// selfPanicking is an error whose Error method panics with the error
// itself, so that fmt, printing it, panics again.
type selfPanicking struct{}

func (e *selfPanicking) Error() string { panic(e) }

func init() {
	// faultapi.recover.* fault the device through Ctx, in a call that
	// recovers the panic that ends it, as a kernel that uses a library
	// with a recover of its own does.
	hostdev.RegisterParams("faultapi.recover.bytes", 0, func(k *hostdev.Ctx) {
		defer func() { _ = recover() }()
		k.Bytes(8, 8)
	})
	hostdev.RegisterParams("faultapi.recover.fault", 0, func(k *hostdev.Ctx) {
		defer func() { _ = recover() }()
		k.Fault("a fault the kernel recovered")
	})
	hostdev.RegisterParams("faultapi.recover.params", 0, func(k *hostdev.Ctx) {
		defer func() { _ = recover() }()
		k.Uint64(64)
	})
	hostdev.RegisterParams("faultapi.selfpanic", 0, func(*hostdev.Ctx) { panic(&selfPanicking{}) })
}

// openHost opens a host device configured by c, and closes it at the
// test's end, checking that it gives everything back.
func openHost(t *testing.T, c hostdev.Config) *rig.Device {
	t.Helper()
	d, err := rig.Open(context.Background(), hostdev.Open(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Close()
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not give everything back after Close", d.Name())
		}
	})
	return d
}

// TestKernelRecoversFault runs kernels that fault the device through Ctx
// (an address outside every region, Ctx.Fault, a read past the parameter
// bytes) and recover the panic that ends their call: the device is lost
// all the same, and later work does not run.
func TestKernelRecoversFault(t *testing.T) {
	for _, c := range []struct{ kernel, why string }{
		{"faultapi.recover.bytes", "outside every region"},
		{"faultapi.recover.fault", "a fault the kernel recovered"},
		{"faultapi.recover.params", "read 8 parameter bytes at 64"},
	} {
		t.Run(c.kernel, func(t *testing.T) {
			d := openHost(t, hostdev.Config{Name: "host-" + c.kernel})
			out, err := d.Alloc(device.PinnedMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			s, err := rig.NewSubmission(d, rig.Launch(fn(t, d, c.kernel), 0))
			if err != nil {
				t.Fatal(err)
			}
			r := s.Take()
			r.Groups(0, 8, 1, 1)
			p, err := r.Submit(context.Background())
			if err == nil {
				err = waitFor(t, p)
			}
			if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("the launch answered %v, want a loss naming %q", err, c.why)
			}
			after, err := rig.NewSubmission(d, rig.FillBytes(0, 0, 64, 7))
			if err != nil {
				t.Fatal(err)
			}
			if q, err := after.Take().Submit(context.Background(), out); err == nil {
				if err := waitFor(t, q); !errors.Is(err, rig.ErrLost) {
					t.Fatalf("work after the fault answered %v, want the loss", err)
				}
			} else if !errors.Is(err, rig.ErrLost) {
				t.Fatalf("a submit after the fault answered %v, want the loss", err)
			}
			if out.Bytes()[0] != 0 {
				t.Fatal("work after the fault ran")
			}
		})
	}
}

// TestPanicValueFormatPanics runs a kernel that panics with an error whose
// Error method panics as fmt prints it: the device is lost, with a cause
// that names the kernel and the value's type, and the process lives on.
func TestPanicValueFormatPanics(t *testing.T) {
	d := openHost(t, hostdev.Config{Name: "host-selfpanic"})
	s, err := rig.NewSubmission(d, rig.Launch(fn(t, d, "faultapi.selfpanic"), 0))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Take()
	r.Groups(0, 4, 1, 1)
	p, err := r.Submit(context.Background())
	if err == nil {
		err = waitFor(t, p)
	}
	if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), `kernel "faultapi.selfpanic"`) ||
		!strings.Contains(err.Error(), "selfPanicking") {
		t.Fatalf("the launch answered %v, want a loss naming the kernel and the panic's type", err)
	}
}

// TestOwnWordReadWhileClosing reads the points of a device that keeps its
// own word (Config.OwnWord) while Close gives everything back: rig reads
// the word through Signaled as it frees the word's region, and the read
// must find the word, not unmapped memory. The reader turns a fault of
// the host's MMU into a panic, which fails the test rather than the
// process.
func TestOwnWordReadWhileClosing(t *testing.T) {
	for round := range 100 {
		d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: fmt.Sprintf("host-own-%d", round), OwnWord: true}))
		if err != nil {
			t.Fatal(err)
		}
		if err := waitFor(t, submit(t, d, []rig.Part{rig.Launch(fn(t, d, "empty"), 0)}, nil)); err != nil {
			t.Fatal(err)
		}
		faulted := make(chan any, 1)
		reading := make(chan struct{})
		go func() {
			debug.SetPanicOnFault(true)
			defer func() { faulted <- recover() }()
			close(reading)
			for {
				select {
				case <-d.Done():
					return
				default:
				}
				for range 64 {
					d.Last().Reached()
				}
			}
		}()
		<-reading
		_ = d.Close()
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the device did not give everything back after Close")
		}
		if v := <-faulted; v != nil {
			t.Fatalf("round %d: reading the point while the device closed: %v", round, v)
		}
	}
}
