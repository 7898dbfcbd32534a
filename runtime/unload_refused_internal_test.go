package rig

import (
	"errors"
	"testing"
)

// TestUnloadRefusedRetriedAtClose: an Unload the driver refuses returns
// its error, and the driver keeps the image loaded: the device's reaping
// asks the driver to unload it again at Close, once.
func TestUnloadRefusedRetriedAtClose(t *testing.T) {
	f := newFake()
	refused := errors.New("the module is busy")
	f.unloadErr = []error{refused}
	d := openFake(t, "unload-refused", f)
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := img.Unload(); !errors.Is(err, refused) {
		t.Fatalf("a refused Unload returned %v, want the driver's refusal", err)
	}
	if err := img.Unload(); err != nil {
		t.Fatalf("a second Unload of the image returned %v, want nil", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	f.mu.Lock()
	n := f.unloads
	f.mu.Unlock()
	if n != 2 {
		t.Fatalf("the driver was asked to unload the image %d times, want 2: the refused one, and at Close", n)
	}
}
