package profile

import (
	"sync"

	"github.com/rig-go/rig/device"
)

// Wrap is the opener op with a hook that lets a profile learn each timed
// value's parts and its waits on other devices, which the core does not
// tell: open a device with rig.Open(ctx, profile.Wrap(op)) and the spans
// of its values name their parts, and the trace draws an arrow from the
// value a wait waits for to the value that waits.
//
// The hook forwards every call to the driver op makes. While no profile is
// taken (the submission is not Timed) its Submit costs one test of a
// boolean more than the driver's; while one is taken it copies the parts'
// kinds, queues, names and sizes and the waits into a queue of its own,
// which grows to the values in flight and then allocates nothing more.
//
// Open every device of a process that waits on another through Wrap, or
// none: a driver that maps another's memory (Peer, MapPeer) is handed the
// other's driver unwrapped, but a driver that is not wrapped is handed a
// wrapped one, which it does not know.
func Wrap(op device.Opener) device.Opener {
	mk := op.Make
	if mk == nil {
		return op
	}
	name := op.Name
	return device.Opener{Name: name, Make: func(word *uint64) (device.Driver, error) {
		inner, err := mk(word)
		if err != nil || inner == nil {
			return inner, err
		}
		h := &hook{Driver: inner, name: name, word: word}
		hooks.add(h)
		return h, nil
	}}
}

// hook is a driver with the profile's hook: the device.Driver Wrap's make
// answers.
type hook struct {
	device.Driver
	name string
	word *uint64 // the word make was given, which other devices' waits name

	// mu guards the records. Submit appends under it on the submitting
	// goroutine; the profile's settling takes them under it.
	mu    sync.Mutex
	recs  []record
	head  int // the first record not yet taken
	parts []Part
	waits []waitRec
}

// maxRecords bounds the records a hook keeps for values whose stamps were
// not settled yet.
const maxRecords = 1 << 20

// record is what the hook kept of one timed value.
type record struct {
	value        uint64
	parts, waits [2]int // [from, to) in hook.parts and hook.waits
}

// waitRec is a wait as Submit saw it: the word and the value.
type waitRec struct {
	word  *uint64
	value uint64
}

// unwrap is the driver d wraps, or d.
func unwrap(d device.Driver) device.Driver {
	if h, ok := d.(*hook); ok {
		return h.Driver
	}
	return d
}

// Peer forwards to the wrapped driver, with other unwrapped.
func (h *hook) Peer(other device.Driver) bool { return h.Driver.Peer(unwrap(other)) }

// MapPeer forwards to the wrapped driver, with other unwrapped.
func (h *hook) MapPeer(other device.Driver, r device.Region) (device.Region, error) {
	return h.Driver.MapPeer(unwrap(other), r)
}

// Submit records a timed submission's parts and waits, then forwards it.
func (h *hook) Submit(s *device.Submission) device.SubmitAnswer {
	if s.Timed {
		h.record(s)
	}
	return h.Driver.Submit(s)
}

// Stop forgets the hook's records and unregisters it, then forwards.
func (h *hook) Stop(fault string) error {
	hooks.remove(h)
	h.mu.Lock()
	h.reset()
	h.mu.Unlock()
	return h.Driver.Stop(fault)
}

// record keeps what a profile needs of s. It is called inside the device's
// submit lock, in value order.
func (h *hook) record(s *device.Submission) {
	h.mu.Lock()
	switch {
	case h.head == len(h.recs):
		// Everything was taken: start over, keeping the memory.
		h.reset()
	case h.head >= 1024 && h.head >= len(h.recs)/2:
		h.compact()
	}
	if len(h.recs) >= maxRecords {
		// Nobody takes the records (a device timed with no profile).
		h.reset()
	}
	r := record{value: s.Value}
	r.parts[0] = len(h.parts)
	for i := range s.Parts {
		h.parts = append(h.parts, describe(&s.Parts[i]))
	}
	r.parts[1] = len(h.parts)
	r.waits[0] = len(h.waits)
	for _, w := range s.Waits {
		h.waits = append(h.waits, waitRec{word: w.Word, value: w.Value})
	}
	r.waits[1] = len(h.waits)
	h.recs = append(h.recs, r)
	h.mu.Unlock()
}

