package rig

import (
	"sync"
	"testing"
	"time"
)

// TestResolveBesideSlowEntry: while the driver makes one function of an
// image slowly (its Entry, or the reclamation rounds it needs), a Resolve
// of a function made already answers at once, and Unload waits for the
// Entry to end, so that no unload runs under it; the slow Resolve then
// returns its function.
func TestResolveBesideSlowEntry(t *testing.T) {
	f := newFake()
	inEntry, release := make(chan struct{}), make(chan struct{})
	f.onEntry = func(name string) {
		if name == "slow" {
			close(inEntry)
			<-release
		}
	}
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // a failure before the release still ends the Entry
	d := openFake(t, "resolve-beside-slow-entry", f)
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	made, err := img.Resolve("made")
	if err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		fn, err := img.Resolve("slow")
		if err == nil && fn.Name() != "slow" {
			t.Errorf("the slow Resolve made %q", fn.Name())
		}
		slow <- err
	}()
	<-inEntry

	again := make(chan *Function, 1)
	go func() {
		fn, _ := img.Resolve("made")
		again <- fn
	}()
	select {
	case fn := <-again:
		if fn != made {
			t.Errorf("a second Resolve of a made function returned %p, want %p", fn, made)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Resolve of a made function waited for another function's Entry")
	}

	unloaded := make(chan error, 1)
	go func() { unloaded <- img.Unload() }()
	select {
	case err := <-unloaded:
		t.Fatalf("Unload returned (%v) while the driver's Entry of the image ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	free()
	if err := <-slow; err != nil {
		t.Errorf("the slow Resolve: %v", err)
	}
	if err := <-unloaded; err != nil {
		t.Errorf("Unload: %v", err)
	}
	if _, err := img.Resolve("made"); err == nil {
		t.Error("a Resolve after Unload answered a function")
	}
}
