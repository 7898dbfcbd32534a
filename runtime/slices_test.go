package rig_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestUploadDownload moves Go slices into buffers of each kind and back,
// through the host's addresses where it has them and staged otherwise, and
// runs a kernel on the uploaded data in between.
func TestUploadDownload(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{})
	twice := fn(t, d, "twice")
	for _, kind := range []device.Memory{device.DeviceMemory, device.PinnedMemory, device.MappedMemory} {
		const n = 1000
		b := alloc(t, d, kind, 4*n+8)
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i) + 0.5
		}
		if err := rig.Upload(ctx, b, 8, in); err != nil {
			t.Fatalf("%s: upload: %v", kind, err)
		}
		s := sub(t, d, rig.Launch(twice, 8, rig.ReadWrite(0, 0).Plus(8)))
		r := s.Take()
		r.Groups(0, n, 1, 1)
		p, err := r.Submit(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		// Download waits for the launch, which writes b.
		out := make([]float32, n)
		if err := rig.Download(ctx, out, b, 8); err != nil {
			t.Fatalf("%s: download: %v", kind, err)
		}
		if !p.Reached() {
			t.Fatalf("%s: download returned before the launch that writes the buffer", kind)
		}
		for i := range out {
			if out[i] != 2*in[i] {
				t.Fatalf("%s: element %d is %v, not %v", kind, i, out[i], 2*in[i])
			}
		}
		var head [2]uint32
		if err := rig.Download(ctx, head[:], b, 0); err != nil || head != [2]uint32{} {
			t.Fatalf("%s: the 8 bytes before the upload read %v (%v)", kind, head, err)
		}
	}
}

func TestUploadDownloadRefusals(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{})
	b := alloc(t, d, device.DeviceMemory, 100)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"past the end", rig.Upload(ctx, b, 4, make([]uint32, 25))},
		{"negative offset", rig.Upload(ctx, b, -1, []byte{1})},
		{"offset past the end", rig.Download(ctx, []byte{1}, b, 101)},
		{"huge offset", rig.Download(ctx, []int64{1}, b, int(^uint(0)>>1))},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), "out of range") {
			t.Errorf("%s: %v", c.name, c.err)
		}
	}
	if err := rig.Upload(ctx, b, 100, []byte{}); err != nil {
		t.Errorf("an empty upload at the end: %v", err)
	}
	_ = b.Free()
	if err := rig.Upload(ctx, b, 0, []byte{1}); !errors.Is(err, rig.ErrFreed) {
		t.Errorf("upload into a freed buffer: %v", err)
	}
	if err := rig.Download(ctx, []byte{1}, b, 0); !errors.Is(err, rig.ErrFreed) {
		t.Errorf("download from a freed buffer: %v", err)
	}
}

// TestUploadWaitsForReaders: an upload does not overwrite bytes that a
// submitted launch still reads, and a cancelled upload writes nothing.
func TestUploadWaitsForReaders(t *testing.T) {
	d := host(t, hostdev.Config{})
	sleep := fn(t, d, "sleep")
	b := alloc(t, d, device.PinnedMemory, 16)
	s := sub(t, d, rig.Launch(sleep, 8, rig.Uses(0, rig.Reads)))
	p, err := sleepRun(s, 50*time.Millisecond).Submit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := rig.Upload(ctx, b, 0, []byte{7}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an upload cancelled while a launch reads the buffer: %v", err)
	}
	if b.Bytes()[0] != 0 {
		t.Fatal("a cancelled upload wrote the buffer")
	}
	if err := rig.Upload(context.Background(), b, 0, []byte{7}); err != nil {
		t.Fatal(err)
	}
	if !p.Reached() {
		t.Fatal("the upload wrote the buffer before the launch that reads it ended")
	}
}

