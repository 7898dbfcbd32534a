package nvdev

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Images. Image returns Place (n, lay) for a cubin nvdev/hw accepts, and
// rig allocates n bytes of Device memory for it: the image's size, and
// where the image is aligned to more than a region (Facts.Alignment) the
// most bytes its alignment moves it by within the region. The host does
// not address Device memory, so lay relocates the image for the region's
// first address of the image's alignment, writes it into a staging buffer
// of Pinned memory, and has the copy channel copy it there between values:
// a copy, a flush and a release of the copy channel's mark. The kernels
// run from rig's region, and the image takes no memory beyond it once the
// copy completed. The compute channel's next submission acquires that mark
// before its parts, then invalidates the compute engine's instruction and
// constant caches, since an image may load where another one's code was.
// The staging buffer goes back at the device's next growth, allocation or
// lay once the mark passed it, or at Stop; so does rig's region where rig
// frees it before the mark passed (an image unloaded before any launch),
// since the copy channel may still write it. A lay of no region (a test's)
// writes the image into memory of the device's own that the host writes
// through the BAR (Mapped, or Pinned where the BAR had no room), which
// Unload frees.

// image is a laid cubin.
type image struct {
	d     *gpu
	cubin *hw.Cubin
	mem   *nvidia.Memory // the device's own memory of a lay of no region, or nil
	addr  uint64

	mu       sync.Mutex // guards funcs and unloaded: Entry and Unload hold it
	funcs    map[string]*device.Entry
	unloaded bool
}

// kfunc is a function's launch template: an entry's Data.
type kfunc struct {
	d  *gpu
	im *image
	l  *hw.Launch
}

// entryOf is the template of a launch's entry, if this package made it.
func entryOf(e *device.Entry) (*kfunc, bool) {
	if e == nil {
		return nil, false
	}
	f, ok := e.Data.(*kfunc)
	return f, ok && f != nil
}

// Image takes a cubin for the GPU's architecture. A fault its lay returns
// marks the shared group faulted (lose).
func (d *gpu) Image(b []byte) (device.Code, error) {
	c, err := hw.Parse(b)
	if err != nil {
		return device.Code{}, fmt.Errorf("nvdev: image: %w", err)
	}
	if !d.gen.Runs(c.SM()) {
		return device.Code{}, fmt.Errorf("nvdev: image: a cubin for sm_%d does not run on %s", c.SM(), d.gen.Arch)
	}
	return device.Code{Place: place(c, d.facts.Alignment), Lay: func(r device.Region) (device.Image, error) {
		img, err := d.lay(c, r)
		if err != nil {
			return nil, d.lose(err)
		}
		return img, nil
	}}, nil
}

// place is the bytes of a region aligned to align that hold c at c's
// alignment: its size, and what an image aligned to more than the region
// is moved by at most.
func place(c *hw.Cubin, align int) int {
	if a := int(c.Align()); align > 0 && a > align {
		return c.Size() + a - align
	}
	return c.Size()
}

// lay relocates the cubin for rig's region r and uploads it there.
func (d *gpu) lay(c *hw.Cubin, r device.Region) (device.Image, error) {
	if d.stopped.Load() {
		return nil, errors.New("nvdev: lay after stop")
	}
	dst, ok := r.(*nvidia.Memory)
	if !ok || dst == nil {
		return d.layOwn(c)
	}
	align := c.Align()
	addr := roundUp(dst.Address, align)
	if addr-dst.Address > uint64(dst.Size) || uint64(c.Size()) > uint64(dst.Size)-(addr-dst.Address) {
		return nil, fmt.Errorf("nvdev: lay into a region at 0x%x of %d bytes: the image takes %d bytes aligned to %d",
			dst.Address, dst.Size, c.Size(), align)
	}
	img, err := c.Lay(addr)
	if err != nil {
		return nil, fmt.Errorf("nvdev: lay: %w", err)
	}
	d.reap()
	st, err := d.p.Alloc(device.PinnedMemory, len(img))
	if err != nil {
		return nil, fmt.Errorf("nvdev: lay: a staging buffer of %d bytes: %w", len(img), err)
	}
	copy(hostBytes(st, 0, len(img)), img)
	if err := d.upload(st, dst, addr, uint64(len(img))); err != nil {
		_ = d.p.Free(st)
		return nil, err
	}
	return &image{d: d, cubin: c, addr: addr, funcs: map[string]*device.Entry{}}, nil
}

// uploadTimeout bounds a lay's wait for room on the copy channel.
const uploadTimeout = 10 * time.Second

