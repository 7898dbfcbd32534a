package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/profile"
	rig "github.com/rig-go/rig/runtime"
)

// workload is one kind of work rigbench submits.
type workload struct {
	// what says what one submission does, with %s for its size.
	what string
	// sized is true where -size applies, and size is the default.
	sized bool
	size  int64
	// whatAt, where set, says what one submission does at -size bytes,
	// in place of what.
	whatAt func(size int64) string
	// lanes makes the submitters' work on rig for the run's devices.
	lanes func(e *env) ([]lane[rig.Point], error)
}

// workloads are the workloads, by the name -workload gives them.
var workloads = map[string]*workload{
	"empty": {what: "a launch of the empty kernel (one thread)", lanes: perDevice(emptyLane)},
	"twice": {what: "a launch of twice over a float32 array of %s rounded up to whole groups of 256 threads (one group of fewer below 1KiB)", sized: true, size: 4 << 10, whatAt: twiceWhat, lanes: perDevice(twiceLane)},
	"d2d":   {what: "a copy of %s from Device to Device memory", sized: true, size: 1 << 20, lanes: perDevice(copyLane(device.DeviceMemory, device.DeviceMemory))},
	"h2d":   {what: "a copy of %s from Pinned to Device memory", sized: true, size: 1 << 20, lanes: perDevice(copyLane(device.PinnedMemory, device.DeviceMemory))},
	"d2h":   {what: "a copy of %s from Device to Pinned memory", sized: true, size: 1 << 20, lanes: perDevice(copyLane(device.DeviceMemory, device.PinnedMemory))},
	"fill":  {what: "a fill of %s of Device memory", sized: true, size: 1 << 20, lanes: perDevice(fillLane)},
	"mixed": {what: "in turn: a fill of %s on device A; a copy of it into device B's buffer, on B (B waits for A); an empty launch on B; a copy back, on A (A waits for B)", sized: true, size: 64 << 10, lanes: mixedLanes},
}

// whatOf says what one submission of w does at size bytes.
func (w *workload) whatOf(size int64) string {
	if w.whatAt != nil {
		return w.whatAt(size)
	}
	return fmt.Sprintf(w.what, profile.Bytes(uint64(size)))
}

