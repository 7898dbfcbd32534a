// Package profile takes profiles of rig's devices: where each value's work
// ran, on which queue, from when to when on the host's clock, and what it
// waited for.
//
// # Model
//
// Start turns on the stamping of the devices' values (rig's
// Device.SetTimed): from then on each driver stamps the start and the end
// of every value submitted, on the device's own clock where it has one (a
// GPU's events or timers), and Device.Settle converts the stamps of
// completed values to the host's clock, device.Now, in nanoseconds. A
// goroutine of the profile settles every Options.Every, so that the
// drivers keep few stamps; Stop turns stamping off, waits for the last
// value timed on each device, settles the rest and ends the goroutine.
// The result is a list of spans, one per value: the device, the queue the
// value ended on, the value, its start and end, its parts, and its waits
// on the profile's other devices.
//
// Start also makes the profile each device's observer (Device.SetObserver),
// which sees every timed submission as the driver got it and keeps a copy
// of the parts' kinds, queues, names and sizes, and of the waits; Stop
// removes it. A wait names another device by its word (Device.Word), as
// the wait is submitted, so that waits on a device outside the profile, or
// on one that keeps a word of its own, are left out; a device of the
// profile that has given back everything it held (Device.Done) names no
// later wait, since a device opened after it may have taken its word.
//
// WriteTrace exports spans as Chrome's trace event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: a process per device, a
// thread per queue, a slice per value, and an arrow per wait on another
// device. Summarize reduces them to figures per device: the count, the
// busy fraction, the gaps, and percentiles of the durations.
//
// # Cost
//
// While no profile is taken nothing of this package runs: the core and the
// drivers test one boolean per submission (Submission.Timed). While one is
// taken each value costs its driver two reads of a clock and a stamp kept
// until the next settle, and the observer a copy of its parts and waits,
// which allocates nothing once its queues have grown to the values in
// flight; the package's BenchmarkSubmit measures it on hostdev.
//
// # Goroutines
//
// A Profile is safe for use by any goroutine. Start starts one goroutine,
// which Stop ends; a device is in at most one profile at a time.
package profile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// Span is one value's work on one device, on the host's clock.
type Span struct {
	// Device is the device's name.
	Device string `json:"device"`
	// Queue names the queue the value's work ended on, and QueueIndex is
	// its index in the device's Facts.Queues.
	Queue      string `json:"queue"`
	QueueIndex int    `json:"queue_index"`
	// Value is the value of the device's timeline.
	Value uint64 `json:"value"`
	// Start is the earliest start of the value's work, and End the end of
	// its last work, in nanoseconds of device.Now.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Parts is the value's work, in order.
	Parts []Part `json:"parts,omitempty"`
	// Waits is what the value waited for on the timelines of the
	// profile's other devices.
	Waits []Wait `json:"waits,omitempty"`
}

// Duration is the span's length in nanoseconds: 0 where End is not after
// Start, and math.MaxInt64 where the span is longer, as a span from
// math.MinInt64 to math.MaxInt64 is.
func (s *Span) Duration() int64 { return clamp(length(s.Start, s.End)) }

// Part is one part of a value's work, as a span describes it.
type Part struct {
	// Kind is "launch", "copy", "fill" (a copy that fills, or a driver's
	// fill function) or "words".
	Kind string `json:"kind"`
	// Queue is the index of the part's queue.
	Queue int `json:"queue"`
	// Name is a launch's function.
	Name string `json:"name,omitempty"`
	// Bytes is the bytes a copy moves or fills, or the bytes of ring
	// entries.
	Bytes uint64 `json:"bytes,omitempty"`
	// Groups and Threads are a launch's groups and threads per group.
	Groups  [3]uint32 `json:"groups,omitzero"`
	Threads [3]uint32 `json:"threads,omitzero"`
}

// Wait is a point of another device that a value waited for on the device.
type Wait struct {
	// Device is the other device's name, and Value the value of its
	// timeline that the value waited for.
	Device string `json:"device"`
	Value  uint64 `json:"value"`
}

