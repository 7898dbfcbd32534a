package rig

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestViewFreedBeforeItsRegion: a buffer of device A that device B mapped
// is freed while B's Close is under way (it waits for a counted call), so
// that B's view stays for B's reaping. A's driver frees the buffer's
// region only once B's driver freed the view of it, and before B's Done:
// a driver may require a view freed before the memory it maps (nvdev's
// views of another GPU's memory do).
func TestViewFreedBeforeItsRegion(t *testing.T) {
	fa := newFake()
	a, b, vb := openViewPair(t, "view-first", fa)
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	y, err := b.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubmission(b, Copy(0, 0, 1, 0, 64))
	if err != nil {
		t.Fatal(err)
	}
	if err := submit(t, s, x, y).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var early, regionFrees atomic.Int32
	hook := func() {
		regionFrees.Add(1)
		if vb.frees.Load() != vb.maps.Load() {
			early.Add(1)
		}
	}
	fa.onFree.Store(&hook)
	entered, release := make(chan struct{}), make(chan struct{})
	vb.fake.onDMA = func() {
		close(entered)
		<-release
	}
	dma := make(chan struct{})
	go func() {
		defer close(dma)
		_, _ = y.DMA("0000:00:00.0")
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	for !b.closing.Load() {
		time.Sleep(10 * time.Microsecond)
	}
	if err := x.Free(); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-dma
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	<-b.Done()
	if n := early.Load(); n != 0 {
		t.Fatalf("A's driver freed the buffer's region while B's view of it was not freed")
	}
	if m, f := vb.maps.Load(), vb.frees.Load(); m != f {
		t.Fatalf("B's driver mapped the buffer %d times and freed %d of the mappings", m, f)
	}
	if n := regionFrees.Load(); n != 1 {
		t.Fatalf("A's driver freed %d regions by B's Done, want the buffer's", n)
	}
	if used, _ := a.Budget(); used != 0 {
		t.Fatalf("A's budget counts %d bytes once the buffer went back", used)
	}
}
