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

// TestDeferredUnloadRefusedAtClose: an Unload of an image whose launch
// still runs is deferred; where the device closes before that launch ends,
// the reaping gives the deferred unload back, and where the driver refuses
// it then, the image is still unloaded, and its place freed, before Done.
func TestDeferredUnloadRefusedAtClose(t *testing.T) {
	f := newFake()
	f.held = true
	d := openFake(t, "unload-refused-reap", f)
	img, err := d.LoadImage([]byte("place"))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := img.Resolve("k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubmission(d, Launch(fn, 16))
	if err != nil {
		t.Fatal(err)
	}
	submit(t, s)
	if err := img.Unload(); err != nil {
		t.Fatalf("the Unload of an image whose launch runs returned %v, want nil", err)
	}
	f.mu.Lock()
	f.unloadErr = []error{errors.New("the module is busy")}
	f.mu.Unlock()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	if used, _ := d.Budget(); used != 0 {
		t.Fatalf("%d bytes still counted once the device gave everything back, want 0: the image's place was never freed", used)
	}
	f.mu.Lock()
	n := f.unloads
	f.mu.Unlock()
	if n != 2 {
		t.Fatalf("the driver was asked to unload the image %d times, want 2: the refused one at the reaping, and once more", n)
	}
}
