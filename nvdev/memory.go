package nvdev

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/hostram"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// A region is the path's *nvidia.Memory: an allocation, a mapping of host
// memory or of another device's memory, or the device's own word.

// Facts is the device's facts.
func (d *gpu) Facts() *device.Facts { return &d.facts }

// Alloc is n bytes of memory of kind m, or device.ErrNoMemory. It returns
// an error naming n, having made nothing, where n is below 1.
//
// Pinned memory is Go memory (whole pages of Go's heap, of their own) that
// the path maps for the GPU as it maps the caller's host memory (MapHost):
// Free unmaps it for the GPU, and the garbage collector frees it once no
// slice of it is left, so that a slice of it never faults nor aliases
// other memory. Device and Mapped memory are the path's; Mapped memory
// one that a slice may outlive (nvidia.Client.AllocHeld), whose host view
// reads zeros after Free. A fault of the path marks the shared group
// faulted (lose).
func (d *gpu) Alloc(m device.Memory, n int) (device.Region, error) {
	if n < 1 {
		return nil, fmt.Errorf("nvdev: alloc of %d bytes of %v memory: a region holds at least one byte", n, m)
	}
	d.reap()
	if d.setsOld.Load() {
		d.mu.Lock()
		d.reapSets()
		d.mu.Unlock()
	}
	if m == device.PinnedMemory && d.p.MapsHost() {
		r, err := d.allocPinned(n)
		if err != nil {
			return nil, d.lose(err)
		}
		return r, nil
	}
	var mem *nvidia.Memory
	var err error
	if h, ok := d.p.(interface {
		AllocHeld(device.Memory, int) (*nvidia.Memory, error)
	}); ok && m == device.MappedMemory {
		mem, err = h.AllocHeld(m, n)
	} else {
		mem, err = d.p.Alloc(m, n)
	}
	if err != nil {
		return nil, d.lose(err)
	}
	return mem, nil
}

// goPinned holds the Go memory of each live Pinned allocation, by its
// *nvidia.Memory, until Free has unmapped it for the GPU.
var goPinned sync.Map

var pageSize = os.Getpagesize()

// allocPinned is n bytes of Pinned memory, Go memory the path maps. More
// than the host's memory is refused with ErrNoMemory.
func (d *gpu) allocPinned(n int) (device.Region, error) {
	if n > math.MaxInt-pageSize {
		return nil, fmt.Errorf("nvdev: alloc of %d bytes of Pinned memory: %w", n, device.ErrNoMemory)
	}
	if ram := hostram.Bytes(); ram > 0 && uint64(n) > ram {
		// Go's heap would end the process rather than fail.
		return nil, fmt.Errorf("nvdev: alloc of %d bytes of Pinned memory, more than the host's %d: %w", n, ram, device.ErrNoMemory)
	}
	mem := goPages((n + pageSize - 1) &^ (pageSize - 1))
	m, err := d.p.MapHost(uintptr(unsafe.Pointer(&mem[0])), n)
	if err != nil {
		if errors.Is(err, device.ErrNoRoom) {
			return nil, fmt.Errorf("nvdev: alloc of %d bytes of Pinned memory: %w: %w", n, device.ErrNoMemory, err)
		}
		return nil, err
	}
	goPinned.Store(m, mem)
	return m, nil
}

// goPages is size bytes of Go memory that start a page, size a multiple of
// the page: an array of its own, so that no other Go value shares the
// pages the GPU maps. Go gives an array of whole pages a page of its own,
// which goPages checks; it makes a page more and aligns where it did not.
func goPages(size int) []byte {
	b := make([]byte, size)
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(pageSize) == 0 {
		return b
	}
	b = make([]byte, size+pageSize)
	skip := (pageSize - int(uintptr(unsafe.Pointer(&b[0]))%uintptr(pageSize))) % pageSize
	return b[skip : skip+size : skip+size]
}

