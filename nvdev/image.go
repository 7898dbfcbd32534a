package nvdev

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/abi"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Images. Image answers Place (n, lay) for a cubin nvdev/abi accepts, as the
// seed says, and rig allocates n bytes of Device memory for it. The host
// does not address Device memory, so lay places the relocated image in
// memory of the device's own that the host writes through the BAR (Mapped
// memory, or Pinned memory where the BAR had no room), and the kernels run
// from there; rig's region only holds the image's place in the budget until
// rig frees it after Unload. An upload into rig's region by the copy engine
// is the next step (NOTES.md). The first submission on the compute channel
// after a lay invalidates the compute engine's instruction and constant
// caches before its parts, since an image may load where another one's code
// was.

// image is a laid cubin.
type image struct {
	d     *gpu
	cubin *abi.Cubin
	mem   *nvidia.Memory
	addr  uint64

	mu       sync.Mutex // guards funcs and unloaded: Entry and Unload hold it
	funcs    map[string]*device.Entry
	unloaded bool
}

// kfunc is a function's launch template: an entry's Data.
type kfunc struct {
	d  *gpu
	im *image
	l  *abi.Launch
}

// entryOf is the template of a launch's entry, if this package made it.
func entryOf(e *device.Entry) (*kfunc, bool) {
	if e == nil {
		return nil, false
	}
	f, ok := e.Data.(*kfunc)
	return f, ok && f != nil
}

// Image takes a cubin for the GPU's architecture.
func (d *gpu) Image(b []byte) (device.Code, error) {
	c, err := abi.Parse(b)
	if err != nil {
		return device.Code{}, fmt.Errorf("nvdev: image: %w", err)
	}
	if !d.gen.Runs(c.SM()) {
		return device.Code{}, fmt.Errorf("nvdev: image: a cubin for sm_%d does not run on %s", c.SM(), d.gen.Arch)
	}
	return device.Code{Place: c.Size(), Lay: func(r device.Region) (device.Image, error) { return d.lay(c, r) }}, nil
}

// lay relocates the cubin where the kernels run from and writes it there.
func (d *gpu) lay(c *abi.Cubin, _ device.Region) (device.Image, error) {
	if d.stopped.Load() {
		return nil, errors.New("nvdev: lay after stop")
	}
	kind := device.Mapped
	if d.flush == nil {
		kind = device.Pinned
	}
	align := c.Align()
	n := c.Size()
	if align > 4096 {
		n += int(align)
	}
	m, err := d.p.Alloc(kind, n)
	if err != nil {
		return nil, fmt.Errorf("nvdev: lay: %w", err)
	}
	addr := roundUp(m.Address, align)
	img, err := c.Lay(addr)
	if err != nil {
		_ = d.p.Free(m)
		return nil, fmt.Errorf("nvdev: lay: %w", err)
	}
	copy(hostBytes(m, int(addr-m.Address), len(img)), img)
	d.icache.Store(true)
	return &image{d: d, cubin: c, mem: m, addr: addr, funcs: map[string]*device.Entry{}}, nil
}

// Entry makes the launch template of the image's function name, and grows
// the compute channel's local memory to serve it.
func (d *gpu) Entry(img device.Image, name string) (*device.Entry, error) {
	im, ok := img.(*image)
	if !ok || im.d != d {
		return nil, errors.New("nvdev: entry of an image this device did not load")
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.unloaded {
		return nil, errors.New("nvdev: entry of an unloaded image")
	}
	if e := im.funcs[name]; e != nil {
		return e, nil
	}
	k, ok := im.cubin.Kernel(name)
	if !ok {
		return nil, device.ErrAbsent
	}
	l, err := d.rec.MakeLaunch(k, im.addr)
	if err != nil {
		return nil, fmt.Errorf("nvdev: entry %q: %w", name, err)
	}
	if err := d.growLocal(l.Local); err != nil {
		return nil, err
	}
	e := &device.Entry{Name: name, Code: l.Code, Params: k.ParamBytes, Threads: l.MaxThreads,
		Shared: l.DynamicShared, Data: &kfunc{d: d, im: im, l: l}}
	im.funcs[name] = e
	return e, nil
}

// Prepare does nothing: Entry makes nothing slow.
func (d *gpu) Prepare(device.Image, string) error { return nil }

// Unload frees the image's code and forgets its launch templates.
func (d *gpu) Unload(img device.Image) error {
	im, ok := img.(*image)
	if !ok || im.d != d {
		return errors.New("nvdev: unload of an image this device did not load")
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.unloaded {
		return nil
	}
	im.unloaded = true
	im.funcs = nil
	return d.p.Free(im.mem)
}

// growLocal grows the compute channel's local memory so that each thread
// has perThread bytes, from the next submission on the compute channel on
// (Gpu.Local). The memory it replaces stays until Stop, since work that
// the device has not reached may use it.
func (d *gpu) growLocal(perThread int) error {
	d.localMu.Lock()
	defer d.localMu.Unlock()
	if d.stopped.Load() {
		return errors.New("nvdev: local memory after stop")
	}
	cur := d.local.Load()
	if cur != nil && cur.perThread >= perThread {
		return nil
	}
	perTPC, total := d.rec.LocalBytes(perThread)
	m, err := d.p.Alloc(device.Device, int(total))
	if err != nil {
		if errors.Is(err, device.ErrNoMemory) {
			return &device.NoMemory{N: int64(total)}
		}
		return err
	}
	if cur != nil {
		d.old = append(d.old, cur.mem)
	}
	d.local.Store(&localMem{mem: m, perThread: perThread, perTPC: perTPC})
	return nil
}
