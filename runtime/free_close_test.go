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
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(entered); <-release }) }
	f.onFree.Store(&hook)
	freed := make(chan error, 1)
	go func() { freed <- b.Free() }()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	// A pause in which an unordered Close would stop the driver and close
	// Done under the Free.
	time.Sleep(50 * time.Millisecond)
	f.mu.Lock()
	stopped := f.stopped
	f.mu.Unlock()
	select {
	case <-d.Done():
		t.Error("Done closed while the buffer's Free was in the driver")
	default:
	}
	close(release)
	if stopped {
		t.Error("the driver was stopped while a Free was in flight")
	}
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
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
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(entered); <-release }) }
	fb.onFree.Store(&hook)
	freed := make(chan error, 1)
	go func() { freed <- x.Free() }()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	time.Sleep(50 * time.Millisecond)
	fb.mu.Lock()
	stopped := fb.stopped
	fb.mu.Unlock()
	select {
	case <-b.Done():
		t.Error("b's Done closed while its Free of the view was in the driver")
	default:
	}
	close(release)
	if stopped {
		t.Error("b's driver was stopped while its Free of the view was in flight")
	}
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
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
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(entered); <-release }) }
	fb.onLocate.Store(&hook)
	submitted := make(chan error, 1)
	go func() {
		_, err := s.Take().Submit(context.Background(), x)
		submitted <- err
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	time.Sleep(50 * time.Millisecond)
	fb.mu.Lock()
	stopped := fb.stopped
	fb.mu.Unlock()
	close(release)
	if stopped {
		t.Error("b's driver was stopped while b mapped a's buffer")
	}
	<-submitted
	if err := <-closed; err != nil {
		t.Fatal(err)
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
	entered, release := make(chan struct{}), make(chan struct{})
	vb.hook = func() { close(entered); <-release }
	submitted := make(chan error, 1)
	go func() {
		_, err := s.Take().Submit(context.Background(), x)
		submitted <- err
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	// A pause in which an unordered Close would stop a's driver, free
	// the region and close Done under b's mapping of it.
	time.Sleep(50 * time.Millisecond)
	fa.mu.Lock()
	stopped, frees := fa.stopped, fa.frees
	fa.mu.Unlock()
	done := false
	select {
	case <-a.Done():
		done = true
	default:
	}
	close(release)
	if stopped || frees > 0 || done {
		t.Errorf("while b mapped a's buffer: a's driver stopped %v, freed %d regions, Done closed %v", stopped, frees, done)
	}
	<-submitted
	if err := <-closed; err != nil {
		t.Fatal(err)
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
