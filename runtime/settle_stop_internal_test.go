package rig

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// settleDrv is a fake whose Settle blocks until released, and whose Stop
// records whether a Settle was in flight.
type settleDrv struct {
	*fake
	entered, release chan struct{}
	inSettle         atomic.Int32
	stopInSettle     atomic.Bool
}

func (s *settleDrv) Settle(into []device.Stamp) ([]device.Stamp, error) {
	s.inSettle.Add(1)
	defer s.inSettle.Add(-1)
	s.entered <- struct{}{}
	<-s.release
	return into, nil
}

func (s *settleDrv) Stop(fault string) error {
	if s.inSettle.Load() != 0 {
		s.stopInSettle.Store(true)
	}
	return s.fake.Stop(fault)
}

// TestCloseWaitsForSettle: Settle is a counted call, and the driver's Stop
// comes with no counted call in flight: a Close that begins while a
// Settle runs in the driver stops the driver only once it returned, and
// the Settle answers what the driver settled.
func TestCloseWaitsForSettle(t *testing.T) {
	for _, c := range []struct {
		name string
		lost bool
	}{
		{"open", false},
		{"lost", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			drv := &settleDrv{fake: f, entered: make(chan struct{}), release: make(chan struct{})}
			d := openWith(t, device.Opener{Name: "settle-stop-" + c.name, Make: func(w *uint64) (device.Driver, error) {
				f.facts.Word = w
				return drv, nil
			}})
			if c.lost {
				d.lose("lost for the test", nil)
			}
			settled := make(chan error, 1)
			go func() {
				_, err := d.Settle(nil)
				settled <- err
			}()
			<-drv.entered
			closed := make(chan error, 1)
			go func() { closed <- d.Close() }()
			// A Close that does not wait for the Settle stops the
			// driver at once; one that waits is released below.
			select {
			case <-closed:
				closed <- nil
			case <-time.After(100 * time.Millisecond):
			}
			close(drv.release)
			if err := <-settled; err != nil {
				t.Fatalf("Settle: %v", err)
			}
			<-closed
			<-d.Done()
			if drv.stopInSettle.Load() {
				t.Fatal("the driver's Stop ran while its Settle was in flight")
			}
		})
	}
}
