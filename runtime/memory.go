package rig

import "github.com/rig-go/rig/device"

// Memory is a kind of memory a buffer holds (Device.Alloc).
type Memory = device.Memory

// The kinds of memory, as package device names them for drivers.
const (
	// DeviceMemory is the device's own, which the host may not address.
	DeviceMemory = device.DeviceMemory
	// PinnedMemory is page-locked host memory the device addresses.
	PinnedMemory = device.PinnedMemory
	// MappedMemory is the device's own, also mapped for the host.
	MappedMemory = device.MappedMemory
)
