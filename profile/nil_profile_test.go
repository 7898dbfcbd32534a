package profile

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// TestNilAndZeroProfile calls Stop on a nil and a zero Profile, as a
// deferred Stop after a failed Start does: each returns an error matching
// rig.ErrInvalid, also when called again, rather than panicking or
// blocking; and a nil Profile's accessors return empty answers.
func TestNilAndZeroProfile(t *testing.T) {
	// A Stop that blocks ends with ctx, failing the test rather than
	// hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, p := range map[string]*Profile{"nil": nil, "zero": new(Profile)} {
		for i := range 2 {
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("Stop %d of a %s Profile panicked: %v", i, name, v)
					}
				}()
				if err := p.Stop(ctx); !errors.Is(err, rig.ErrInvalid) {
					t.Errorf("Stop %d of a %s Profile: %v, want ErrInvalid", i, name, err)
				}
			}()
		}
	}
	var p *Profile
	if s := p.Spans(); s != nil {
		t.Errorf("Spans of a nil Profile: %v", s)
	}
	if d := p.Devices(); len(d) != 0 {
		t.Errorf("Devices of a nil Profile: %v", d)
	}
	if from, to := p.Window(); from != 0 || to != 0 {
		t.Errorf("Window of a nil Profile: %d, %d", from, to)
	}
	if n := p.Dropped(); n != 0 {
		t.Errorf("Dropped of a nil Profile: %d", n)
	}
	if s := p.Summary(); s.Spans != 0 || len(s.Devices) != 0 {
		t.Errorf("Summary of a nil Profile: %+v", s)
	}
	var b bytes.Buffer
	if err := p.WriteTrace(&b); err != nil {
		t.Errorf("WriteTrace of a nil Profile: %v", err)
	}
}

// TestStartZeroDevice starts a profile on a zero Device, which Open did
// not make: Start returns an error that names it rather than panicking,
// and leaves the other device it was given free for another profile.
func TestStartZeroDevice(t *testing.T) {
	d := openHost(t, "profile-zero-device")
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("Start with a zero Device panicked: %v", v)
			}
		}()
		if p, err := Start(d, new(rig.Device)); err == nil || p != nil {
			t.Fatalf("Start with a zero Device: %v, %v; want an error", p, err)
		}
	}()
	p, err := Start(d)
	if err != nil {
		t.Fatalf("a profile after the refused one: %v", err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStartInvalid: StartOptions refuses arguments no device accepts with
// an error matching rig.ErrInvalid, and starts nothing, so that each
// device is free for a later profile.
func TestStartInvalid(t *testing.T) {
	d := openHost(t, "profile-invalid")
	for name, c := range map[string]struct {
		o    Options
		devs []*rig.Device
	}{
		"no device":      {Options{}, nil},
		"negative Every": {Options{Every: -1}, []*rig.Device{d}},
		"negative spans": {Options{MaxSpans: -1}, []*rig.Device{d}},
		"a nil device":   {Options{}, []*rig.Device{d, nil}},
		"a zero device":  {Options{}, []*rig.Device{d, new(rig.Device)}},
		"a device twice": {Options{}, []*rig.Device{d, d}},
	} {
		if p, err := StartOptions(c.o, c.devs...); !errors.Is(err, rig.ErrInvalid) || p != nil {
			t.Errorf("%s: %v, %v; want an error matching rig.ErrInvalid", name, p, err)
		}
	}
	p, err := Start(d)
	if err != nil {
		t.Fatalf("a profile after the refused ones: %v", err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