// reset empties the records, keeping their memory. h.mu is held.
func (h *hook) reset() {
	h.recs, h.parts, h.waits, h.head = h.recs[:0], h.parts[:0], h.waits[:0], 0
}

// compact moves the records not yet taken to the front of the queues.
// h.mu is held, and some record is not taken.
func (h *hook) compact() {
	first := h.recs[h.head]
	p0, w0 := first.parts[0], first.waits[0]
	h.recs = h.recs[:copy(h.recs, h.recs[h.head:])]
	for i := range h.recs {
		r := &h.recs[i]
		r.parts[0], r.parts[1] = r.parts[0]-p0, r.parts[1]-p0
		r.waits[0], r.waits[1] = r.waits[0]-w0, r.waits[1]-w0
	}
	h.parts = h.parts[:copy(h.parts, h.parts[p0:])]
	h.waits = h.waits[:copy(h.waits, h.waits[w0:])]
	h.head = 0
}

// describe is what a span says of the part p.
func describe(p *device.Part) Part {
	d := Part{Kind: p.Kind.String(), Queue: p.Queue}
	switch p.Kind {
	case device.Launch:
		if p.Entry != nil {
			d.Name = p.Entry.Name
		}
		d.Groups, d.Threads = p.Groups, p.Threads
	case device.CopyRows:
		d.Bytes = p.RowBytes * p.Rows
		if p.Filling {
			d.Kind = "fill"
		}
	case device.Words:
		d.Bytes = 4 * uint64(len(p.Words))
	}
	return d
}

// take fills in the parts and waits of batch, the spans of the hook's
// device in value order, from the records, adding them to the stores, and
// drops the records of values before the last span's.
func (h *hook) take(batch []spanRec, parts *store[Part], waits *store[Wait]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range batch {
		sp := &batch[i]
		for h.head < len(h.recs) && device.AtLeast(sp.value-1, h.recs[h.head].value) {
			h.head++ // a record of a value whose stamp never came
		}
		if h.head == len(h.recs) || h.recs[h.head].value != sp.value {
			continue
		}
		r := h.recs[h.head]
		h.head++
		sp.parts = int32(parts.len())
		for _, pt := range h.parts[r.parts[0]:r.parts[1]] {
			parts.add(pt)
		}
		sp.nparts = int32(r.parts[1] - r.parts[0])
		sp.waits = int32(waits.len())
		for _, w := range h.waits[r.waits[0]:r.waits[1]] {
			if dev := hooks.byWord(w.word); dev != "" {
				waits.add(Wait{Device: dev, Value: w.value})
				sp.nwaits++
			}
		}
	}
}

// discard drops every record: values submitted before a profile starts.
func (h *hook) discard() {
	h.mu.Lock()
	h.reset()
	h.mu.Unlock()
}

// hooks is the registry of the open devices' hooks, by name and by word.
var hooks registry

type registry struct {
	mu     sync.Mutex
	byName map[string]*hook
	words  map[*uint64]string
}

func (g *registry) add(h *hook) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byName == nil {
		g.byName = map[string]*hook{}
		g.words = map[*uint64]string{}
	}
	g.byName[h.name] = h
	if h.word != nil {
		g.words[h.word] = h.name
	}
}

func (g *registry) remove(h *hook) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byName[h.name] == h {
		delete(g.byName, h.name)
	}
	if h.word != nil && g.words[h.word] == h.name {
		delete(g.words, h.word)
	}
}

// get is the hook of the open device name, or nil.
func (g *registry) get(name string) *hook {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byName[name]
}

// byWord names the device whose timeline word is w, or "".
func (g *registry) byWord(w *uint64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.words[w]
}
