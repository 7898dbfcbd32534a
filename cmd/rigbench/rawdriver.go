package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/timeline"
)

// The driver's baseline drives the workload straight through each
// device's driver (the device.Driver its opener's Make returns), with no
// rig core in between: no supervisor, no hazards, no pools. Each lane
// builds the device.Submission of its workload's item once, and for each
// submission sets its value and calls Room then Submit under the device's
// mutex (the contract asks for value order, and rig's submit lock holds
// the same calls), Grow where Room asks for it, and Commit where Submit
// returned Pending and a wait needs the value. A wait spins on the
// device's word, yielding between reads: the timeline word the baseline
// gave Make, or the driver's Signaled where it keeps a word of its own. So
// the ratio of rig to it is rig's own cost on that driver.

// rawName names the driver's baseline in the report.
const rawName = "baseline (the driver alone)"

// rawDev is a device opened through its driver alone.
type rawDev struct {
	spec  spec
	name  string
	drv   device.Driver
	facts *device.Facts
	// word is the timeline word the device's work writes, nil where the
	// driver keeps its own (read through Signaled); slot is the array's
	// slot that Make was given.
	word *uint64
	slot int

	// mu orders the values and the driver's Room, Submit and Commit.
	mu        sync.Mutex
	last      atomic.Uint64 // the last value submitted; written under mu
	committed atomic.Uint64 // the last value committed; written under mu

	regions []device.Region // Alloc's regions, placed images' included
	images  []device.Image
	entries map[string]*device.Entry
}

// openRaw opens the device s names through its driver, with a word of
// rig's array.
func openRaw(s spec, retry time.Duration) (*rawDev, error) {
	op, err := s.opener()
	if err != nil {
		return nil, err
	}
	slot, w, err := timeline.Take()
	if err != nil {
		return nil, err
	}
	var d device.Driver
	err = retryOpen(retry, func() error {
		var err error
		d, err = op.Make(w)
		return err
	})
	if err != nil {
		timeline.Give(slot)
		return nil, &unavailableError{s, err}
	}
	f := d.Facts()
	if f == nil || len(f.Queues) == 0 {
		_ = d.Stop("")
		timeline.Give(slot)
		return nil, &unavailableError{s, errors.New("the driver declares no queues")}
	}
	r := &rawDev{spec: s, name: op.Name, drv: d, facts: f, word: f.Word, slot: slot, entries: map[string]*device.Entry{}}
	v := r.read()
	r.last.Store(v)
	r.committed.Store(v)
	return r, nil
}

// read is the value in the device's word.
func (r *rawDev) read() uint64 {
	if r.word != nil {
		return atomic.LoadUint64(r.word)
	}
	return r.drv.Signaled()
}

// alloc is n bytes of memory m, rounded up to rig's word of 4 bytes.
func (r *rawDev) alloc(m device.Memory, n int64) (device.Region, error) {
	if !r.facts.Kinds.Has(m) {
		return nil, fmt.Errorf("%s has no %s memory", r.name, m)
	}
	reg, err := r.drv.Alloc(m, int((n+3)&^3))
	if err != nil {
		return nil, fmt.Errorf("%d bytes of %s memory on %s: %w", n, m, r.name, err)
	}
	r.regions = append(r.regions, reg)
	return reg, nil
}

// entry is the driver's entry of kernel, from the binary of rigbench's
// kernels for the device, which it loads at the first call for it.
func (r *rawDev) entry(kernel string) (*device.Entry, error) {
	if e := r.entries[kernel]; e != nil {
		return e, nil
	}
	drv := drivers[r.spec.Driver]
	if drv == nil || drv.image == nil {
		return nil, fmt.Errorf("rigbench has no binary of kernel %q for device %s", kernel, r.spec)
	}
	bin, err := drv.image(r.facts.Arch, r.name, kernel)
	if err != nil {
		return nil, err
	}
	img, err := r.load(bin)
	if err != nil {
		return nil, err
	}
	e, err := r.drv.Entry(img, kernel)
	if err != nil {
		return nil, fmt.Errorf("the entry of %q on %s: %w", kernel, r.name, err)
	}
	if e.Name == "" {
		e.Name = kernel
	}
	r.entries[kernel] = e
	return e, nil
}

// load loads the binary bin: as the driver loads it, or laid into Device
// memory allocated for it where the driver asks for a place.
func (r *rawDev) load(bin []byte) (device.Image, error) {
	code, err := r.drv.Image(bin)
	if err != nil {
		return nil, fmt.Errorf("an image on %s: %w", r.name, err)
	}
	img := code.Loaded
	if img == nil {
		if code.Place < 1 || code.Lay == nil {
			return nil, fmt.Errorf("an image on %s: the driver answered neither an image nor a place", r.name)
		}
		place, err := r.alloc(device.DeviceMemory, int64(code.Place))
		if err != nil {
			return nil, fmt.Errorf("the place of an image: %w", err)
		}
		if img, err = code.Lay(place); err != nil {
			return nil, fmt.Errorf("laying out an image on %s: %w", r.name, err)
		}
	}
	r.images = append(r.images, img)
	return img, nil
}