// Options tune a profile. The zero Options are the defaults.
type Options struct {
	// Every is how often the profile settles the devices' stamps while it
	// is taken; 50 ms where 0.
	Every time.Duration
	// MaxSpans bounds the spans the profile keeps; the spans of later
	// values are counted (Dropped) and dropped. 1 Mi where 0: a trace of
	// a million slices is as much as Perfetto's page opens with ease.
	MaxSpans int
}

// Profile is a profile being taken, or taken, on one or several devices.
type Profile struct {
	opts      Options
	devs      []*rig.Device
	observers []*recorder // beside devs: the devices' observers
	words     []*uint64   // beside devs: their words, nil where their own
	before    []uint64    // beside devs: the last value submitted before Start
	dead      []bool      // beside devs: closed or lost; touched by the settler
	erred     []bool      // beside devs: a settle failed with an error that lost nothing
	pending   [][]spanRec // beside devs: stamps settled before their records arrived
	start     int64

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	stopped  chan struct{} // closed when the first Stop has set stopErr
	stopErr  error

	// mu guards what the settler appends and Stop finishes.
	mu      sync.Mutex
	recs    store[spanRec]
	parts   store[Part]
	waits   store[Wait]
	dropped int64
	errs    []error
	end     int64
	over    bool   // Stop has run
	spans   []Span // made from recs at the first Spans after Stop
	scratch []device.Stamp
	batch   []spanRec
}

var (
	takenMu sync.Mutex
	taken   = map[*rig.Device]*Profile{}
)

// Start starts a profile on devs with the default options.
func Start(devs ...*rig.Device) (*Profile, error) { return StartOptions(Options{}, devs...) }

// StartOptions starts a profile on devs: it drops the stamps the drivers
// kept from before, and leaves out those of values submitted before it that
// complete later, sets the profile as each device's observer, turns on
// stamping and starts the profile's settling goroutine. A device may be in
// one profile at a time, and the profile replaces any other observer it
// has until Stop, which leaves it with none. It starts nothing, and
// returns an error matching rig.ErrInvalid, for no devices, negative
// options, a nil device, a Device that rig.Open did not make or a device
// named twice; and an error for a device in another profile.
func StartOptions(o Options, devs ...*rig.Device) (*Profile, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("profile: start on no device: %w", rig.ErrInvalid)
	}
	if o.Every < 0 || o.MaxSpans < 0 {
		return nil, fmt.Errorf("profile: negative options %+v: %w", o, rig.ErrInvalid)
	}
	if o.Every == 0 {
		o.Every = 50 * time.Millisecond
	}
	if o.MaxSpans == 0 {
		o.MaxSpans = 1 << 20
	}
	p := &Profile{opts: o, stop: make(chan struct{}), done: make(chan struct{}), stopped: make(chan struct{})}
	takenMu.Lock()
	for i, d := range devs {
		if d == nil {
			takenMu.Unlock()
			return nil, fmt.Errorf("profile: device %d is nil: %w", i, rig.ErrInvalid)
		}
		if d.Facts() == nil {
			takenMu.Unlock()
			return nil, fmt.Errorf("profile: device %d was not opened (rig.Open makes devices): %w", i, rig.ErrInvalid)
		}
		if taken[d] != nil {
			takenMu.Unlock()
			return nil, fmt.Errorf("profile: device %s is in a profile already", d.Name())
		}
		for _, e := range devs[:i] {
			if e == d {
				takenMu.Unlock()
				return nil, fmt.Errorf("profile: device %s named twice: %w", d.Name(), rig.ErrInvalid)
			}
		}
	}
	for _, d := range devs {
		taken[d] = p
	}
	takenMu.Unlock()
	p.devs = append([]*rig.Device(nil), devs...)
	p.observers = make([]*recorder, len(devs))
	p.words = make([]*uint64, len(devs))
	p.dead = make([]bool, len(devs))
	p.erred = make([]bool, len(devs))
	p.pending = make([][]spanRec, len(devs))
	p.before = make([]uint64, len(devs))
	for i, d := range devs {
		p.words[i] = d.Word()
		p.observers[i] = &recorder{words: p.words, devs: p.devs}
		d.SetObserver(p.observers[i])
		// Stamps of values before the profile are not its own.
		p.scratch, _ = d.Settle(p.scratch[:0])
	}
	p.start = device.Now()
	for i, d := range devs {
		// A value timed before, which had not completed at the Settle
		// above (that of a Stop whose context ended), is stamped when it
		// completes: the settling leaves out the values up to this one.
		p.before[i] = d.SetTimed(true).Value()
	}
	go p.settler()
	return p, nil
}

