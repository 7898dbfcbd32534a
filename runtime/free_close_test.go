package rig

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestFreeBesideClose frees a buffer that no work uses, whose driver Free
// is slow, while Close runs: the driver's Stop waits for the Free in
// flight, as it waits for the other calls of the object paths, and Done
// closes only once the buffer was given back.
func TestFreeBesideClose(t *testing.T) {
	f := newFake()
	d, err := Open(context.Background(), f.opener("free-beside-close"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	stopped, done, err, cerr := besideClose(d, f, onFree(f), b.Free, nil)
	if stopped || done {
		t.Errorf("while the buffer's Free was in the driver: driver stopped %v, Done closed %v", stopped, done)
	}
	if err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	<-d.Done()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frees != 1 || !f.stopped {
		t.Fatalf("frees %d, stopped %v; want 1, true", f.frees, f.stopped)
	}
}

// TestFreeBesidePeerClose frees a buffer of device a whose view device b
// holds (b's work read it), while b closes: b's Free of the view, in
// flight, ends before b's driver stops, and b's Done waits for it.
func TestFreeBesidePeerClose(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.peer, fb.peer = true, true
	a := openFake(t, "free-peer-a", fa)
	b, err := Open(context.Background(), fb.opener("free-peer-b"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := submit(t, launchOn(t, b, Read(0, 0)), x).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped, done, err, cerr := besideClose(b, fb, onFree(fb), x.Free, nil)
	if stopped || done {
		t.Errorf("while b freed its view of a's buffer: b's driver stopped %v, b's Done closed %v", stopped, done)
	}
	if err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	<-b.Done()
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.frees < 1 {
		t.Fatalf("b freed %d regions, want the view", fb.frees)
	}
}

// TestMapBesidePeerClose closes device b while a submission of b maps a
// buffer of device a (b's first use of it): b's driver stops only once
// the view is made and among b's views, and b's reaping gives it back
// before b's Done.
func TestMapBesidePeerClose(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.peer, fb.peer = true, true
	a := openFake(t, "map-peer-a", fa)
	b, err := Open(context.Background(), fb.opener("map-peer-b"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	s := launchOn(t, b, Read(0, 0))
	submitX := func() error { _, err := s.Take().Submit(context.Background(), x); return err }
	stopped, _, _, cerr := besideClose(b, fb, onLocate(fb), submitX, nil)
	if stopped {
		t.Error("b's driver was stopped while b mapped a's buffer")
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	<-b.Done()
	x.s.mu.Lock()
	_, kept := x.s.views[b]
	x.s.mu.Unlock()
	if kept {
		t.Error("b's view of a's buffer outlived b's Done")
	}
}

// TestMapBesideOwnerClose closes device a while device b maps a buffer of
// a (b's first use of it): b's driver maps a's region, and a's driver
// stops and gives the region back only once the mapping is made, and
// every mapping b made is freed once both devices close.
func TestMapBesideOwnerClose(t *testing.T) {
	fa, fb := newFake(), newFake()
	vb := &viewDrv{fake: fb}
	a := openFake(t, "map-owner-a", fa)
	b := openWith(t, device.Opener{Name: "map-owner-b", Make: func(w *uint64) (device.Driver, error) {
		fb.facts.Word = w
		return vb, nil
	}})
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	s := launchOn(t, b, Read(0, 0))
	submitX := func() error { _, err := s.Take().Submit(context.Background(), x); return err }
	var frees int
	during := func() {
		fa.mu.Lock()
		frees = fa.frees
		fa.mu.Unlock()
	}
	stopped, done, _, cerr := besideClose(a, fa, func(h func()) { vb.hook = h }, submitX, during)
	if stopped || frees > 0 || done {
		t.Errorf("while b mapped a's buffer: a's driver stopped %v, freed %d regions, Done closed %v", stopped, frees, done)
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	<-a.Done()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	if m, f := vb.maps.Load(), vb.frees.Load(); m != f {
		t.Fatalf("b's driver mapped a's buffer %d times and freed %d of the mappings", m, f)
	}
}

// TestViewedBufferAfterOwnerClose: once device a closes, work of device b
// that uses a buffer of a, which b mapped before the close, is refused
// with an error matching ErrClosed, as a first use is, also while a's
// reaping waits for b's earlier work on another of a's buffers.
func TestViewedBufferAfterOwnerClose(t *testing.T) {
	fa, fb := newFake(), newFake()
	fb.held, fa.peer, fb.peer = true, true, true
	a, b := openFake(t, "viewed-closed-a", fa), openFake(t, "viewed-closed-b", fb)
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	y, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	reads := launchOn(t, b, Read(0, 0))
	writes := launchOn(t, b, Write(0, 0))
	// b maps x, and its read of x ends.
	fb.complete(submit(t, reads, x).v)
	// b's read of y holds a's reaping: y's free waits for it.
	held := submit(t, reads, y)
	_ = y.Free()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Submission{reads, writes} {
		if _, err := s.Take().Submit(context.Background(), x); !errors.Is(err, ErrClosed) {
			t.Errorf("b's work on a buffer of a closed device returned %v, want ErrClosed", err)
		}
	}
	fb.complete(held.v)
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
	for _, s := range []*Submission{reads, writes} {
		if _, err := s.Take().Submit(context.Background(), x); !errors.Is(err, ErrClosed) {
			t.Errorf("after Done, b's work on a buffer of a closed device returned %v, want ErrClosed", err)
		}
	}
}

// besideClose runs call on a goroutine of its own until the hook it gives
// arm holds the call inside a driver, closes d beside it, and after a
// pause in which an unordered Close would stop d's driver (f, a fake) or
// close d's Done under the call, reports whether it did, running during
// (where not nil) in the pause too; then it lets the call return, and
// returns the call's and the Close's errors once both ended.
func besideClose(d *Device, f *fake, arm func(hook func()), call func() error, during func()) (stopped, done bool, callErr, closeErr error) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	arm(func() { once.Do(func() { close(entered); <-release }) })
	called := make(chan error, 1)
	go func() { called <- call() }()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	time.Sleep(50 * time.Millisecond)
	f.mu.Lock()
	stopped = f.stopped
	f.mu.Unlock()
	select {
	case <-d.Done():
		done = true
	default:
	}
	if during != nil {
		during()
	}
	close(release)
	callErr = <-called
	closeErr = <-closed
	return stopped, done, callErr, closeErr
}

// onFree and onLocate arm the fake's hooks.
func onFree(f *fake) func(func())   { return func(h func()) { f.onFree.Store(&h) } }
func onLocate(f *fake) func(func()) { return func(h func()) { f.onLocate.Store(&h) } }
