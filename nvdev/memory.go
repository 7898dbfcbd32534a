package nvdev

import (
	"errors"
	"fmt"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// A region is the path's *nvidia.Memory: an allocation, a mapping of host
// memory or of another device's memory, or the device's own word.

// Facts is the device's facts.
func (d *gpu) Facts() *device.Facts { return &d.facts }

// Alloc is n bytes of memory of kind m, or device.ErrNoMemory.
func (d *gpu) Alloc(m device.Memory, n int) (device.Region, error) {
	if n < 1 {
		return nil, fmt.Errorf("nvdev: alloc of %d bytes", n)
	}
	d.reap()
	if d.setsOld.Load() {
		d.mu.Lock()
		d.reapSets()
		d.mu.Unlock()
	}
	mem, err := d.p.Alloc(m, n)
	if err != nil {
		return nil, err
	}
	return mem, nil
}

// Free gives r back to the path. A view of another device's memory on one
// GPU (MapPeer) holds nothing of its own; a view of another GPU's memory is
// the path's mapping, which the path gives back.
func (d *gpu) Free(r device.Region) error {
	m, ok := r.(*nvidia.Memory)
	if !ok || m == nil {
		return errors.New("nvdev: free of a region this device did not make")
	}
	if _, view := m.Data.(peerView); view {
		return nil
	}
	return d.p.Free(m)
}

// Locate is where r lies: its GPU address, which is also its handle, and
// its host address where the host addresses it.
func (d *gpu) Locate(r device.Region) device.Location {
	m, ok := r.(*nvidia.Memory)
	if !ok || m == nil {
		return device.Location{}
	}
	return device.Location{Address: m.Address, Handle: m.Address, Host: m.Host}
}

// Peer is true iff both devices' paths are of one machine and this GPU's
// work reaches the other's memory.
func (d *gpu) Peer(other device.Driver) bool {
	o, ok := other.(*gpu)
	return ok && o != d && o.p.Key() == d.p.Key() && d.p.Reaches(o.p.Index())
}

// MapPeer maps for this GPU the memory of r, a region of other. For a
// device of another GPU the path maps it (nvidia.Path.MapPeer): Device
// memory where this GPU reaches the other's (Peer), Pinned memory always.
// It refuses Mapped memory of another GPU (device.ErrNever): the host's
// writes through that GPU's BAR would need a read of the other path's flush
// word before this device wakes its channels, which it does not make.
func (d *gpu) MapPeer(other device.Driver, r device.Region) (device.Region, error) {
	o, ok := other.(*gpu)
	m, mok := r.(*nvidia.Memory)
	if !ok || !mok || o.p.Key() != d.p.Key() {
		return nil, fmt.Errorf("nvdev: map_peer of another driver's region: %w", device.ErrNever)
	}
	if o.stopped.Load() {
		return nil, fmt.Errorf("nvdev: map_peer of a stopped device's memory: %w", device.ErrNever)
	}
	if sharesSpace(d.p, o.p) {
		// Devices of one GPU in a process share its address space: the
		// memory lies at its own address for this device's channels too.
		v := *m
		v.Borrowed, v.Data = true, peerView{}
		return &v, nil
	}
	switch {
	case m.Kind == device.Mapped:
		return nil, fmt.Errorf("nvdev: map_peer of Mapped memory of GPU %d for GPU %d: the order of the host's writes through the other GPU's BAR is not built: %w",
			o.p.Index(), d.p.Index(), device.ErrNever)
	case m.Kind == device.Device && !d.p.Reaches(o.p.Index()):
		return nil, fmt.Errorf("nvdev: map_peer of Device memory of GPU %d: GPU %d does not reach it: %w", o.p.Index(), d.p.Index(), device.ErrNever)
	}
	v, err := d.p.MapPeer(m)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// peerView marks a region MapPeer made of another device's memory on the
// same GPU: the other device's memory itself, which Free leaves alone.
type peerView struct{}

// sharesSpace reports whether the paths p and o are of one GPU's address
// space, so that memory of either lies at the same address for both: a
// path that says so (nvidia.Path.SharesSpace).
func sharesSpace(p, o path) bool {
	s, ok := p.(interface{ SharesSpace(other any) bool })
	return ok && s.SharesSpace(o)
}

// MapHost maps the n bytes of host memory at p for the GPU.
func (d *gpu) MapHost(p uintptr, n int) (device.Region, error) {
	if !d.p.MapsHost() {
		return nil, fmt.Errorf("nvdev: the path maps no host memory: %w", device.ErrNever)
	}
	if n < 1 {
		return nil, fmt.Errorf("nvdev: map_host of %d bytes", n)
	}
	m, err := d.p.MapHost(p, n)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DMA is the path's answer.
func (d *gpu) DMA(r device.Region, fn string) (device.DMA, error) {
	m, ok := r.(*nvidia.Memory)
	if !ok || m == nil {
		return device.DMA{}, errors.New("nvdev: dma of a region this device did not make")
	}
	return d.p.DMA(m, fn)
}