// upload has the copy channel copy n bytes of the staging buffer st to
// the GPU address dst in rig's region to, between values, then release its
// mark, which the compute channel's next submission acquires. Free keeps
// the region until that mark passes (laying).
func (d *gpu) upload(st, to *nvidia.Memory, dst, n uint64) error {
	rows := hw.Rows{Src: st.Address, Dst: dst, SrcPitch: n, DstPitch: n, RowBytes: n, Rows: 1}
	l, err := rows.Launches()
	if err != nil {
		return fmt.Errorf("nvdev: lay: %w", err)
	}
	k := l*hw.CopyLaunchWords + flushWords + hw.ReleaseWords
	t0 := time.Now()
	for {
		d.mu.Lock()
		if d.stopped.Load() {
			d.mu.Unlock()
			return errors.New("nvdev: lay after stop")
		}
		ch := d.ch[qCopy]
		w := atomic.LoadUint64(d.word)
		if !d.planned && device.AtLeast(w, d.last) && (!d.layPending || device.AtLeast(atomic.LoadUint64(ch.mark), d.upMark)) {
			// The channels consumed every value and upload: the last
			// value's record moves to where the rings stand, as Room's
			// does, so that uploads with no value between them find
			// the room the ones before gave back.
			d.recs[d.last%records] = d.record()
		}
		r := d.recs[w%records]
		size := uint64(len(ch.seg))
		pos := ch.segPos
		if off := pos % size; off+k > size {
			pos += size - off
		}
		// Room holds the words between values, and no submission is
		// between its Room and its Submit.
		if !d.planned && k <= size && pos+k-r.seg[qCopy] <= size && ch.put+3-r.put[qCopy] <= ch.entries-1 {
			b := ch.seg[pos%size : pos%size : pos%size+k]
			b = hw.CopyRows(b, d.gen, rows)
			b = append(b, hw.Inc(hw.SubCopy, hw.CopyLaunchDMA, 1), hw.DMAFlushEnable)
			ch.marks++
			b = hw.Release(b, d.gen, ch.markGPU, ch.marks)
			if uint64(len(b)) != k {
				panic(fmt.Sprintf("nvdev: an upload of %d words where %d were counted", len(b), k))
			}
			if err := ch.appendSegment(d.gen, pos, uint32(k)); err != nil {
				d.mu.Unlock()
				return fmt.Errorf("nvdev: lay: %w", err)
			}
			ch.segPos = pos + k
			ch.tail = ch.segPos // the upload ends with its mark's release
			d.upMark, d.layPending = ch.marks, true
			d.icache.Store(true)
			d.retMu.Lock()
			d.staging = append(d.staging, retired{m: st, until: ch.marks})
			if d.laying == nil {
				d.laying = map[*nvidia.Memory]uint64{}
			}
			d.laying[to] = ch.marks
			d.retMu.Unlock()
			ch.published()
			d.kickMu.Lock()
			d.kickNow()
			d.kickMu.Unlock()
			d.mu.Unlock()
			return nil
		}
		d.mu.Unlock()
		if f := d.fault.Load(); f != nil {
			return fmt.Errorf("nvdev: lay: %w", f)
		}
		if time.Since(t0) > uploadTimeout {
			return fmt.Errorf("nvdev: lay: no room on the copy channel for the image's copy in %v", uploadTimeout)
		}
		if d.notified() {
			if f := d.notifierFault(); f != nil {
				return fmt.Errorf("nvdev: lay: %w", d.keep(f))
			}
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// layOwn writes the relocated image into memory of the device's own:
// Mapped memory where the device writes through the BAR and the BAR has
// room, as the rings, and Pinned memory otherwise. A fault of the Mapped
// allocation is returned, not hidden by Pinned memory.
func (d *gpu) layOwn(c *hw.Cubin) (device.Image, error) {
	align := c.Align()
	n := c.Size()
	if align > 4096 {
		n += int(align)
	}
	var m *nvidia.Memory
	var err error
	if d.mapped() {
		if m, err = d.p.Alloc(device.MappedMemory, n); err != nil && !lacks(err) {
			return nil, fmt.Errorf("nvdev: lay: %w", err)
		}
	}
	if m == nil {
		if m, err = d.p.Alloc(device.PinnedMemory, n); err != nil {
			return nil, fmt.Errorf("nvdev: lay: %w", err)
		}
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
// the compute channel's local memory to serve it. A fault of the path
// marks the shared group faulted (lose).
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
		return nil, d.lose(err)
	}
	e := &device.Entry{Name: name, Code: l.Code, Params: k.ParamBytes, Threads: l.MaxThreads,
		Shared: l.DynamicShared, Layout: paramLayout(k), Data: &kfunc{d: d, im: im, l: l}}
	im.funcs[name] = e
	return e, nil
}

// Prepare does nothing: Entry makes nothing slow.
func (d *gpu) Prepare(device.Image, string) error { return nil }

// Unload frees the image's code and forgets its launch templates. A fault
// of the path marks the shared group faulted (lose).
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
	if im.mem == nil {
		return nil // rig's region
	}
	return d.lose(d.p.Free(im.mem))
}

// growLocal grows the compute channel's local memory so that each thread
// has perThread bytes, from the next submission on the compute channel on
// (Gpu.Local). The memory it replaces stays until Stop, since work that
// the device has not reached may use it. A need of no bytes changes
// nothing; one past a thread's local window (the descriptor's bound on a
// launch's local memory) is refused.
func (d *gpu) growLocal(perThread int) error {
	d.localMu.Lock()
	defer d.localMu.Unlock()
	if d.stopped.Load() {
		return errors.New("nvdev: local memory after stop")
	}
	if perThread <= 0 {
		return nil
	}
	if most := d.gen.Qmd.LocalHighSize.Max(); uint64(perThread) > most {
		return fmt.Errorf("nvdev: local memory of %d bytes a thread, more than the %d a thread's local window holds", perThread, most)
	}
	cur := d.local.Load()
	if cur != nil && cur.perThread >= perThread {
		return nil
	}
	perTPC, total := d.rec.LocalBytes(perThread)
	m, err := d.p.Alloc(device.DeviceMemory, int(total))
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

// paramLayout is where each of k's parameters lies, in the order of its
// signature, or nil where the cubin's parameter attributes do not state
// every parameter once within its parameter bytes.
func paramLayout(k *hw.Kernel) []device.Param {
	layout := make([]device.Param, len(k.Params))
	seen := make([]bool, len(k.Params))
	for _, p := range k.Params {
		if p.Ordinal < 0 || p.Ordinal >= len(layout) || seen[p.Ordinal] || p.Offset < 0 || p.Size < 0 || p.Offset > k.ParamBytes-p.Size {
			return nil
		}
		seen[p.Ordinal] = true
		layout[p.Ordinal] = device.Param{Offset: p.Offset, Size: p.Size}
	}
	return layout
}
