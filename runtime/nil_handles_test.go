package rig

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestNilHandles calls Free, Resolve, Prepare and Unload on nil and zero
// buffers and images, as a deferred Free after a failed Alloc does: each
// returns an error matching ErrInvalid rather than panicking.
func TestNilHandles(t *testing.T) {
	var nb *Buffer
	var ni *Image
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Free of a nil buffer", nb.Free},
		{"Free of a zero buffer", new(Buffer).Free},
		{"Unload of a nil image", ni.Unload},
		{"Unload of a zero image", new(Image).Unload},
		{"Prepare of a nil image", func() error { return ni.Prepare("f") }},
		{"Resolve of a zero image", func() error { _, err := new(Image).Resolve("f"); return err }},
		{"Resolve of a nil image", func() error { _, err := ni.Resolve("f"); return err }},
		{"DMA of a nil buffer", func() error { _, err := nb.DMA("0000:41:00.0"); return err }},
		{"DMA of a zero buffer", func() error { _, err := new(Buffer).DMA("0000:41:00.0"); return err }},
	} {
		if err := c.call(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
}

// TestZeroBufferAccessors reads a nil and a zero Buffer's accessors: each
// returns its zero value rather than panicking, and LastUse the zero
// Point, which is reached.
func TestZeroBufferAccessors(t *testing.T) {
	for name, b := range map[string]*Buffer{"nil": nil, "zero": new(Buffer)} {
		if b.Len() != 0 || b.Kind() != 0 || b.Device() != nil || b.Address() != 0 || b.Bytes() != nil {
			t.Errorf("a %s Buffer: Len %d, Kind %v, Device %v, Address %d, Bytes %v; want zero values", name, b.Len(), b.Kind(), b.Device(), b.Address(), b.Bytes())
		}
		if p := b.LastUse(); p != (Point{}) || !p.Reached() {
			t.Errorf("a %s Buffer's LastUse: %+v, want the zero Point", name, p)
		}
	}
}

// TestOpenNilContext: Open with a nil Context panics with a message that
// says so, as Wait and Submit do, before it reserves the name.
func TestOpenNilContext(t *testing.T) {
	f := newFake()
	defer func() {
		if v := recover(); v == nil || v != "rig: Open with a nil Context" {
			t.Fatalf("Open with a nil Context: %v, want the panic that names it", v)
		}
	}()
	//lint:ignore SA1012 the nil Context is the case under test
	_, _ = Open(nil, f.opener("open-nil-ctx"))
}

// TestNilContextNamed: each call that takes a Context panics at a nil one
// with a message that names the call, whatever else it is given.
func TestNilContextNamed(t *testing.T) {
	f := newFake()
	d, err := Open(context.Background(), f.opener("nil-ctx-named"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close() }()
	b, err := d.Alloc(DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	s := empty(t, d)
	var nilCtx context.Context // the case under test
	for _, c := range []struct {
		call string
		f    func()
	}{
		{"Upload", func() { _ = Upload(nilCtx, b, 0, []byte{}) }},
		{"Download", func() { _ = Download(nilCtx, []byte{1}, b, 0) }},
		{"WaitAll", func() { _ = WaitAll(nilCtx) }},
		{"Wait", func() { _ = Point{}.Wait(nilCtx) }},
		{"Submit", func() { _, _ = s.Take().Submit(nilCtx) }},
		{"Do", func() { _, _ = s.Take().Do(nilCtx) }},
	} {
		func() {
			want := "rig: " + c.call + " with a nil Context"
			defer func() {
				if v := recover(); v != want {
					t.Errorf("%s with a nil Context: %v, want the panic %q", c.call, v, want)
				}
			}()
			c.f()
		}()
	}
}

// TestNilDeviceAndFunction: Close of a nil or zero Device (a deferred
// Close after a failed Open) returns an error matching ErrInvalid,
// Capability of one declares nothing, and a nil or zero Function's
// accessors return zero values, rather than panicking.
func TestNilDeviceAndFunction(t *testing.T) {
	for name, d := range map[string]*Device{"nil": nil, "zero": new(Device)} {
		if err := d.Close(); !errors.Is(err, ErrInvalid) {
			t.Errorf("Close of a %s Device: %v, want ErrInvalid", name, err)
		}
		if c, ok := Capability(d, testKey); ok || c != "" {
			t.Errorf("Capability of a %s Device: %q, %v; want none", name, c, ok)
		}
		for _, c := range []struct {
			call string
			f    func() error
		}{
			{"Alloc", func() error { _, err := d.Alloc(device.DeviceMemory, 4); return err }},
			{"MapHost", func() error { _, err := d.MapHost(make([]byte, 8)); return err }},
			{"LoadImage", func() error { _, err := d.LoadImage([]byte("x")); return err }},
			{"Settle", func() error { _, err := d.Settle(nil); return err }},
			{"NewSubmission", func() error { _, err := NewSubmission(d); return err }},
		} {
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("%s of a %s Device panicked: %v", c.call, name, v)
					}
				}()
				if err := c.f(); !errors.Is(err, ErrInvalid) {
					t.Errorf("%s of a %s Device: %v, want an error matching ErrInvalid", c.call, name, err)
				}
			}()
		}
	}
	for name, f := range map[string]*Function{"nil": nil, "zero": new(Function)} {
		if f.Name() != "" || f.Params() != 0 || f.Threads() != 0 || f.Shared() != 0 || f.Entry() != nil || f.Layout() != nil {
			t.Errorf("a %s Function: Name %q, Params %d, Threads %d, Shared %d, Entry %v, Layout %v; want zero values", name, f.Name(), f.Params(), f.Threads(), f.Shared(), f.Entry(), f.Layout())
		}
	}
}

var testKey = device.NewKey[string]("rig test")

// TestOpenWithNoMake: Open of an opener with no Make returns an error
// matching ErrInvalid that names the opener, as the other calls do for
// arguments no device accepts, and leaves the name free.
func TestOpenWithNoMake(t *testing.T) {
	const name = "open-no-make"
	if _, err := Open(context.Background(), device.Opener{Name: name}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open of an opener with no Make: %v, want an error matching ErrInvalid that names %q", err, name)
	}
	openFake(t, name, newFake())
}

// TestZeroSubmission: a run of a nil or zero Submission, which
// NewSubmission did not make, is refused by Submit and Do with an error
// matching ErrInvalid, and Release does nothing, rather than panicking.
func TestZeroSubmission(t *testing.T) {
	for name, s := range map[string]*Submission{"nil": nil, "zero": new(Submission)} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("a run of a %s Submission panicked: %v", name, v)
				}
			}()
			if d := s.Device(); d != nil {
				t.Errorf("a %s Submission's device is %v, want nil", name, d)
			}
			if p, err := s.Take().Submit(context.Background()); !errors.Is(err, ErrInvalid) || p != (Point{}) {
				t.Errorf("Submit of a run of a %s Submission: %v, %v; want the zero Point and ErrInvalid", name, p, err)
			}
			if _, err := s.Take().Do(context.Background()); !errors.Is(err, ErrInvalid) {
				t.Errorf("Do of a run of a %s Submission: %v, want ErrInvalid", name, err)
			}
			r := s.Take()
			r.Groups(0, 1, 1, 1)
			r.Release()
			r.Release()
			if _, err := r.Submit(context.Background()); !errors.Is(err, ErrInvalid) {
				t.Errorf("Submit of a released run of a %s Submission: %v, want ErrInvalid", name, err)
			}
		}()
	}
}
