package rig

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestDMAOfAFreedBuffer: DMA of a freed buffer returns an error matching
// ErrFreed and does not call the driver, whether the buffer's memory went
// back at once or waits for its work.
func TestDMAOfAFreedBuffer(t *testing.T) {
	for _, c := range []struct {
		name string
		held bool // the buffer's work is not reached when it is freed
	}{
		{"released", false},
		{"deferred", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.onDMA = func() {}
			d := openFake(t, "dma-freed-"+c.name, f)
			b, err := d.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			if c.held {
				f.held = true
				s, err := NewSubmission(d, FillBytes(0, 0, 64, 1))
				if err != nil {
					t.Fatal(err)
				}
				p := submit(t, s, b)
				defer f.complete(p.v)
			}
			if err := b.Free(); err != nil {
				t.Fatal(err)
			}
			_, err = b.DMA("0000:41:00.0")
			if !errors.Is(err, ErrFreed) {
				t.Fatalf("DMA of a freed buffer: %v, want an error matching ErrFreed", err)
			}
			if n := f.dmas.Load(); n != 0 {
				t.Fatalf("DMA of a freed buffer called the driver %d times", n)
			}
		})
	}
}

// TestDMAKeepsItsBuffer: a Buffer that the caller does not use after its
// DMA call is not freed by the garbage collector while the driver's DMA
// runs.
func TestDMAKeepsItsBuffer(t *testing.T) {
	f := newFake()
	freedDuring := false
	f.onDMA = func() {
		for range 10 {
			runtime.GC()
			time.Sleep(time.Millisecond)
			f.mu.Lock()
			freed := f.frees > 0
			f.mu.Unlock()
			if freed {
				freedDuring = true
				return
			}
		}
	}
	d := openFake(t, "dma-keeps", f)
	b, err := d.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.DMA("0000:41:00.0"); err != nil {
		t.Fatal(err)
	}
	if freedDuring {
		t.Fatal("the buffer's region was freed while the driver's DMA of it ran")
	}
}

// TestCopyFreedDuringItsWait: an Upload or Download that waits for the
// work that writes its buffer, and meanwhile sees the buffer freed,
// returns an error matching ErrFreed, as it does for a buffer freed before
// the call, rather than nil for bytes copied to or from memory that went
// back (zeroed here, as a driver that unmaps Mapped memory at Free
// leaves it).
func TestCopyFreedDuringItsWait(t *testing.T) {
	for _, c := range []struct {
		name string
		copy func(ctx context.Context, b *Buffer) error
	}{
		{"upload", func(ctx context.Context, b *Buffer) error { return Upload(ctx, b, 0, []byte{1, 2, 3, 4}) }},
		{"download", func(ctx context.Context, b *Buffer) error {
			out := make([]byte, 16)
			return Download(ctx, out, b, 0)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.hostMem, f.held = true, true
			d := openFake(t, "copy-freed-"+c.name, f)
			b, err := d.Alloc(device.PinnedMemory, 16)
			if err != nil {
				t.Fatal(err)
			}
			host := b.Bytes()
			zero := func() { clear(host) }
			f.onFree.Store(&zero)
			s, err := NewSubmission(d, FillBytes(0, 0, 16, 7))
			if err != nil {
				t.Fatal(err)
			}
			p := submit(t, s, b)
			parked := d.Stats().WaitsParked
			done := make(chan error, 1)
			go func() { done <- c.copy(context.Background(), b) }()
			// The copy parks in its wait for the fill.
			for d.Stats().WaitsParked == parked {
				time.Sleep(time.Millisecond)
			}
			if err := b.Free(); err != nil {
				t.Fatal(err)
			}
			f.complete(p.v)
			if err := <-done; !errors.Is(err, ErrFreed) {
				t.Fatalf("%s of a buffer freed during its wait: %v, want an error matching ErrFreed", c.name, err)
			}
		})
	}
}