// submit submits s as the device's next value, and returns the value.
// While Room returns later it waits for the device's progress; where it
// returns grow, it grows the queues and asks again.
func (r *rawDev) submit(ctx context.Context, s *device.Submission) (uint64, error) {
	for grows := 0; ; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		r.mu.Lock()
		v := r.last.Load() + 1
		s.Value = v
		room := r.drv.Room(s)
		switch room.Kind {
		case device.RoomOK:
			a := r.drv.Submit(s)
			r.last.Store(v)
			if a.Kind == device.Committed {
				r.committed.Store(v)
			}
			if k, ok := r.drv.(device.Kicker); ok && a.Kind != device.Failed {
				// Under the lock, so that the kicks come in value order.
				k.Kick(v)
			}
			r.mu.Unlock()
			if a.Kind == device.Failed {
				return v, fmt.Errorf("%s failed: %s", r.name, a.Reason)
			}
			return v, nil
		case device.RoomLater:
			r.mu.Unlock()
			if err := r.progress(ctx); err != nil {
				return 0, err
			}
		case device.RoomGrow:
			r.mu.Unlock()
			err := r.drv.Grow()
			var short *device.Short
			if errors.As(err, &short) && grows < 4 {
				// Nothing here frees memory, but values that complete
				// may give the driver back what they held.
				if err := r.progress(ctx); err != nil {
					return 0, err
				}
			} else if err != nil {
				return 0, fmt.Errorf("growing the queues of %s: %w", r.name, err)
			}
			grows++
		default:
			r.mu.Unlock()
			return 0, fmt.Errorf("%s refuses part %d: %s", r.name, room.Part, room.Reason)
		}
	}
}

// progress waits until the word moves past what it reads now, where work
// is in flight.
func (r *rawDev) progress(ctx context.Context) error {
	cur := r.read()
	if device.AtLeast(cur, r.last.Load()) {
		runtime.Gosched()
		return ctx.Err()
	}
	return r.wait(ctx, cur+1)
}

// commit asks the driver to commit every value up to v.
func (r *rawDev) commit(v uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if device.AtLeast(r.committed.Load(), v) {
		return nil
	}
	switch a := r.drv.Commit(v); a.Kind {
	case device.Failed:
		return fmt.Errorf("%s failed to commit value %d: %s", r.name, v, a.Reason)
	case device.Committed:
		r.committed.Store(v)
	}
	return nil
}

// wait commits v where it is not, then spins on the word until it holds
// v, yielding between reads, or ctx ends.
func (r *rawDev) wait(ctx context.Context, v uint64) error {
	if !device.AtLeast(r.committed.Load(), v) {
		if err := r.commit(v); err != nil {
			return err
		}
	}
	for i := 1; !device.AtLeast(r.read(), v); i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		runtime.Gosched()
	}
	return nil
}

// close stops the driver, waits up to limit until the word reads the last
// value, then unloads the images, frees the regions and the driver's own
// word, and gives the word back to the array. Where the word does not get
// there, it frees nothing.
func (r *rawDev) close(limit time.Duration) error {
	err := r.drv.Stop("")
	last := r.last.Load()
	deadline := time.Now().Add(limit)
	for wait := 50 * time.Microsecond; !device.AtLeast(r.read(), last); wait = min(2*wait, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the word reads %d, not the last value %d, %v after the stop; its memory stays", r.name, r.read(), last, limit)
		}
		time.Sleep(wait)
	}
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("stopping %s: %w", r.name, err))
	}
	for _, img := range r.images {
		if err := r.drv.Unload(img); err != nil {
			errs = append(errs, err)
		}
	}
	for _, reg := range r.regions {
		if err := r.drv.Free(reg); err != nil {
			errs = append(errs, err)
		}
	}
	if r.facts.Word == nil && r.facts.OwnWord != nil {
		if err := r.drv.Free(r.facts.OwnWord); err != nil {
			errs = append(errs, err)
		}
	}
	r.images, r.regions = nil, nil
	timeline.Give(r.slot)
	return errors.Join(errs...)
}

// rawLane is the part of a lane's submission that the workload fixes.
type rawLane func(r *rawDev, size int64) (s *device.Submission, bytes int64, err error)

