package rig

import "github.com/rig-go/rig/device"

// Capability returns the record that compiled code uses on d, if d's driver
// declares key: cudadev/cuda's record of libcuda's functions, nvdev/hw's
// GPU record, hostdev's caps. A nil Device, or a zero one, declares none.
func Capability[T any](d *Device, key *device.Key[T]) (T, bool) {
	var zero T
	if d == nil || d.facts == nil {
		return zero, false
	}
	if k, ok := d.facts.Capability.(*device.Key[T]); !ok || k != key {
		return zero, false
	}
	c, ok := d.drv.Capability().(T)
	return c, ok
}
