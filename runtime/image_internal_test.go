package rig

import (
	"errors"
	"testing"
)

// TestPrepareAfterUnload: Prepare of an unloaded image returns an error
// matching ErrFreed and does not call the driver, as Resolve does.
func TestPrepareAfterUnload(t *testing.T) {
	f := newFake()
	d := openFake(t, "prepare-unloaded", f)
	img, err := d.LoadImage([]byte("image"))
	if err != nil {
		t.Fatal(err)
	}
	if err := img.Prepare("k"); err != nil {
		t.Fatal(err)
	}
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	before := f.prepares.Load()
	if err := img.Prepare("k"); !errors.Is(err, ErrFreed) {
		t.Fatalf("Prepare after Unload: %v, want an error matching ErrFreed", err)
	}
	if n := f.prepares.Load() - before; n != 0 {
		t.Fatalf("Prepare after Unload called the driver %d times", n)
	}
}
