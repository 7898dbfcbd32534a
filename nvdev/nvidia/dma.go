package nvidia

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// The export of GPU memory as a dma-buf (nv-ioctl.h, nv-dmabuf.c of release
// 580): NV_ESC_EXPORT_TO_DMABUF_FD on the GPU's own file, /dev/nvidia<minor>
// (the control file refuses it with EINVAL). The driver dups each memory
// object it names into a client of its own, so the dma-buf holds the memory
// until it is released, whatever becomes of the caller's handle.
const (
	// dmabufMappingDefault is NV_DMABUF_EXPORT_MAPPING_TYPE_DEFAULT: an
	// importer reaches video memory through BAR1 (through the coherent link
	// on coherent systems). NV_DMABUF_EXPORT_MAPPING_TYPE_FORCE_PCIE (1) is
	// for coherent systems only.
	dmabufMappingDefault = 0
)

// DMA exports the GPU memory m, which Alloc gave, as a dma-buf through which
// the PCI function at the bus address fn (such as "0000:41:00.0") reaches
// all of m's bytes: the whole host pages of m's memory object that hold
// them, with Offset m's distance from the dma-buf's start. The dma-buf's
// file descriptor is the caller's, who closes it; NVIDIA's driver keeps the
// memory while the dma-buf lives, also past Free. Whether fn's driver may
// attach the dma-buf is NVIDIA's driver's answer to that attach, by the PCI
// topology between fn and the GPU.
//
// It returns an error naming fn where fn is not a bus address or names no
// function under /sys/bus/pci/devices, one naming the cause for memory the
// export cannot take (host memory: Pinned memory and MapHost's; bytes off
// whole host pages of the memory), one with the RM's status name where
// NVIDIA's driver refuses the export, and a *device.Fault where it returns
// that the GPU is lost.
func (p *Client) DMA(m *Memory, fn string) (device.DMA, error) {
	return p.dma(m, fn, sysfsPCI, uint64(os.Getpagesize()))
}

// dma is DMA with the machine's PCI functions listed under dir and host
// pages of ps bytes, a power of two.
func (p *Client) dma(m *Memory, fn, dir string, ps uint64) (device.DMA, error) {
	a, err := ParsePCIAddress(fn)
	if err != nil {
		return device.DMA{}, fmt.Errorf("nvidia: dma for %q: not a PCI bus address such as 0000:41:00.0", fn)
	}
	if _, err := os.Stat(filepath.Join(dir, a.String())); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return device.DMA{}, fmt.Errorf("nvidia: dma for %s: no such PCI function under %s", fn, dir)
		}
		return device.DMA{}, fmt.Errorf("nvidia: dma for %s: the machine's PCI functions cannot be read: %w", fn, err)
	}
	rec, err := p.dmaRecord(m, fn)
	if err != nil {
		return device.DMA{}, err
	}
	start, size, err := dmaSpan(m.Address-rec.va, uint64(m.Size), rec.length, ps)
	if err != nil {
		return device.DMA{}, fmt.Errorf("nvidia: dma for %s of %v memory at 0x%x: %w", fn, m.Kind, m.Address, err)
	}
	fd, err := p.exportDMABuf(m.Handle, start, size)
	if err != nil {
		return device.DMA{}, dmaRefusal(fn, m, size, err)
	}
	return device.DMA{Kind: device.DMABuf, FD: fd, Offset: m.Address - rec.va - start}, nil
}