// settler settles every Options.Every until Stop.
func (p *Profile) settler() {
	defer close(p.done)
	t := time.NewTicker(p.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.settle(false)
		case <-p.stop:
			return
		}
	}
}

// settle takes the devices' stamps as spans. Only the settler calls it,
// and Stop once the settler ended, with final set.
//
// The device tells its observer of a submission after the driver's Submit,
// so the stamp of a value that ran at once may be settled before its record
// arrives: such a stamp waits in pending for the next settle. The final
// settle runs after SetTimed(false) returned, when every record arrived.
func (p *Profile) settle(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, d := range p.devs {
		p.batch = append(p.batch[:0], p.pending[i]...)
		if !p.dead[i] {
			var err error
			p.scratch, err = d.Settle(p.scratch[:0])
			switch {
			case errors.Is(err, rig.ErrClosed):
				// A closed device's stamps not settled yet are lost; the
				// profile keeps what it has.
				p.dead[i] = true
			case errors.Is(err, rig.ErrLost):
				p.dead[i] = true
				p.errs = append(p.errs, err)
			case err != nil:
				// An error that lost nothing, such as a stamp the driver
				// could not convert: the device runs and stamps on, and
				// later settles take its stamps. The first is kept.
				if !p.erred[i] {
					p.erred[i] = true
					p.errs = append(p.errs, err)
				}
			}
			for _, st := range p.scratch {
				if device.AtLeast(p.before[i], st.Value) {
					continue // a value from before the profile
				}
				p.batch = append(p.batch, spanRec{dev: int32(i), queue: int32(st.Queue), value: st.Value, start: st.Start, end: st.End})
			}
		}
		rec := p.observers[i]
		n := len(p.batch)
		if !final {
			n = rec.ready(p.batch)
		}
		p.pending[i] = append(p.pending[i][:0], p.batch[n:]...)
		var last uint64
		if n > 0 {
			last = p.batch[n-1].value
		}
		kept := p.batch[:0]
		for _, r := range p.batch[:n] {
			if p.recs.len()+len(kept) >= p.opts.MaxSpans {
				p.dropped++
				continue
			}
			kept = append(kept, r)
		}
		if len(kept) > 0 {
			rec.take(kept, p)
		}
		if n > 0 {
			// The records of the spans dropped over MaxSpans go too.
			rec.release(last)
		}
		for _, r := range kept {
			p.recs.add(r)
		}
	}
}

// Stop ends the profile: it turns stamping off and removes the profile as
// the devices' observer, waits until the last value timed on each device
// is reached or ctx ends, settles the stamps left and ends the settling
// goroutine. Every value submitted before Stop turned a device's stamping
// off is in the profile, unless its device was closed or lost first, its
// driver lost its stamp, or ctx ended. Stop returns the first error met
// while the profile was taken, such as a device lost or a stamp its driver
// could not convert, and the same at later calls; the spans settled
// are kept whatever the answer. A device closed while the profile was
// taken is not an error: the profile keeps what it settled of it. A Stop
// called while another runs waits for that one until its own ctx ends, and
// then returns ctx's error. A nil ctx panics before Stop changes anything,
// so that a later Stop still stops the profile. Stop of a nil or zero
// Profile (a deferred Stop after a failed Start) returns an error matching
// rig.ErrInvalid.
func (p *Profile) Stop(ctx context.Context) error {
	if p == nil || p.stop == nil {
		return fmt.Errorf("profile: stop of a profile that Start did not make: %w", rig.ErrInvalid)
	}
	if ctx == nil {
		panic("profile: Stop with a nil Context")
	}
	first := false
	p.stopOnce.Do(func() { first = true })
	if first {
		p.stopErr = p.stopFirst(ctx)
		close(p.stopped)
		return p.stopErr
	}
	select {
	case <-p.stopped:
		return p.stopErr
	default:
	}
	select {
	case <-p.stopped:
		return p.stopErr
	case <-ctx.Done():
		return fmt.Errorf("profile: waiting for another Stop: %w", ctx.Err())
	}
}

