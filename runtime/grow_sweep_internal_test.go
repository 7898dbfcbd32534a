package rig

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// unloadDrv is a fake whose Unload, once armed, blocks until released,
// and whose Stop records whether an Unload was in flight.
type unloadDrv struct {
	*fake
	armed            atomic.Bool
	entered, release chan struct{}
	inUnload         atomic.Int32
	stopInUnload     atomic.Bool
}

func (u *unloadDrv) Unload(img device.Image) error {
	u.inUnload.Add(1)
	defer u.inUnload.Add(-1)
	if u.armed.Swap(false) {
		u.entered <- struct{}{}
		<-u.release
	}
	return u.fake.Unload(img)
}

func (u *unloadDrv) Stop(fault string) error {
	if u.inUnload.Load() != 0 {
		u.stopInUnload.Store(true)
	}
	return u.fake.Stop(fault)
}

// TestGrowthRoundHoldsOffStop: the round of reclamation that a growth
// which came up short runs gives back the deferred frees that are due,
// an unloaded image among them, through counted calls of the driver: a
// Close that begins meanwhile stops the driver only once they returned.
func TestGrowthRoundHoldsOffStop(t *testing.T) {
	f := newFake()
	f.held = true
	u := &unloadDrv{fake: f, entered: make(chan struct{}), release: make(chan struct{})}
	d := openWith(t, device.Opener{Name: "grow-sweep", Make: func(w *uint64) (device.Driver, error) {
		f.facts.Word = w
		return u, nil
	}})
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := img.Resolve("k")
	if err != nil {
		t.Fatal(err)
	}
	launch, err := NewSubmission(d, Launch(k, 0))
	if err != nil {
		t.Fatal(err)
	}
	p := submit(t, launch)
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	// Hold the supervisor in its driver's Sleep, so that the growth's
	// round, not the supervisor, finds the image due.
	release := f.holdSleep()
	f.rooms = []device.RoomAnswer{{Kind: device.RoomGrow}}
	f.growth = []error{&device.Short{N: 4096}}
	f.onGrow = func() { f.complete(p.v) }
	u.armed.Store(true)
	submitted := make(chan error, 1)
	go func() {
		_, err := empty(t, d).Take().Submit(context.Background())
		submitted <- err
	}()
	<-u.entered
	release()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	// A Close that does not wait for the Unload stops the driver at
	// once; one that waits is released below.
	select {
	case err := <-closed:
		closed <- err
	case <-time.After(100 * time.Millisecond):
	}
	close(u.release)
	<-submitted
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	if u.stopInUnload.Load() {
		t.Fatal("the driver's Stop ran while the growth's round unloaded an image")
	}
}
