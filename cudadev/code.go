package cudadev

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// CUfunction_attribute values.
const (
	funcMaxThreadsPerBlock = 0
	funcSharedSizeBytes    = 1
	funcMaxDynamicShared   = 8
	funcClusterAtLaunch    = 10 // CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET
	funcClusterWidth       = 11 // CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH; 12 and 13 height and depth
)

// ParamLimit is the most parameter bytes CUDA launches on a GPU of compute
// capability major.minor: 32,764 on 7.0 or later (CUDA 12.1 and later),
// 4,096 below.
func ParamLimit(major int) int {
	if major >= 7 {
		return paramMost
	}
	return 4096
}

// paramMost is the most parameter bytes CUDA launches on any GPU: those of
// compute capability 7.0 or later (ParamLimit).
const paramMost = 32764

// image is a loaded CUDA module and its functions.
type image struct {
	d   *gpu
	mod uintptr

	mu       sync.Mutex
	funcs    map[string]uintptr // every function, by name, code placed
	entries  map[string]*device.Entry
	unloaded bool // rig unloaded the image
	graphs   int  // graphs that recorded its functions
	gone     bool // CUDA unloaded the module
}

// kernel is a launch's state of a function: Entry.Data.
type kernel struct {
	ctx     uintptr // the context of the function's module
	fn      uintptr
	threads int
	shared  int
	params  int
	// cluster is the clusters of groups the function requires, by axis
	// (__cluster_dims__), zero for none; clusterAtLaunch, that it needs a
	// cluster size set at its launch, which rig's launches do not set.
	cluster         [3]uint32
	clusterAtLaunch bool
}

// modules maps each function of a loaded module to its image, so that a
// graph that records a function keeps its module.
var modules struct {
	mu    sync.Mutex
	byFun map[uintptr]*image
}

var (
	elfMagic    = []byte{0x7f, 'E', 'L', 'F'}
	fatbinMagic = []byte{0x50, 0xed, 0x55, 0xba}
)

// Image loads b, a cubin, a fatbin or PTX text, as a CUDA module, and
// places every function's code before it returns, whatever
// CUDA_MODULE_LOADING asks. Each function may take as much dynamic shared
// memory as a block of the GPU can have, less its static shared memory.
// Counted.
func (d *gpu) Image(b []byte) (device.Code, error) {
	if len(b) == 0 {
		return device.Code{}, fmt.Errorf("cudadev: an image of no bytes")
	}
	if err := checkImage(b); err != nil {
		return device.Code{}, err
	}
	data := b
	if !bytes.HasPrefix(b, elfMagic) && !bytes.HasPrefix(b, fatbinMagic) && b[len(b)-1] != 0 {
		// PTX text: CUDA reads it up to a NUL.
		data = make([]byte, len(b)+1)
		copy(data, b)
	}
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	var mod uintptr
	if r := t.call(t.cuModuleLoadData, uintptr(unsafe.Pointer(&mod)), uintptr(unsafe.Pointer(&data[0]))); r != 0 {
		return device.Code{}, d.fail("loading the image", r, nil)
	}
	img := &image{d: d, mod: mod, funcs: map[string]uintptr{}, entries: map[string]*device.Entry{}}
	if err := d.place(img); err != nil {
		// A refused unload leaves the module loaded for the process,
		// with no image of rig's that could unload it later: the error
		// says so.
		if r := t.call(t.cuModuleUnload, mod); r != 0 {
			err = errors.Join(err, d.fail("unloading the image it could not place", r, nil))
		}
		return device.Code{}, err
	}
	modules.mu.Lock()
	if modules.byFun == nil {
		modules.byFun = map[uintptr]*image{}
	}
	for _, fn := range img.funcs {
		modules.byFun[fn] = img
	}
	modules.mu.Unlock()
	return device.Code{Loaded: img}, nil
}

// place finds every function of img's module, loads its code, and lets it
// take the most dynamic shared memory a block can have.
func (d *gpu) place(img *image) error {
	t := d.t
	var n uint32
	if r := t.call(t.cuModuleGetFunctionCount, uintptr(unsafe.Pointer(&n)), img.mod); r != 0 {
		return d.fail("counting the image's functions", r, nil)
	}
	if n == 0 {
		return nil
	}
	fns := make([]uintptr, n)
	if r := t.call(t.cuModuleEnumerateFunctions, uintptr(unsafe.Pointer(&fns[0])), uintptr(n), img.mod); r != 0 {
		return d.fail("listing the image's functions", r, nil)
	}
	for _, fn := range fns {
		var name uintptr
		if r := t.call(t.cuFuncGetName, uintptr(unsafe.Pointer(&name)), fn); r != 0 {
			return d.fail("naming a function", r, nil)
		}
		if r := t.call(t.cuFuncLoad, fn); r != 0 {
			return d.fail("placing the code of "+cString(name), r, nil)
		}
		var static int32
		if r := t.call(t.cuFuncGetAttribute, uintptr(unsafe.Pointer(&static)), funcSharedSizeBytes, fn); r != 0 {
			return d.fail("reading the shared memory of "+cString(name), r, nil)
		}
		if most := d.sharedOptin - int(static); most > 0 {
			// A refusal leaves the function CUDA's default, 48 KiB.
			if r := t.call(t.cuFuncSetAttribute, fn, funcMaxDynamicShared, uintptr(most)); r.sticky() {
				return d.fail("raising the shared memory of "+cString(name), r, nil)
			}
		}
		img.funcs[cString(name)] = fn
	}
	return nil
}