// rawLanes are the workloads that the driver's baseline runs.
var rawLanes = map[string]rawLane{
	"empty": func(r *rawDev, _ int64) (*device.Submission, int64, error) {
		e, err := r.entry("empty")
		if err != nil {
			return nil, 0, err
		}
		return launch(e, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, make([]byte, 0)), 0, nil
	},
	"twice": func(r *rawDev, size int64) (*device.Submission, int64, error) {
		e, err := r.entry("twice")
		if err != nil {
			return nil, 0, err
		}
		groups, threads, values := twiceShape(size / 4)
		x, err := r.alloc(device.DeviceMemory, 4*values)
		if err != nil {
			return nil, 0, err
		}
		params := make([]byte, 8)
		binary.LittleEndian.PutUint64(params, r.drv.Locate(x).Address)
		return launch(e, [3]uint32{uint32(groups), 1, 1}, [3]uint32{uint32(threads), 1, 1}, params), 0, nil
	},
	"d2d":  rawCopy(device.DeviceMemory, device.DeviceMemory),
	"h2d":  rawCopy(device.PinnedMemory, device.DeviceMemory),
	"d2h":  rawCopy(device.DeviceMemory, device.PinnedMemory),
	"fill": rawFill,
}

// launch is a submission of one launch of e.
func launch(e *device.Entry, groups, threads [3]uint32, params []byte) *device.Submission {
	return &device.Submission{Parts: []device.Part{{
		Kind: device.Launch, Queue: device.Compute, Entry: e, Groups: groups, Threads: threads, Params: params,
	}}}
}

func rawCopy(from, to device.Memory) rawLane {
	return func(r *rawDev, size int64) (*device.Submission, int64, error) {
		src, err := r.alloc(from, size)
		if err != nil {
			return nil, 0, err
		}
		dst, err := r.alloc(to, size)
		if err != nil {
			return nil, 0, err
		}
		n := uint64(size)
		return &device.Submission{Parts: []device.Part{{
			Kind: device.CopyRows, Queue: device.Copy, Src: src, Dst: dst,
			RowBytes: n, Rows: 1, SrcPitch: n, DstPitch: n,
		}}}, size, nil
	}
}

func rawFill(r *rawDev, size int64) (*device.Submission, int64, error) {
	dst, err := r.alloc(device.DeviceMemory, size)
	if err != nil {
		return nil, 0, err
	}
	n := uint64(size)
	return &device.Submission{Parts: []device.Part{{
		Kind: device.CopyRows, Queue: device.Copy, Dst: dst,
		RowBytes: n, Rows: 1, DstPitch: n, Filling: true, Byte: 0x5a,
	}}}, size, nil
}

// rawBaseline is the driver's baseline of the run's workload on the run's
// devices. Where their driver is exclusive, it opens the devices for each
// of its rounds and closes them after, while rig's are closed; otherwise
// it opens them now, beside rig's, for every round.
func rawBaseline(e *env) (*baseline, error) {
	mk := rawLanes[e.cfg.Workload]
	if mk == nil {
		return nil, fmt.Errorf("workload %s has no baseline of the driver alone: its waits across devices are rig's own work", e.cfg.Workload)
	}
	specs := make([]spec, len(e.devs))
	for i, o := range e.devs {
		specs[i] = o.spec
	}
	exclusive := false
	if d := drivers[specs[0].Driver]; d != nil {
		exclusive = d.exclusive
	}
	rb := &rawRun{specs: specs, cfg: e.cfg, size: e.size, mk: mk}
	b := &baseline{name: rawName, exclusive: exclusive}
	b.start = func() ([]lane[uint64], error) {
		if rb.devs == nil {
			if err := rb.open(); err != nil {
				return nil, err
			}
		}
		return rb.lanes, nil
	}
	b.finish = func() error {
		if !exclusive {
			return nil
		}
		return rb.close()
	}
	b.stop = func() { _ = rb.close() }
	if !exclusive {
		if err := rb.open(); err != nil {
			return nil, &baselineError{rawName, err}
		}
	}
	return b, nil
}

// rawRun is the driver's baseline: its devices while open, and its lanes.
type rawRun struct {
	specs []spec
	cfg   *config
	size  int64
	mk    rawLane
	devs  []*rawDev
	lanes []lane[uint64]
}

// open opens the devices and makes -c lanes on each.
func (rb *rawRun) open() error {
	// A GPU that rig's device just left may take a moment to free.
	retry := min(rb.cfg.Timeout, 5*time.Second)
	for _, s := range rb.specs {
		r, err := openRaw(s, retry)
		if err != nil {
			_ = rb.close()
			return err
		}
		rb.devs = append(rb.devs, r)
	}
	for _, r := range rb.devs {
		for range rb.cfg.C {
			s, n, err := rb.mk(r, rb.size)
			if err != nil {
				_ = rb.close()
				return fmt.Errorf("setting up %s on %s through its driver: %w", rb.cfg.Workload, r.spec, err)
			}
			rb.lanes = append(rb.lanes, lane[uint64]{
				device:   r.name,
				baseline: true,
				submit: func(ctx context.Context) (uint64, int64, error) {
					v, err := r.submit(ctx, s)
					return v, n, err
				},
				wait: r.wait,
			})
		}
	}
	return nil
}

// close closes the open devices, and returns the first error.
func (rb *rawRun) close() error {
	var first error
	for _, r := range rb.devs {
		if err := r.close(rb.cfg.Timeout); err != nil && first == nil {
			first = err
		}
	}
	rb.devs, rb.lanes = nil, nil
	return first
}
