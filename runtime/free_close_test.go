package rig

import (
	"context"
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