// workloadNames lists the workloads' names, sorted.
func workloadNames() []string {
	var names []string
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lane is one submitter's work: submit submits one piece and returns its
// ticket and the bytes it moves; wait waits until the ticket's work is
// done. T is rig.Point for rig, and the baselines' own tickets.
type lane[T any] struct {
	// device names the device the lane submits to.
	device string
	// baseline marks a lane of -compare's baseline, which its messages
	// name as such.
	baseline bool
	submit   func(ctx context.Context) (T, int64, error)
	wait     func(ctx context.Context, t T) error
	// do, where set, submits one piece and waits for it in one call, as
	// Run.Do does: submitted says whether t is the piece's ticket, and
	// err then what the wait returned.
	do func(ctx context.Context) (t T, n int64, submitted bool, err error)
	// observe, where set, sees the latencies of submissions whose
	// points were reached, in nanoseconds, a batch at a time (tally).
	observe func(lats []int64)
	// state describes what a wait on t that timed out waited for, and
	// where the devices stand; nil where there is nothing to say.
	state func(t T) string
}

// name is how the lane's messages name where it submits: the device, or
// the baseline on it.
func (l *lane[T]) name() string {
	if l.baseline {
		return "the baseline on " + l.device
	}
	return l.device
}

// env is what a run's workload is made on: the open devices and the
// configuration, with the functions loaded on each device.
type env struct {
	cfg   *config
	devs  []opened
	size  int64
	funcs map[*rig.Device]map[string]*rig.Function
}

// fn is the kernel name loaded on o's device, loaded at the first call
// for it from the binary its driver gives (driver.image).
func (e *env) fn(o opened, name string) (*rig.Function, error) {
	d := o.dev
	if f := e.funcs[d][name]; f != nil {
		return f, nil
	}
	drv := drivers[o.spec.Driver]
	if drv == nil || drv.image == nil {
		return nil, fmt.Errorf("rigbench has no binary of kernel %q for device %s", name, o.spec)
	}
	bin, err := drv.image(d.Arch(), d.Name(), name)
	if err != nil {
		return nil, err
	}
	img, err := d.LoadImage(bin)
	if err != nil {
		return nil, err
	}
	f, err := img.Resolve(name)
	if err != nil {
		return nil, err
	}
	if e.funcs == nil {
		e.funcs = map[*rig.Device]map[string]*rig.Function{}
	}
	if e.funcs[d] == nil {
		e.funcs[d] = map[string]*rig.Function{}
	}
	e.funcs[d][name] = f
	return f, nil
}

// pointLane is a lane on rig of device d whose submissions are the runs
// next returns, with the buffers to submit them with and the bytes they
// move.
func pointLane(d *rig.Device, next func() (*rig.Run, []*rig.Buffer, int64)) lane[rig.Point] {
	return runLane(d.Name(), next, d)
}

// runLane is pointLane for a lane named device whose runs go to devs.
func runLane(device string, next func() (*rig.Run, []*rig.Buffer, int64), devs ...*rig.Device) lane[rig.Point] {
	return lane[rig.Point]{device: device,
		submit: func(ctx context.Context) (rig.Point, int64, error) {
			r, bufs, n := next()
			p, err := r.Submit(ctx, bufs...)
			return p, n, err
		},
		wait: func(ctx context.Context, p rig.Point) error { return p.Wait(ctx) },
		do: func(ctx context.Context) (rig.Point, int64, bool, error) {
			r, bufs, n := next()
			p, err := r.Do(ctx, bufs...)
			return p, n, p.Device() != nil, err
		},
		state: func(p rig.Point) string { return pointState(p, devs...) }}
}

// perDevice makes -c lanes on each device with mk.
func perDevice(mk func(e *env, o opened) (lane[rig.Point], error)) func(e *env) ([]lane[rig.Point], error) {
	return func(e *env) ([]lane[rig.Point], error) {
		var out []lane[rig.Point]
		for _, o := range e.devs {
			for range e.cfg.C {
				l, err := mk(e, o)
				if err != nil {
					return nil, fmt.Errorf("setting up %s on %s: %w", e.cfg.Workload, o.spec, err)
				}
				out = append(out, l)
			}
		}
		return out, nil
	}
}

func emptyLane(e *env, o opened) (lane[rig.Point], error) {
	f, err := e.fn(o, "empty")
	if err != nil {
		return lane[rig.Point]{}, err
	}
	return launchLane(o.dev, f)
}

// launchLane is a lane whose submissions are one launch of f on d, with
// no parameters.
func launchLane(d *rig.Device, f *rig.Function) (lane[rig.Point], error) {
	s, err := rig.NewSubmission(d, rig.Launch(f, 0))
	if err != nil {
		return lane[rig.Point]{}, err
	}
	return pointLane(d, func() (*rig.Run, []*rig.Buffer, int64) { return s.Take(), nil, 0 }), nil
}

// twiceShape is the groups and threads of a launch of twice over n
// values: 256 threads a group where n allows, and the array's values, n
// rounded up to whole groups.
func twiceShape(n int64) (groups, threads int, values int64) {
	threads = int(min(n, 256))
	groups = int((n + int64(threads) - 1) / int64(threads))
	return groups, threads, int64(groups) * int64(threads)
}

// twiceWhat says what a launch of twice at size bytes does: the array
// and the threads a group that twiceShape makes of them.
func twiceWhat(size int64) string {
	groups, threads, values := twiceShape(size / 4)
	unit := "threads"
	if threads == 1 {
		unit = "thread"
	}
	what := fmt.Sprintf("a launch of twice over a float32 array of %s, %d %s a group", profile.Bytes(uint64(4*values)), threads, unit)
	if 4*values != size {
		what += fmt.Sprintf(" (-size %d rounded up to %d whole groups)", size, groups)
	}
	return what
}

func twiceLane(e *env, o opened) (lane[rig.Point], error) {
	d := o.dev
	f, err := e.fn(o, "twice")
	if err != nil {
		return lane[rig.Point]{}, err
	}
	groups, threads, values := twiceShape(e.size / 4)
	x, err := d.Alloc(device.DeviceMemory, int(4*values))
	if err != nil {
		return lane[rig.Point]{}, err
	}
	s, err := rig.NewSubmission(d, rig.Launch(f, 8, rig.ReadWrite(0, 0)))
	if err != nil {
		return lane[rig.Point]{}, err
	}
	bufs := []*rig.Buffer{x}
	return pointLane(d, func() (*rig.Run, []*rig.Buffer, int64) {
		r := s.Take()
		r.Groups(0, groups, 1, 1)
		r.Threads(0, threads, 1, 1)
		return r, bufs, 0
	}), nil
}

func copyLane(from, to device.Memory) func(e *env, o opened) (lane[rig.Point], error) {
	return func(e *env, o opened) (lane[rig.Point], error) {
		d := o.dev
		src, err := d.Alloc(from, int(e.size))
		if err != nil {
			return lane[rig.Point]{}, err
		}
		dst, err := d.Alloc(to, int(e.size))
		if err != nil {
			return lane[rig.Point]{}, err
		}
		s, err := rig.NewSubmission(d, rig.Copy(0, 0, 1, 0, uint64(e.size)))
		if err != nil {
			return lane[rig.Point]{}, err
		}
		bufs, n := []*rig.Buffer{src, dst}, e.size
		return pointLane(d, func() (*rig.Run, []*rig.Buffer, int64) { return s.Take(), bufs, n }), nil
	}
}

func fillLane(e *env, o opened) (lane[rig.Point], error) {
	d := o.dev
	dst, err := d.Alloc(device.DeviceMemory, int(e.size))
	if err != nil {
		return lane[rig.Point]{}, err
	}
	s, err := rig.NewSubmission(d, rig.FillBytes(0, 0, uint64(e.size), 0x5a))
	if err != nil {
		return lane[rig.Point]{}, err
	}
	bufs, n := []*rig.Buffer{dst}, e.size
	return pointLane(d, func() (*rig.Run, []*rig.Buffer, int64) { return s.Take(), bufs, n }), nil
}

// mixedLanes makes -c lanes, each of which submits in turn a fill on
// device A, a copy of A's buffer into B's on B, an empty launch on B, and a
// copy of B's buffer into A's on A: the copies wait for the other device's
// work. A and B are the first two devices; with one, both are it.
func mixedLanes(e *env) ([]lane[rig.Point], error) {
	oa, ob := e.devs[0], e.devs[0]
	if len(e.devs) > 1 {
		ob = e.devs[1]
	}
	a, b := oa.dev, ob.dev
	f, err := e.fn(ob, "empty")
	if err != nil {
		return nil, err
	}
	fill, err := rig.NewSubmission(a, rig.FillBytes(0, 0, uint64(e.size), 0x5a))
	if err != nil {
		return nil, err
	}
	there, err := rig.NewSubmission(b, rig.Copy(0, 0, 1, 0, uint64(e.size)))
	if err != nil {
		return nil, err
	}
	launch, err := rig.NewSubmission(b, rig.Launch(f, 0))
	if err != nil {
		return nil, err
	}
	back, err := rig.NewSubmission(a, rig.Copy(0, 0, 1, 0, uint64(e.size)))
	if err != nil {
		return nil, err
	}
	var out []lane[rig.Point]
	for range e.cfg.C {
		ba, err := a.Alloc(device.DeviceMemory, int(e.size))
		if err != nil {
			return nil, err
		}
		bb, err := b.Alloc(device.DeviceMemory, int(e.size))
		if err != nil {
			return nil, err
		}
		onA, ab, ba2 := []*rig.Buffer{ba}, []*rig.Buffer{ba, bb}, []*rig.Buffer{bb, ba}
		n, step := e.size, 0
		out = append(out, runLane(a.Name()+"+"+b.Name(), func() (*rig.Run, []*rig.Buffer, int64) {
			k := step % 4
			step++
			switch k {
			case 0:
				return fill.Take(), onA, n
			case 1:
				return there.Take(), ab, n
			case 2:
				return launch.Take(), nil, 0
			}
			return back.Take(), ba2, n
		}, a, b))
	}
	return out, nil
}

// pointState names the point p and where each device stands: its last
// value and its word.
func pointState(p rig.Point, devs ...*rig.Device) string {
	var b strings.Builder
	if d := p.Device(); d != nil {
		fmt.Fprintf(&b, "the point %s:%d", d.Name(), p.Value())
	}
	for _, d := range devs {
		word := "its own"
		if w := d.Word(); w != nil {
			word = strconv.FormatUint(atomic.LoadUint64(w), 10)
		}
		fmt.Fprintf(&b, "; %s: last value %d, word %s", d.Name(), d.Last().Value(), word)
	}
	return b.String()
}
