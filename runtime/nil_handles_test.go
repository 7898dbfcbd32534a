package rig

import (
	"errors"
	"testing"
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
	} {
		if err := c.call(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
}