// TestUploadDownloadNilBuffer: a nil buffer, or a zero Buffer, is an error
// matching ErrInvalid that names it, not a panic.
func TestUploadDownloadNilBuffer(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"upload into nil", func() error { return rig.Upload(ctx, nil, 0, []byte{1}) }},
		{"upload into a zero Buffer", func() error { return rig.Upload(ctx, &rig.Buffer{}, 0, []uint32{1}) }},
		{"download from nil", func() error { return rig.Download(ctx, []byte{1}, nil, 0) }},
		{"download from a zero Buffer", func() error { return rig.Download(ctx, []float64{1}, &rig.Buffer{}, 0) }},
		{"empty upload into nil", func() error { return rig.Upload(ctx, nil, 0, []byte{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked: %v", p)
					}
				}()
				err = c.call()
			}()
			if !errors.Is(err, rig.ErrInvalid) || !strings.Contains(err.Error(), "nil") {
				t.Fatalf("%v, want an error matching ErrInvalid that names the nil buffer", err)
			}
		})
	}
}

// TestEmptyUploadDownload: an Upload or Download of no elements returns
// nil on a live buffer, and the errors of any other on a freed buffer or
// one of a closed device, whatever the buffer's kind of memory.
func TestEmptyUploadDownload(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{})
	closed, err := rig.Open(ctx, hostdev.Open(hostdev.Config{Name: "empty-slices-closed"}))
	if err != nil {
		t.Fatal(err)
	}
	live := alloc(t, d, device.DeviceMemory, 16)
	freed := alloc(t, d, device.PinnedMemory, 16)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	ofClosed := alloc(t, closed, device.DeviceMemory, 16)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	<-closed.Done()
	for _, c := range []struct {
		name string
		b    *rig.Buffer
		want error
	}{
		{"live", live, nil},
		{"freed", freed, rig.ErrFreed},
		{"of a closed device", ofClosed, rig.ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range []struct {
				name string
				err  error
			}{
				{"upload of nil", rig.Upload(ctx, c.b, 0, []float32(nil))},
				{"upload of an empty slice", rig.Upload(ctx, c.b, 16, []byte{})},
				{"download into nil", rig.Download(ctx, []uint64(nil), c.b, 0)},
				{"download into an empty slice", rig.Download(ctx, make([]int16, 0, 8), c.b, 8)},
			} {
				if !errors.Is(e.err, c.want) || (c.want == nil) != (e.err == nil) {
					t.Errorf("%s: %v, want %v", e.name, e.err, c.want)
				}
			}
		})
	}
}

// TestStagedCopyObserverPanics: an Upload or Download that stages through
// Pinned memory, whose copy's observer panics, completes the copy and
// returns the observer's *ObserverPanicError: the bytes are in place.
func TestStagedCopyObserverPanics(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{})
	b := alloc(t, d, device.DeviceMemory, 4096)
	if b.Bytes() != nil {
		t.Fatal("the host driver's Device memory is addressed by the host: no staging to test")
	}
	in := make([]uint32, 1024)
	for i := range in {
		in[i] = uint32(i)*7 + 1
	}
	panicking := func() {
		d.SetTimed(true)
		d.SetObserver(observerFunc(func(*rig.Device, *device.Submission) { panic("observer") }))
	}
	panicking()
	var ope *rig.ObserverPanicError
	if err := rig.Upload(ctx, b, 0, in); !errors.As(err, &ope) {
		t.Fatalf("an upload whose observer panicked returned %v, want an *ObserverPanicError", err)
	}
	d.SetTimed(false)
	out := make([]uint32, len(in))
	if err := rig.Download(ctx, out, b, 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, in) {
		t.Fatal("the upload whose observer panicked left other bytes in the buffer")
	}
	in[0], in[1023] = 99, 98
	if err := rig.Upload(ctx, b, 0, in); err != nil {
		t.Fatal(err)
	}
	panicking()
	clear(out)
	if err := rig.Download(ctx, out, b, 0); !errors.As(err, &ope) {
		t.Fatalf("a download whose observer panicked returned %v, want an *ObserverPanicError", err)
	}
	if !slices.Equal(out, in) {
		t.Fatal("the download whose observer panicked left other bytes in the slice")
	}
	d.SetTimed(false)
}