func (d *gpu) image(i device.Image, call string) (*image, error) {
	img, ok := i.(*image)
	if !ok || img == nil || img.d.info != d.info {
		return nil, fmt.Errorf("cudadev: %s of an image of another device (%T)", call, i)
	}
	return img, nil
}

// Entry is the entry of kernel name of img: its CUfunction, its limits
// and the end of its parameters. It refuses a kernel of more parameter
// bytes than CUDA launches on the GPU. Counted.
func (d *gpu) Entry(i device.Image, name string) (*device.Entry, error) {
	img, err := d.image(i, "entry")
	if err != nil {
		return nil, err
	}
	img.mu.Lock()
	defer img.mu.Unlock()
	return d.entry(img, name)
}

// entry is Entry of name of img, which lies in d's context; img.mu is
// held.
func (d *gpu) entry(img *image, name string) (*device.Entry, error) {
	if e := img.entries[name]; e != nil {
		return e, nil
	}
	if img.gone {
		return nil, fmt.Errorf("cudadev: entry %q of an unloaded image", name)
	}
	fn, ok := img.funcs[name]
	if !ok {
		return nil, device.ErrAbsent
	}
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	var threads, shared int32
	if r := t.call(t.cuFuncGetAttribute, uintptr(unsafe.Pointer(&threads)), funcMaxThreadsPerBlock, fn); r != 0 {
		return nil, d.fail("reading the limits of "+name, r, nil)
	}
	if r := t.call(t.cuFuncGetAttribute, uintptr(unsafe.Pointer(&shared)), funcMaxDynamicShared, fn); r != 0 {
		return nil, d.fail("reading the limits of "+name, r, nil)
	}
	layout, end, err := d.paramLayout(fn, name)
	if err != nil {
		return nil, err
	}
	if err := checkParams(name, end, d.major, d.minor); err != nil {
		return nil, err
	}
	k := &kernel{ctx: d.ctx, fn: fn, threads: int(threads), shared: int(shared), params: end}
	k.cluster, k.clusterAtLaunch = clusterOf(t, fn)
	e := &device.Entry{Name: name, Code: uint64(fn), Params: end, Threads: int(threads), Shared: int(shared), Layout: layout, Data: k}
	img.entries[name] = e
	return e, nil
}

// clusterOf is the clusters of groups fn requires, by axis, and whether it
// needs a cluster size set at its launch. A driver that knows no such
// attribute (before CUDA 12) refuses to read it: fn then requires none.
func clusterOf(t *table, fn uintptr) (dims [3]uint32, atLaunch bool) {
	var v int32
	for a := range dims {
		v = 0
		if t.call(t.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(funcClusterWidth+a), fn) == 0 && v > 0 {
			dims[a] = uint32(v)
		}
	}
	v = 0
	atLaunch = t.call(t.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), funcClusterAtLaunch, fn) == 0 && v != 0
	return dims, atLaunch
}

// kernelOf is the kernel of img's function fn and its name, as Entry
// makes them: those of fn's entry, made where Entry made none yet. img
// lies in d's context.
func (d *gpu) kernelOf(img *image, fn uintptr) (*kernel, string, error) {
	img.mu.Lock()
	defer img.mu.Unlock()
	for name, f := range img.funcs {
		if f != fn {
			continue
		}
		e, err := d.entry(img, name)
		if err != nil {
			return nil, "", err
		}
		return e.Data.(*kernel), name, nil
	}
	return nil, "", fmt.Errorf("cudadev: %#x is no function of the image", fn)
}

