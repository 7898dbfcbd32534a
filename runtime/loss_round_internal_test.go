package rig

import (
	"errors"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestLossDuringReclamationRound: an allocation, or a resolve, that the
// driver refuses for memory runs rounds of reclamation, one of which
// waits for the device's work in flight. A loss of the device meanwhile
// ends the rounds: the call returns the loss, not an out-of-memory error,
// and asks the lost driver for nothing more.
func TestLossDuringReclamationRound(t *testing.T) {
	for _, c := range []struct {
		name string
		// refuse makes the driver refuse the call for memory.
		refuse func(f *fake)
		call   func(d *Device, img *Image) error
	}{
		{"alloc", func(f *fake) { f.allocErr = device.ErrNoMemory }, func(d *Device, _ *Image) error {
			_, err := d.Alloc(device.DeviceMemory, 64)
			return err
		}},
		{"resolve", func(f *fake) {
			for range 5 {
				f.entryErr = append(f.entryErr, &device.NoMemory{N: 64})
			}
		}, func(_ *Device, img *Image) error {
			_, err := img.Resolve("k")
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.held = true
			f.facts.HangMs = 600_000 // the round's wait is bounded by the hang bound
			d := openFake(t, "loss-round-"+c.name, f)
			img, err := d.LoadImage([]byte("img"))
			if err != nil {
				t.Fatal(err)
			}
			submit(t, empty(t, d))
			f.mu.Lock()
			c.refuse(f)
			f.mu.Unlock()
			res := make(chan error, 1)
			go func() { res <- c.call(d, img) }()
			// The second round is the one that waits.
			for d.Stats().ReclaimRounds < 2 {
				time.Sleep(time.Millisecond)
			}
			d.lose("lost during the round", nil)
			err = <-res
			if !errors.Is(err, ErrLost) || errors.Is(err, ErrOutOfMemory) {
				t.Fatalf("the call returned %v, want the loss: the device was lost during its rounds", err)
			}
			if n := d.Stats().ReclaimRounds; n != 2 {
				t.Fatalf("%d rounds of reclamation ran, want 2: none after the loss", n)
			}
		})
	}
}