// Free gives r back to the path. A view of another device's memory on one
// GPU (MapPeer) holds nothing of its own; a view of another GPU's memory is
// the path's mapping, which the path gives back. The Go memory of Pinned
// memory goes to the garbage collector once the path unmapped it; where
// the path failed to, it stays held, so that the GPU never reaches memory
// Go reuses. A region an image's upload may still write goes back once
// the copy channel completed the upload (with the staging buffers), or at
// Stop.
func (d *gpu) Free(r device.Region) error {
	m, ok := r.(*nvidia.Memory)
	if !ok || m == nil {
		return errors.New("nvdev: free of a region this device did not make")
	}
	if _, view := m.Data.(peerView); view {
		return nil
	}
	d.retMu.Lock()
	if mark, ok := d.laying[m]; ok {
		delete(d.laying, m)
		if !d.stopped.Load() && !device.AtLeast(atomic.LoadUint64(d.live.Load().ch[qCopy].mark), mark) {
			d.staging = append(d.staging, retired{m: m, until: mark})
			d.retMu.Unlock()
			return nil
		}
	}
	d.retMu.Unlock()
	return d.free(m)
}

// free gives m back to the path, and lets go of the Go memory of Pinned
// memory once the path unmapped it: a region Free kept while an upload
// may write it goes back here too (reap, Stop).
func (d *gpu) free(m *nvidia.Memory) error {
	err := d.p.Free(m)
	if err == nil {
		goPinned.Delete(m)
	}
	return err
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
// device of another GPU the path maps it (nvidia.Client.MapPeer): Device
// memory where this GPU reaches the other's (Peer), Pinned memory always.
// It refuses Mapped memory of another GPU (device.ErrNever): the host's
// writes through that GPU's BAR would need a read of the other path's flush
// word before this device wakes its channels, which it does not make. A
// fault of the path marks the shared group faulted (lose).
func (d *gpu) MapPeer(other device.Driver, r device.Region) (device.Region, error) {
	o, ok := other.(*gpu)
	m, mok := r.(*nvidia.Memory)
	if !ok || !mok || o == nil || m == nil || o.p.Key() != d.p.Key() {
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
	case m.Kind == device.MappedMemory:
		return nil, fmt.Errorf("nvdev: map_peer of Mapped memory of GPU %d for GPU %d: the order of the host's writes through the other GPU's BAR is not built: %w",
			o.p.Index(), d.p.Index(), device.ErrNever)
	case m.Kind == device.DeviceMemory && !d.p.Reaches(o.p.Index()):
		return nil, fmt.Errorf("nvdev: map_peer of Device memory of GPU %d: GPU %d does not reach it: %w", o.p.Index(), d.p.Index(), device.ErrNever)
	}
	v, err := d.p.MapPeer(m)
	if err != nil {
		return nil, d.lose(err)
	}
	return v, nil
}

// peerView marks a region MapPeer made of another device's memory on the
// same GPU: the other device's memory itself, which Free leaves alone.
type peerView struct{}

// sharesSpace reports whether the paths p and o are of one GPU's address
// space, so that memory of either lies at the same address for both: a
// path that says so (nvidia.Client.SharesSpace).
func sharesSpace(p, o path) bool {
	s, ok := p.(interface{ SharesSpace(other any) bool })
	return ok && s.SharesSpace(o)
}

// MapHost maps the n bytes of host memory at p for the GPU. It answers
// device.ErrNever where the path maps no host memory, and an error naming
// n where n is below 1. A fault of the path marks the shared group
// faulted (lose).
func (d *gpu) MapHost(p uintptr, n int) (device.Region, error) {
	if !d.p.MapsHost() {
		return nil, fmt.Errorf("nvdev: the path maps no host memory: %w", device.ErrNever)
	}
	if n < 1 {
		return nil, fmt.Errorf("nvdev: MapHost of %d bytes: a mapping holds at least one byte", n)
	}
	m, err := d.p.MapHost(p, n)
	if err != nil {
		return nil, d.lose(err)
	}
	return m, nil
}

// DMA is the path's answer; a fault marks the shared group faulted
// (lose).
func (d *gpu) DMA(r device.Region, fn string) (device.DMA, error) {
	m, ok := r.(*nvidia.Memory)
	if !ok || m == nil {
		return device.DMA{}, errors.New("nvdev: dma of a region this device did not make")
	}
	x, err := d.p.DMA(m, fn)
	return x, d.lose(err)
}