// dmaRecord is the path's record of m, or an error naming why the export
// cannot take m.
func (p *Client) dmaRecord(m *Memory, fn string) (*memRecord, error) {
	if m == nil {
		return nil, fmt.Errorf("nvidia: dma for %s of no memory", fn)
	}
	rec, ok := m.Data.(*memRecord)
	if !ok || rec.path != p {
		// Another path's memory: its handle is another GPU's, or its
		// free another path's to order.
		return nil, fmt.Errorf("nvidia: dma for %s: the memory at 0x%x is not memory this path gave", fn, m.Address)
	}
	switch {
	case m.Kind == device.PinnedMemory:
		return nil, fmt.Errorf("nvidia: dma for %s: the memory at 0x%x is Pinned memory, host memory (the path's or the caller's, mapped for the GPU), and NVIDIA's driver exports only the GPU's own memory as a dma-buf", fn, m.Address)
	case m.Kind != device.DeviceMemory && m.Kind != device.MappedMemory:
		return nil, fmt.Errorf("nvidia: dma for %s: no export of %v memory", fn, m.Kind)
	}
	p.mu.Lock()
	freed := rec.freed
	p.mu.Unlock()
	if freed {
		return nil, fmt.Errorf("nvidia: dma for %s: the memory at 0x%x is freed", fn, m.Address)
	}
	if m.Address < rec.va {
		return nil, fmt.Errorf("nvidia: dma for %s: the memory at 0x%x lies before its object at 0x%x", fn, m.Address, rec.va)
	}
	return rec, nil
}

// dmaSpan is the part of a memory object of objLen bytes that an export of
// its n bytes from off takes: the whole host pages of ps bytes that hold
// them, from start, size bytes. NVIDIA's driver takes only offsets and
// sizes of whole host pages, within the object.
func dmaSpan(off, n, objLen, ps uint64) (start, size uint64, err error) {
	if n == 0 || off > objLen || n > objLen-off {
		return 0, 0, fmt.Errorf("its %d bytes from byte %d lie outside its memory object of %d bytes", n, off, objLen)
	}
	start = off &^ (ps - 1)
	end := roundUp(off+n, ps)
	if end < off+n || end > objLen {
		return 0, 0, fmt.Errorf("its bytes [%d, %d) of a memory object of %d bytes are not within whole host pages of %d bytes of the object, and NVIDIA's driver exports only whole host pages", off, off+n, objLen, ps)
	}
	return start, end - start, nil
}

// exportDMABuf makes a dma-buf of size bytes of the memory object h from
// byte off (NV_ESC_EXPORT_TO_DMABUF_FD on the GPU's file), and returns its
// file descriptor, which the caller owns.
func (p *Client) exportDMABuf(h Handle, off, size uint64) (int, error) {
	x := &exportDMABufParams{
		FD:           -1,
		Client:       p.r.client,
		TotalObjects: 1,
		NumObjects:   1,
		TotalSize:    size,
		MappingType:  dmabufMappingDefault,
	}
	x.Handles[0], x.Offsets[0], x.Sizes[0] = h, off, size
	err := p.r.invoke(func() string {
		return fmt.Sprintf("EXPORT_TO_DMABUF_FD of 0x%x bytes of 0x%x from 0x%x", size, h, off)
	}, p.devFD, escape(escExportToDMABufFD, unsafe.Sizeof(*x)), unsafe.Pointer(x), &x.Status)
	if err != nil {
		return -1, err
	}
	if x.FD < 0 {
		return -1, fmt.Errorf("nvidia: EXPORT_TO_DMABUF_FD of 0x%x answered NV_OK and no file descriptor (%d)", h, x.FD)
	}
	return int(x.FD), nil
}

// dmaRefusal is the error of a failed export of size bytes of m for fn: a
// *device.Fault where the driver returned that the GPU is lost, the
// refusal with its cause otherwise.
func dmaRefusal(fn string, m *Memory, size uint64, err error) error {
	what := fmt.Sprintf("nvidia: dma for %s: NVIDIA's driver did not export %d bytes of %v memory at 0x%x as a dma-buf", fn, size, m.Kind, m.Address)
	e, ok := AsRMError(err)
	if !ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	if e.Fatal() {
		return &device.Fault{Why: fmt.Sprintf("%s: %v", what, e)}
	}
	switch {
	case e.Status == StatusNotSupported:
		return fmt.Errorf("%s: it exports no dma-buf of this GPU's memory: %w", what, err)
	case e.Status == StatusOK && e.Errno == syscall.EINVAL:
		return fmt.Errorf("%s: the kernel driver refused the call before the RM saw it: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
