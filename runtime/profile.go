package rig

import (
	"fmt"

	"github.com/rig-go/rig/device"
)

// SetTimed turns the stamping of each value's work on or off: while on, the
// driver stamps each value's start and end, and Settle converts them. The
// profile package turns it on while a profile is taken.
func (d *Device) SetTimed(on bool) { d.timed.Store(on) }

// Timed reports whether the device stamps its values.
func (d *Device) Timed() bool { return d.timed.Load() }

// Settle appends the stamps of timed values whose work completed, on the
// host's clock (device.Now), in value order. A failed conversion loses the
// device.
func (d *Device) Settle(into []device.Stamp) ([]device.Stamp, error) {
	out, err := d.drv.Settle(into)
	if err != nil {
		return out, fmt.Errorf("rig: settle on %s: %w", d.name, d.fault(err))
	}
	return out, nil
}
