package cudadev

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
)

// The graph maker of the capability record:
// graphs of kernel, memcpy, memset, event and empty nodes made in the
// device's context, executable graphs, their updates, and their launch as
// a fill part (rig.Fill(exec, 0)).

type graphs struct{ d *gpu }

// holds is the images whose modules a graph or an executable graph keeps
// loaded, since it recorded their functions: for each, the holds of its
// functions (hold), or 1 for an image held from another graph (copyFrom).
type holds struct {
	mu     sync.Mutex
	images map[*image]int
}

// hold keeps the image of the function fn loaded for h, ahead of a record
// of fn, or returns why it cannot: fn is no function of a loaded image, or
// rig unloaded it. Where CUDA refuses the record, unhold undoes the hold.
func (h *holds) hold(fn uint64) (*image, error) {
	modules.mu.Lock()
	img := modules.byFun[uintptr(fn)]
	modules.mu.Unlock()
	if img == nil {
		return nil, fmt.Errorf("cudadev: graph: %#x is no function of a loaded image", fn)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.unloaded {
		// Also where h holds it already: rig unloaded it, and no graph
		// records its functions from then on.
		return nil, errors.New("cudadev: graph: the function's image is unloaded")
	}
	if h.images[img] > 0 {
		h.images[img]++
		return img, nil
	}
	img.graphs++
	if h.images == nil {
		h.images = map[*image]int{}
	}
	h.images[img] = 1
	return img, nil
}

// unhold undoes a hold of img whose record CUDA refused: h lets go of img
// where no other hold of h keeps it, unloading it where rig unloaded it
// and no other graph holds it. It returns CUDA's refusal of that unload,
// as release does.
func (h *holds) unhold(img *image) error {
	h.mu.Lock()
	if n := h.images[img]; n > 1 {
		h.images[img] = n - 1
		h.mu.Unlock()
		return nil
	}
	delete(h.images, img)
	h.mu.Unlock()
	img.mu.Lock()
	defer img.mu.Unlock()
	img.graphs--
	if img.graphs == 0 && img.unloaded {
		if err := img.drop(); err != nil {
			return fmt.Errorf("cudadev: graph: the module of an image rig unloaded stays loaded: %w", err)
		}
	}
	return nil
}

// copyFrom makes h hold what o holds.
func (h *holds) copyFrom(o *holds) {
	o.mu.Lock()
	imgs := make([]*image, 0, len(o.images))
	for img := range o.images {
		imgs = append(imgs, img)
	}
	o.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, img := range imgs {
		if h.images[img] > 0 {
			continue
		}
		img.mu.Lock()
		img.graphs++
		img.mu.Unlock()
		if h.images == nil {
			h.images = map[*image]int{}
		}
		h.images[img] = 1
	}
}

// release lets go of every image, unloading those rig unloaded and no
// other graph holds, and returns CUDA's refusals of those unloads: a
// module CUDA refused to unload stays loaded, and the Stop of the device
// that loaded it, where it comes later, tries again (dropUnloaded), since
// rig unloads an image once.
func (h *holds) release() error {
	h.mu.Lock()
	imgs := h.images
	h.images = nil
	h.mu.Unlock()
	var errs []error
	for img := range imgs {
		img.mu.Lock()
		img.graphs--
		if img.graphs == 0 && img.unloaded {
			if err := img.drop(); err != nil {
				errs = append(errs, err)
			}
		}
		img.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cudadev: graph: the module of an image rig unloaded stays loaded: %w", err)
	}
	return nil
}

// usable returns the fault of the device's GPU, if any.
func (gs *graphs) usable() error {
	if why := gs.d.faulted(); why != "" {
		return fmt.Errorf("cudadev: graph: the GPU faulted: %s", why)
	}
	gs.d.info.mu.Lock()
	why := gs.d.info.fault
	gs.d.info.mu.Unlock()
	if why != "" {
		return fmt.Errorf("cudadev: graph: the GPU faulted: %s", why)
	}
	return nil
}

// in calls fn with the device's context current on the thread.
func (gs *graphs) in(fn func(t *table) result) result {
	d := gs.d
	t := d.t
	f := getFrame()
	defer putFrame(f)
	prev := enterCtx(t, f, d.ctx)
	defer leaveCtx(t, f, d.ctx, prev)
	return fn(t)
}

func (gs *graphs) err(what string, r result) error {
	if r.sticky() {
		gs.d.noteFault(gs.d.t.text(r))
	}
	return fmt.Errorf("cudadev: graph: %s: %w", what, gs.d.t.err(r))
}

// NewGraph makes an empty graph.
func (gs *graphs) NewGraph() (cuda.Graph, error) {
	if err := gs.usable(); err != nil {
		return nil, err
	}
	var h uintptr
	if r := gs.in(func(t *table) result { return t.call(t.cuGraphCreate, uintptr(unsafe.Pointer(&h)), 0) }); r != 0 {
		return nil, gs.err("making a graph", r)
	}
	return &graph{gs: gs, h: h}, nil
}

// NewEvent makes an event without timing.
func (gs *graphs) NewEvent() (uintptr, error) {
	if err := gs.usable(); err != nil {
		return 0, err
	}
	var ev uintptr
	if r := gs.in(func(t *table) result {
		return t.call(t.cuEventCreate, uintptr(unsafe.Pointer(&ev)), eventDisableTime)
	}); r != 0 {
		return 0, gs.err("making an event", r)
	}
	return ev, nil
}

// DestroyEvent destroys an event NewEvent made.
func (gs *graphs) DestroyEvent(ev uintptr) error {
	if r := gs.in(func(t *table) result { return t.call(t.cuEventDestroy, ev) }); r != 0 {
		return gs.err("destroying an event", r)
	}
	return nil
}

type graph struct {
	gs    *graphs
	h     uintptr
	holds holds
}

func (g *graph) Handle() uintptr { return g.h }

// kernelNode is a CUDA_KERNEL_NODE_PARAMS_v2 with the memory its extra
// points to, in one heap object that stays put while CUDA reads it.
type kernelNode struct {
	p      kernelNodeParams
	extra  [5]uintptr
	size   uint64
	params []byte
}

// newKernelNode is the node of k, whose function reads params bytes of
// parameters (checkKernel): it passes CUDA those bytes of k.Params, as a
// launch does, and no more.
func newKernelNode(k cuda.Kernel, params int) *kernelNode {
	n := &kernelNode{p: kernelNodeParams{fn: uintptr(k.Func),
		gridDimX: k.Grid[0], gridDimY: k.Grid[1], gridDimZ: k.Grid[2],
		blockDimX: k.Block[0], blockDimY: k.Block[1], blockDimZ: k.Block[2],
		sharedMemBytes: k.Shared}}
	if params > 0 {
		n.params = append([]byte(nil), k.Params[:params]...)
		n.size = uint64(len(n.params))
		n.extra = [5]uintptr{launchParamBufferPointer, uintptr(unsafe.Pointer(&n.params[0])),
			launchParamBufferSize, uintptr(unsafe.Pointer(&n.size)), launchParamEnd}
		n.p.extra = uintptr(unsafe.Pointer(&n.extra[0]))
	}
	return n
}

// checkKernel returns the parameter bytes k's function reads, and why k,
// whose function lies in img, cannot be a kernel node of gs's device, or
// nil, as Room refuses for a launch: the function
// lies in another GPU's context; k's grid or block has 0 groups or threads
// along an axis, or more than the GPU has; its block has more threads than
// the function has, or it asks more dynamic shared memory than the
// function takes; or it passes fewer parameter bytes than the function
// reads.
func (gs *graphs) checkKernel(img *image, k cuda.Kernel) (int, error) {
	d := gs.d
	if img.d.ctx != d.ctx {
		return 0, fmt.Errorf("cudadev: graph: the function %#x is loaded on GPU %s, not this GPU (%s)", k.Func, img.d.info.bus, d.info.bus)
	}
	kn, name, err := d.kernelOf(img, uintptr(k.Func))
	if err != nil {
		return 0, err
	}
	if why := d.checkShape(kn, name, &k.Grid, &k.Block, k.Shared); why != "" {
		return 0, fmt.Errorf("cudadev: graph: a kernel node of the function %#x: %s", k.Func, why)
	}
	if len(k.Params) < kn.params {
		return 0, fmt.Errorf("cudadev: graph: %d parameter bytes for the function %#x, which reads %d", len(k.Params), k.Func, kn.params)
	}
	return kn.params, nil
}

func (g *graph) gone() error {
	if g.h == 0 {
		return errors.New("cudadev: graph: the graph is destroyed")
	}
	return g.gs.usable()
}

// Kernel adds a kernel node. It refuses, before CUDA is asked and
// holding nothing, a node that a launch of its function could not be
// (checkKernel).
func (g *graph) Kernel(k cuda.Kernel, after ...cuda.Node) (cuda.Node, error) {
	if err := g.gone(); err != nil {
		return 0, err
	}
	img, err := g.holds.hold(k.Func)
	if err != nil {
		return 0, err
	}
	params, err := g.gs.checkKernel(img, k)
	if err != nil {
		return 0, errors.Join(err, g.holds.unhold(img))
	}
	kn := newKernelNode(k, params)
	var n cuda.Node
	r := g.gs.in(func(t *table) result {
		return t.call(t.cuGraphAddKernelNode, uintptr(unsafe.Pointer(&n)), g.h,
			uintptr(unsafe.Pointer(unsafe.SliceData(after))), uintptr(len(after)), uintptr(unsafe.Pointer(&kn.p)))
	})
	runtime.KeepAlive(kn)
	if r != 0 {
		return 0, errors.Join(g.gs.err("adding a kernel node", r), g.holds.unhold(img))
	}
	return n, nil
}

// checkRows returns why rows rows of n bytes, pitch bytes apart, from
// the address at cannot be the side (the destination or the source) of a
// memcpy or memset node, or "": rows of 0 bytes, a pitch under n with
// more than one row (rows that overlap), or an end past 2^64 (rowsEnd, as
// a copy part's check does). rows is 1 or more.
func checkRows(side string, at, rows, pitch, n uint64) string {
	if n == 0 {
		return "rows of 0 bytes"
	}
	if rows > 1 && pitch < n {
		return fmt.Sprintf("a %s pitch of %d bytes, under the rows' %d: the rows overlap", side, pitch, n)
	}
	if _, ok := rowsEnd(at, rows, pitch, n); !ok {
		return fmt.Sprintf("%d rows of %d bytes, %d bytes apart, from the %s address %#x: past 2^64", rows, n, pitch, side, at)
	}
	return ""
}

// nodePitch is the pitch CUDA is given for rows rows of n bytes, pitch
// bytes apart: n where pitch is 0, or where the row is one, whose pitch is
// not read.
func nodePitch(rows, pitch, n uint64) uint64 {
	if pitch == 0 || rows == 1 {
		return n
	}
	return pitch
}

// copy3D is the CUDA_MEMCPY3D of a copy node, or why c is no copy node
// (checkRows, for each side).
func copy3D(c cuda.Copy) (*memcpy3D, error) {
	rows := max(c.Rows, 1)
	sp, dp := nodePitch(rows, c.SrcPitch, c.RowBytes), nodePitch(rows, c.DstPitch, c.RowBytes)
	why := checkRows("destination", c.Dst, rows, dp, c.RowBytes)
	if why == "" {
		why = checkRows("source", c.Src, rows, sp, c.RowBytes)
	}
	if why != "" {
		return nil, fmt.Errorf("cudadev: graph: a memcpy node of %s", why)
	}
	return &memcpy3D{
		srcMemoryType: memoryTypeUnified, srcDevice: c.Src, srcPitch: sp, srcHeight: rows,
		dstMemoryType: memoryTypeUnified, dstDevice: c.Dst, dstPitch: dp, dstHeight: rows,
		widthInBytes: c.RowBytes, height: rows, depth: 1,
	}, nil
}

// memset1 is the CUDA_MEMSET_NODE_PARAMS of a memset node, or why m is no
// memset node (checkRows).
func memset1(m cuda.Memset) (*memsetParams, error) {
	rows := max(m.Rows, 1)
	pitch := nodePitch(rows, m.Pitch, m.RowBytes)
	if why := checkRows("destination", m.Dst, rows, pitch, m.RowBytes); why != "" {
		return nil, fmt.Errorf("cudadev: graph: a memset node of %s", why)
	}
	return &memsetParams{dst: m.Dst, pitch: pitch, value: uint32(m.Value), elementSize: 1, width: m.RowBytes, height: rows}, nil
}

// Copy adds a memcpy node. It refuses, before CUDA is asked, a copy that
// copy3D refuses.
func (g *graph) Copy(c cuda.Copy, after ...cuda.Node) (cuda.Node, error) {
	if err := g.gone(); err != nil {
		return 0, err
	}
	p, err := copy3D(c)
	if err != nil {
		return 0, err
	}
	var n cuda.Node
	r := g.gs.in(func(t *table) result {
		return t.call(t.cuGraphAddMemcpyNode, uintptr(unsafe.Pointer(&n)), g.h, uintptr(unsafe.Pointer(unsafe.SliceData(after))), uintptr(len(after)), uintptr(unsafe.Pointer(p)), g.gs.d.ctx)
	})
	if r != 0 {
		return 0, g.gs.err("adding a memcpy node", r)
	}
	return n, nil
}

// Memset adds a memset node. It refuses, before CUDA is asked, a fill
// that memset1 refuses.
func (g *graph) Memset(m cuda.Memset, after ...cuda.Node) (cuda.Node, error) {
	if err := g.gone(); err != nil {
		return 0, err
	}
	p, err := memset1(m)
	if err != nil {
		return 0, err
	}
	var n cuda.Node
	r := g.gs.in(func(t *table) result {
		return t.call(t.cuGraphAddMemsetNode, uintptr(unsafe.Pointer(&n)), g.h, uintptr(unsafe.Pointer(unsafe.SliceData(after))), uintptr(len(after)), uintptr(unsafe.Pointer(p)), g.gs.d.ctx)
	})
	if r != 0 {
		return 0, g.gs.err("adding a memset node", r)
	}
	return n, nil
}

func (g *graph) event(what string, fn uintptr, ev uintptr, after []cuda.Node) (cuda.Node, error) {
	if err := g.gone(); err != nil {
		return 0, err
	}
	var n cuda.Node
	r := g.gs.in(func(t *table) result {
		return t.call(fn, uintptr(unsafe.Pointer(&n)), g.h, uintptr(unsafe.Pointer(unsafe.SliceData(after))), uintptr(len(after)), ev)
	})
	if r != 0 {
		return 0, g.gs.err(what, r)
	}
	return n, nil
}

// EventRecord adds an event record node.
func (g *graph) EventRecord(ev uintptr, after ...cuda.Node) (cuda.Node, error) {
	return g.event("adding an event record node", g.gs.d.t.cuGraphAddEventRecordNode, ev, after)
}

// EventWait adds an event wait node.
func (g *graph) EventWait(ev uintptr, after ...cuda.Node) (cuda.Node, error) {
	return g.event("adding an event wait node", g.gs.d.t.cuGraphAddEventWaitNode, ev, after)
}

// Empty adds an empty node.
func (g *graph) Empty(after ...cuda.Node) (cuda.Node, error) {
	if err := g.gone(); err != nil {
		return 0, err
	}
	var n cuda.Node
	r := g.gs.in(func(t *table) result {
		return t.call(t.cuGraphAddEmptyNode, uintptr(unsafe.Pointer(&n)), g.h, uintptr(unsafe.Pointer(unsafe.SliceData(after))), uintptr(len(after)))
	})
	if r != 0 {
		return 0, g.gs.err("adding an empty node", r)
	}
	return n, nil
}

// Instantiate makes an executable graph, which keeps the graph's images
// loaded until it is destroyed.
func (g *graph) Instantiate() (cuda.Exec, error) {
	if err := g.gone(); err != nil {
		return nil, err
	}
	var h uintptr
	if r := g.gs.in(func(t *table) result {
		return t.call(t.cuGraphInstantiateWithFlags, uintptr(unsafe.Pointer(&h)), g.h, 0)
	}); r != 0 {
		return nil, g.gs.err("instantiating a graph", r)
	}
	x := &execGraph{gs: g.gs, h: h}
	x.holds.copyFrom(&g.holds)
	return x, nil
}

// Destroy destroys the graph, and unloads the modules of the images rig
// unloaded that it alone held; it returns CUDA's refusal of either.
func (g *graph) Destroy() error {
	if g.h == 0 {
		return nil
	}
	h := g.h
	g.h = 0
	r := g.gs.in(func(t *table) result { return t.call(t.cuGraphDestroy, h) })
	err := g.holds.release()
	if r != 0 {
		return errors.Join(g.gs.err("destroying a graph", r), err)
	}
	return err
}

type execGraph struct {
	gs *graphs
	// mu guards h and serializes CUDA's calls on the executable graph,
	// the launches of Submit's fill parts among them: CUDA's graph
	// objects must not be used from two threads at once, and the devices
	// of a GPU's timelines, each under its own submit lock, may launch
	// one executable graph while its owner sets a node.
	mu    sync.Mutex
	h     uintptr
	holds holds
}

func (x *execGraph) Handle() uintptr {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.h
}

func (x *execGraph) gone() error {
	if x.Handle() == 0 {
		return errExecDestroyed
	}
	return x.gs.usable()
}

var errExecDestroyed = errors.New("cudadev: graph: the executable graph is destroyed")

// call calls fn with the executable graph's handle and the device's
// context current, while no other call of CUDA's on the executable graph
// runs; where the graph is destroyed it calls nothing and returns false.
func (x *execGraph) call(fn func(t *table, h uintptr) result) (result, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.h == 0 {
		return 0, false
	}
	h := x.h
	return x.gs.in(func(t *table) result { return fn(t, h) }), true
}

// launch enqueues a launch of the executable graph on stream through f,
// launch being cuGraphLaunch's address, while no other call of CUDA's on
// the executable graph runs. A destroyed graph is not launched: the answer
// is CUDA_ERROR_INVALID_VALUE, as CUDA answers a null graph.
func (x *execGraph) launch(f *frame, launch, stream uintptr) result {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.h == 0 {
		return errInvalidValue
	}
	return f.c2(launch, x.h, stream)
}

// SetKernel sets a kernel node's launch. It refuses, before CUDA is
// asked and holding nothing more, a launch that checkKernel refuses.
func (x *execGraph) SetKernel(n cuda.Node, k cuda.Kernel) error {
	if err := x.gone(); err != nil {
		return err
	}
	img, err := x.holds.hold(k.Func)
	if err != nil {
		return err
	}
	params, err := x.gs.checkKernel(img, k)
	if err != nil {
		return errors.Join(err, x.holds.unhold(img))
	}
	kn := newKernelNode(k, params)
	r, ok := x.call(func(t *table, h uintptr) result {
		return t.call(t.cuGraphExecKernelNodeSetParams, h, uintptr(n), uintptr(unsafe.Pointer(&kn.p)))
	})
	runtime.KeepAlive(kn)
	if !ok {
		return errors.Join(errExecDestroyed, x.holds.unhold(img))
	}
	if r != 0 {
		return errors.Join(x.gs.err("setting a kernel node", r), x.holds.unhold(img))
	}
	return nil
}

// SetCopy sets a memcpy node's copy. It refuses, before CUDA is asked,
// a copy that copy3D refuses.
func (x *execGraph) SetCopy(n cuda.Node, c cuda.Copy) error {
	if err := x.gone(); err != nil {
		return err
	}
	p, err := copy3D(c)
	if err != nil {
		return err
	}
	r, ok := x.call(func(t *table, h uintptr) result {
		return t.call(t.cuGraphExecMemcpyNodeSetParams, h, uintptr(n), uintptr(unsafe.Pointer(p)), x.gs.d.ctx)
	})
	if !ok {
		return errExecDestroyed
	}
	if r != 0 {
		return x.gs.err("setting a memcpy node", r)
	}
	return nil
}

// SetMemset sets a memset node's fill. It refuses, before CUDA is
// asked, a fill that memset1 refuses.
func (x *execGraph) SetMemset(n cuda.Node, m cuda.Memset) error {
	if err := x.gone(); err != nil {
		return err
	}
	p, err := memset1(m)
	if err != nil {
		return err
	}
	r, ok := x.call(func(t *table, h uintptr) result {
		return t.call(t.cuGraphExecMemsetNodeSetParams, h, uintptr(n), uintptr(unsafe.Pointer(p)), x.gs.d.ctx)
	})
	if !ok {
		return errExecDestroyed
	}
	if r != 0 {
		return x.gs.err("setting a memset node", r)
	}
	return nil
}

// Upload uploads the graph on the device's "COMPUTE:0" stream.
func (x *execGraph) Upload() error {
	if err := x.gone(); err != nil {
		return err
	}
	d := x.gs.d
	d.stopMu.Lock()
	defer d.stopMu.Unlock()
	if d.stopped {
		return errStopped
	}
	r, ok := x.call(func(t *table, h uintptr) result { return t.call(t.cuGraphUpload, h, d.streams[0]) })
	if !ok {
		return errExecDestroyed
	}
	if r != 0 {
		return x.gs.err("uploading a graph", r)
	}
	return nil
}

// Destroy destroys the executable graph, and unloads the modules of the
// images rig unloaded that it alone held; it returns CUDA's refusal of
// either.
func (x *execGraph) Destroy() error {
	x.mu.Lock()
	h := x.h
	x.h = 0
	var r result
	if h != 0 {
		r = x.gs.in(func(t *table) result { return t.call(t.cuGraphExecDestroy, h) })
	}
	x.mu.Unlock()
	if h == 0 {
		return nil
	}
	err := x.holds.release()
	if r != 0 {
		return errors.Join(x.gs.err("destroying an executable graph", r), err)
	}
	return err
}
