package profile

import (
	"sync"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// recorder is a profiled device's observer (rig.Observer): it keeps what a
// span says of each timed value, its parts and its waits, until the
// profile's settling matches it to the value's stamp. Its queues grow to
// the values in flight and then allocate nothing more.
type recorder struct {
	// mu guards the records. Submitted appends under it on the submitting
	// goroutine; the profile's settling takes them under it.
	mu    sync.Mutex
	recs  []record
	head  int // the first record not yet taken
	parts []Part
	waits []waitRec
	last  uint64 // the value of the last record, where seen
	seen  bool

	// words and devs are the profile's devices' words and the devices,
	// beside each other, set before the recorder observes a submission
	// and not changed after: a wait names its device as it is submitted.
	words []*uint64
	devs  []*rig.Device
}

var _ rig.Observer = (*recorder)(nil)

// maxRecords bounds the records a recorder keeps for values whose stamps
// were not settled yet.
const maxRecords = 1 << 20

// record is what the recorder kept of one timed value.
type record struct {
	value        uint64
	parts, waits [2]int // [from, to) in recorder.parts and recorder.waits
}

// waitRec is a wait on a device of the profile: the device's index and
// the value.
type waitRec struct {
	dev   int
	value uint64
}

// Submitted keeps what a profile needs of s. The device calls it inside its
// submit lock, in value order, for each timed submission.
func (r *recorder) Submitted(_ *rig.Device, s *device.Submission) {
	r.mu.Lock()
	switch {
	case r.head == len(r.recs):
		// Everything was taken: start over, keeping the memory.
		r.reset()
	case r.head >= 1024 && r.head >= len(r.recs)/2:
		r.compact()
	}
	if len(r.recs) >= maxRecords {
		// The settling fell far behind: forget the oldest half rather
		// than grow, keeping the latest records, whose stamps come next.
		r.head = max(r.head, len(r.recs)/2)
		r.compact()
	}
	rec := record{value: s.Value}
	rec.parts[0] = len(r.parts)
	for i := range s.Parts {
		r.parts = append(r.parts, describe(&s.Parts[i]))
	}
	rec.parts[1] = len(r.parts)
	rec.waits[0] = len(r.waits)
	for _, w := range s.Waits {
		if dev := r.deviceOf(w.Word); dev >= 0 {
			r.waits = append(r.waits, waitRec{dev: dev, value: w.Value})
		}
	}
	rec.waits[1] = len(r.waits)
	r.recs = append(r.recs, rec)
	r.last, r.seen = s.Value, true
	r.mu.Unlock()
}

// deviceOf is the index of the profile's device whose word is w, or -1
// where none is. A device that has given back everything it held (Done)
// holds no word: a device opened since may have taken it, and a wait on it
// is on that device, which the profile does not name.
func (r *recorder) deviceOf(w *uint64) int {
	if w == nil {
		return -1
	}
	for i, dw := range r.words {
		if dw != w {
			continue
		}
		select {
		case <-r.devs[i].Done():
		default:
			return i
		}
	}
	return -1
}

// reset empties the records, keeping their memory. r.mu is held.
func (r *recorder) reset() {
	r.recs, r.parts, r.waits, r.head = r.recs[:0], r.parts[:0], r.waits[:0], 0
}

// compact moves the records not yet taken to the front of the queues.
// r.mu is held, and some record is not taken.
func (r *recorder) compact() {
	first := r.recs[r.head]
	p0, w0 := first.parts[0], first.waits[0]
	r.recs = r.recs[:copy(r.recs, r.recs[r.head:])]
	for i := range r.recs {
		rec := &r.recs[i]
		rec.parts[0], rec.parts[1] = rec.parts[0]-p0, rec.parts[1]-p0
		rec.waits[0], rec.waits[1] = rec.waits[0]-w0, rec.waits[1]-w0
	}
	r.parts = r.parts[:copy(r.parts, r.parts[p0:])]
	r.waits = r.waits[:copy(r.waits, r.waits[w0:])]
	r.head = 0
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

// ready returns how many of batch, spans of the recorder's device in value
// order, have their records: those of values up to the last recorded.
func (r *recorder) ready(batch []spanRec) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen {
		return 0
	}
	for i := range batch {
		if !device.AtLeast(r.last, batch[i].value) {
			return i
		}
	}
	return len(batch)
}

// release drops the records of values up to last, whose spans the
// profile took or dropped.
func (r *recorder) release(last uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.head < len(r.recs) && device.AtLeast(last, r.recs[r.head].value) {
		r.head++
	}
}

// take fills in the parts and waits of batch, the spans of the recorder's
// device in value order, from the records, adding them to the stores, and
// drops the records of values before the last span's. p.mu is held.
func (r *recorder) take(batch []spanRec, p *Profile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range batch {
		sp := &batch[i]
		for r.head < len(r.recs) && device.AtLeast(sp.value-1, r.recs[r.head].value) {
			r.head++ // a record of a value whose stamp never came
		}
		if r.head == len(r.recs) || r.recs[r.head].value != sp.value {
			continue
		}
		rec := r.recs[r.head]
		r.head++
		sp.parts = p.parts.len()
		for _, pt := range r.parts[rec.parts[0]:rec.parts[1]] {
			p.parts.add(pt)
		}
		sp.nparts = rec.parts[1] - rec.parts[0]
		sp.waits = p.waits.len()
		for _, w := range r.waits[rec.waits[0]:rec.waits[1]] {
			p.waits.add(Wait{Device: p.devs[w.dev].Name(), Value: w.value})
		}
		sp.nwaits = rec.waits[1] - rec.waits[0]
	}
}
