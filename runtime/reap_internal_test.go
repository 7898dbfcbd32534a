package rig

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// pauseIn makes the first Signaled of f called from a goroutine inside the
// function frame (as runtime.Stack names it) close entered and return only
// once until reports true. It returns entered, and a func that reports
// whether until never held within its bound.
func pauseIn(t *testing.T, f *fake, frame string, until func() bool) (entered chan struct{}, timedOut func() bool) {
	t.Helper()
	entered = make(chan struct{})
	var once, late atomic.Bool
	hook := func() {
		if once.Load() {
			return
		}
		buf := make([]byte, 16<<10)
		if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), frame) || !once.CompareAndSwap(false, true) {
			return
		}
		close(entered)
		for end := time.Now().Add(10 * time.Second); !until(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(end) {
				late.Store(true)
				return
			}
		}
	}
	f.onSignaled.Store(&hook)
	t.Cleanup(func() { f.onSignaled.Store(nil) })
	return entered, late.Load
}

// listsCleared reports whether the reaping of d took its lists.
func listsCleared(d *Device) bool {
	d.objMu.Lock()
	defer d.objMu.Unlock()
	return d.buffers == nil
}

// TestFreeRacingReap: a Free whose buffer still waits for another
// device's read, made as Close's reaping takes the device's lists, gives
// the buffer's region back before Done. The Free runs from the moment it
// asks whether the read is reached until the reaping has taken the lists.
func TestFreeRacingReap(t *testing.T) {
	fa, fb := newFake(), newFake()
	fb.held, fa.peer, fb.peer = true, true, true
	fb.keepOwnWord(0)
	a, b := openFake(t, "free-reap-a", fa), openFake(t, "free-reap-b", fb)
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	read := submit(t, launchOn(t, b, Read(0, 0)), x)
	entered, timedOut := pauseIn(t, fb, "(*bufState).free", func() bool { return listsCleared(a) })
	freed := make(chan struct{})
	go func() {
		defer close(freed)
		_ = x.Free()
	}()
	<-entered
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-freed
	if timedOut() {
		t.Fatal("the reaping did not take the device's lists")
	}
	// The read ends: the reaping may give the buffer back now.
	fb.complete(read.v)
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
	if !x.s.released.Load() {
		t.Fatalf("the buffer's region was not given back by Done (%d deferred frees left)", a.deferred.Len())
	}
	if n := a.deferred.Len(); n != 0 {
		t.Fatalf("%d deferred frees left after Done", n)
	}
}

// TestUnloadRacingReap: an Unload made as Close's reaping takes the
// device's lists unloads the image before Done, whether it finds the
// device open or closing. The Unload runs from the moment it asks whether
// the image's last launch is reached until the reaping has taken the
// lists.
func TestUnloadRacingReap(t *testing.T) {
	f := newFake()
	f.keepOwnWord(0)
	d := openFake(t, "unload-reap", f)
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := img.Resolve("k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubmission(d, Launch(k, 16))
	if err != nil {
		t.Fatal(err)
	}
	if err := submit(t, s).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	entered, timedOut := pauseIn(t, f, "(*Image).Unload", func() bool { return listsCleared(d) })
	unloaded := make(chan error, 1)
	go func() { unloaded <- img.Unload() }()
	<-entered
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	if timedOut() {
		t.Fatal("the reaping did not take the device's lists")
	}
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
	f.mu.Lock()
	n := f.unloads
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("the driver unloaded %d images by Done, want 1 (%d deferred frees left)", n, d.deferred.Len())
	}
}

// TestCopiesAfterClose: Upload and Download of a closed device's buffer
// return an error matching ErrClosed, for every kind of memory, both while
// the reaping waits for another device's work and after Done; neither
// copies a byte.
func TestCopiesAfterClose(t *testing.T) {
	fa, fb := newFake(), newFake()
	fa.hostMem = true
	fb.held, fa.peer, fb.peer = true, true, true
	a, b := openFake(t, "copies-closed-a", fa), openFake(t, "copies-closed-b", fb)
	kinds := []device.Memory{device.DeviceMemory, device.PinnedMemory, device.MappedMemory}
	bufs := make([]*Buffer, len(kinds))
	for i, k := range kinds {
		x, err := a.Alloc(k, 8)
		if err != nil {
			t.Fatal(err)
		}
		bufs[i] = x
	}
	if bufs[1].Bytes() == nil || bufs[2].Bytes() == nil {
		t.Fatal("the host does not address the Pinned and Mapped buffers")
	}
	// A buffer whose free waits for device b's read holds the reaping.
	y, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	read := submit(t, launchOn(t, b, Read(0, 0)), y)
	_ = y.Free()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		for i, x := range bufs {
			if err := Upload(ctx, x, 0, []byte{1, 2, 3, 4}); !errors.Is(err, ErrClosed) {
				t.Errorf("%s: Upload into %s memory returned %v, want ErrClosed", when, kinds[i], err)
			}
			got := []byte{9, 9}
			if err := Download(ctx, got, x, 0); !errors.Is(err, ErrClosed) {
				t.Errorf("%s: Download from %s memory returned %v, want ErrClosed", when, kinds[i], err)
			}
			if got[0] != 9 || got[1] != 9 {
				t.Errorf("%s: Download from %s memory copied %v", when, kinds[i], got)
			}
			if h := x.Bytes(); h != nil && h[0] != 0 {
				t.Errorf("%s: Upload into %s memory copied %v", when, kinds[i], h[:4])
			}
		}
	}
	select {
	case <-a.Done():
		t.Fatal("Done closed while device b's read runs")
	default:
	}
	check("before Done")
	fb.complete(read.v)
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
	check("after Done")
}