// paramLayout returns where each of fn's parameters lies, and the end of
// its last (cuFuncGetParamInfo). It returns an error naming the kernel
// where CUDA states a parameter at an offset before that of the parameter
// before it (offsets that go backwards) or within that parameter (offsets
// that overlap), past the most parameter bytes CUDA launches on any GPU
// (paramMost), or more than paramMost parameters, which take a byte or
// more each: it asks CUDA paramMost+1 times at most.
func (d *gpu) paramLayout(fn uintptr, name string) ([]device.Param, int, error) {
	t := d.t
	layout := []device.Param{}
	end := uint64(0)
	for i := range paramMost + 1 {
		var off, size uint64
		r := t.call(t.cuFuncGetParamInfo, fn, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r == errInvalidValue {
			return layout, int(end), nil
		}
		if r != 0 {
			return nil, 0, d.fail("reading the parameters of "+name, r, nil)
		}
		if i > 0 {
			prev := layout[i-1]
			switch {
			case off < uint64(prev.Offset):
				return nil, 0, fmt.Errorf("cudadev: kernel %q: CUDA states parameter %d at byte %d, before parameter %d at byte %d", name, i, off, i-1, prev.Offset)
			case off < end:
				return nil, 0, fmt.Errorf("cudadev: kernel %q: CUDA states parameter %d at byte %d, within parameter %d, of %d bytes at byte %d", name, i, off, i-1, prev.Size, prev.Offset)
			}
		}
		if off > paramMost || size > paramMost-off {
			return nil, 0, fmt.Errorf("cudadev: kernel %q: CUDA states parameter %d at byte %d, of %d bytes, past the %d parameter bytes CUDA launches", name, i, off, size, paramMost)
		}
		layout = append(layout, device.Param{Offset: int(off), Size: int(size)})
		end = off + size
	}
	return nil, 0, fmt.Errorf("cudadev: kernel %q: CUDA states more than %d parameters, though a parameter takes a byte or more of at most %d", name, paramMost, paramMost)
}

// checkParams refuses a kernel of more parameter bytes than CUDA launches
// on a GPU of compute capability major.minor.
func checkParams(name string, end, major, minor int) error {
	if lim := ParamLimit(major); end > lim {
		return fmt.Errorf("cudadev: kernel %q takes %d parameter bytes, more than the %d CUDA launches on compute capability %d.%d", name, end, lim, major, minor)
	}
	return nil
}

// Prepare does nothing: an entry makes nothing slow, since Image placed
// every function's code.
func (d *gpu) Prepare(i device.Image, name string) error {
	_, err := d.image(i, "prepare")
	return err
}

// Unload unloads img's module, or, while graphs recorded its functions,
// once the last of them is destroyed. After it no new graph records the
// image's functions. Where CUDA refuses the unload, the module stays
// loaded and the image usable, as before the call, and a later Unload
// tries again; once CUDA unloaded it, Unload does nothing. Where CUDA
// refuses the unload that the last graph's Destroy makes, the graph
// returns the refusal, and the device's Stop, where it comes later, tries
// again (dropUnloaded). A fault of the GPU's work is a *device.Fault; any
// other refusal of CUDA is an error naming it. Counted.
func (d *gpu) Unload(i device.Image) error {
	img, err := d.image(i, "unload")
	if err != nil {
		return err
	}
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.gone {
		return nil
	}
	if img.graphs > 0 {
		img.unloaded = true
		return nil
	}
	if err := img.drop(); err != nil {
		img.unloaded = false
		return err
	}
	img.unloaded = true
	return nil
}

// dropUnloaded unloads the modules of d's images that rig unloaded while
// graphs held them, and whose unload CUDA refused once the last graph let
// go of them (holds.release): no graph holds them, and rig unloads an
// image once. It returns CUDA's refusals, after which the modules stay
// loaded for the process. Where the GPU faulted, CUDA unloads nothing,
// and it does nothing. Stop calls it.
func (d *gpu) dropUnloaded() error {
	if d.faulted() != "" {
		return nil
	}
	imgs := map[*image]struct{}{}
	modules.mu.Lock()
	for _, img := range modules.byFun {
		if img.d == d {
			imgs[img] = struct{}{}
		}
	}
	modules.mu.Unlock()
	var errs []error
	for img := range imgs {
		img.mu.Lock()
		if img.unloaded && img.graphs == 0 {
			if err := img.drop(); err != nil {
				errs = append(errs, err)
			}
		}
		img.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cudadev: the module of an image rig unloaded stays loaded: %w", err)
	}
	return nil
}

// drop unloads the module, and once CUDA unloaded it, marks it gone and
// forgets its functions. Where CUDA refuses, the module stays loaded, its
// functions known, and drop returns the refusal. img.mu is held.
func (img *image) drop() error {
	if img.gone {
		return nil
	}
	d, t := img.d, img.d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	if r := f.c1(t.cuModuleUnload, img.mod); r != 0 {
		if !r.sticky() {
			// A refusal of the call alone, which says nothing of the
			// GPU's work: no loss.
			return fmt.Errorf("cudadev: unloading a module: %w", t.err(r))
		}
		d.noteFault(t.text(r))
		return &device.Fault{Why: "unloading a module: " + t.text(r)}
	}
	img.gone = true
	modules.mu.Lock()
	for _, fn := range img.funcs {
		// Once CUDA unloaded the module, a load may get the handle of
		// one of its functions for a function of its own, and record it
		// before this one forgets it.
		if modules.byFun[fn] == img {
			delete(modules.byFun, fn)
		}
	}
	modules.mu.Unlock()
	return nil
}
