package rig

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// stopGateDrv is a fake whose Stop waits until released.
type stopGateDrv struct {
	*fake
	release chan struct{}
}

func (s *stopGateDrv) Stop(fault string) error {
	<-s.release
	return s.fake.Stop(fault)
}

// TestOpenOfLostNameHonoursCtx: an Open of the name of a lost device
// closes it, and where the driver's Stop takes longer than the Open's
// context allows, the Open returns the context's error when it ends
// rather than when the Stop does; once the Stop returns, an Open of the
// name succeeds.
func TestOpenOfLostNameHonoursCtx(t *testing.T) {
	const name = "open-lost-ctx"
	f := newFake()
	drv := &stopGateDrv{fake: f, release: make(chan struct{})}
	d := openWith(t, device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		f.facts.Word = w
		return drv, nil
	}})
	d.lose("lost for the test", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	opened := make(chan error, 1)
	go func() {
		e, err := Open(ctx, device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
			g := newFake()
			g.facts.Word = w
			return g, nil
		}})
		if err == nil {
			_ = e.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lost device's work still runs") {
			t.Errorf("an open of the lost device's name while its Stop runs: %v", err)
		}
	case <-time.After(5 * time.Second):
		close(drv.release)
		<-opened
		t.Fatal("an open of the lost device's name waited past its context for the lost device's Stop")
	}
	close(drv.release)
	<-d.Done()
	e, err := Open(context.Background(), device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		g := newFake()
		g.facts.Word = w
		return g, nil
	}})
	if err != nil {
		t.Fatalf("an open once the lost device's Stop returned: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