// stopFirst is the work of the profile's first Stop.
func (p *Profile) stopFirst(ctx context.Context) error {
	lasts := make([]rig.Point, len(p.devs))
	for i, d := range p.devs {
		lasts[i] = d.SetTimed(false)
		// No timed submission is observed after SetTimed returns.
		d.SetObserver(nil)
	}
	end := device.Now()
	var errs []error
	for i, d := range p.devs {
		err := lasts[i].Wait(ctx)
		if err != nil && !errors.Is(err, rig.ErrClosed) {
			errs = append(errs, fmt.Errorf("profile: waiting for the last value of %s: %w", d.Name(), err))
		}
	}
	close(p.stop)
	<-p.done
	p.settle(true)
	takenMu.Lock()
	for _, d := range p.devs {
		if taken[d] == p {
			delete(taken, d)
		}
	}
	takenMu.Unlock()
	p.mu.Lock()
	for i := range p.recs.len() {
		end = max(end, p.recs.at(i).end)
	}
	p.end = end
	p.over = true
	errs = append(errs, p.errs...)
	p.scratch, p.batch, p.pending = nil, nil, nil
	p.mu.Unlock()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// sortSpans orders spans by start, then device and value, values in the
// timeline's circular order (device.AtLeast).
func sortSpans(s []Span) {
	sort.SliceStable(s, func(i, j int) bool {
		a, b := &s[i], &s[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return !device.AtLeast(a.Value, b.Value)
	})
}

// Spans is the profile's spans by start time: those settled so far while
// the profile is taken, and all of them once it is stopped, when the
// slice is the profile's own, which the caller must not change. A nil
// Profile has none.
func (p *Profile) Spans() []Span {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over && p.spans != nil {
		return p.spans
	}
	s := p.materialize()
	if p.over {
		p.spans = s
	}
	return s
}

// materialize makes the spans of the records, sorted. p.mu is held.
func (p *Profile) materialize() []Span {
	n := p.recs.len()
	spans := make([]Span, n)
	parts := make([]Part, p.parts.len())
	for i := range parts {
		parts[i] = *p.parts.at(i)
	}
	waits := make([]Wait, p.waits.len())
	for i := range waits {
		waits[i] = *p.waits.at(i)
	}
	for i := range n {
		r := p.recs.at(i)
		d := p.devs[r.dev]
		q := ""
		if qs := d.Facts().Queues; r.queue >= 0 && int(r.queue) < len(qs) {
			q = qs[r.queue]
		}
		sp := Span{Device: d.Name(), Queue: q, QueueIndex: int(r.queue), Value: r.value, Start: r.start, End: r.end}
		if r.nparts > 0 {
			sp.Parts = parts[r.parts : r.parts+r.nparts : r.parts+r.nparts]
		}
		if r.nwaits > 0 {
			sp.Waits = waits[r.waits : r.waits+r.nwaits : r.waits+r.nwaits]
		}
		spans[i] = sp
	}
	sortSpans(spans)
	return spans
}

// Devices names the profile's devices, in the order Start was given them;
// none for a nil Profile.
func (p *Profile) Devices() []string {
	if p == nil {
		return nil
	}
	names := make([]string, len(p.devs))
	for i, d := range p.devs {
		names[i] = d.Name()
	}
	return names
}

// Window is when the profile was taken, in nanoseconds of device.Now: from
// Start to the later of Stop's turning off of stamping and the end of the
// last value profiled, or to now while it is taken; 0 to 0 for a nil
// Profile.
func (p *Profile) Window() (from, to int64) {
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over {
		return p.start, p.end
	}
	return p.start, device.Now()
}

// Dropped is the number of spans dropped over Options.MaxSpans; 0 for a
// nil Profile.
func (p *Profile) Dropped() int64 {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Summary is Summarize of the profile's spans over its window, with the
// spans it dropped.
func (p *Profile) Summary() Summary {
	from, to := p.Window()
	s := Summarize(p.Spans(), from, to)
	s.Dropped = p.Dropped()
	for _, name := range p.Devices() {
		s.ensure(name)
	}
	return s
}
