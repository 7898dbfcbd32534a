package profile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// TraceEvent is one event of Chrome's trace event format, as WriteTrace
// writes it and Perfetto reads it: "M" metadata (process and thread names
// and order), "X" complete slices, and "s" and "f" flow events, whose
// common ID ties the end of a flow to its start.
type TraceEvent struct {
	// Name is the event's name: a metadata record's, a slice's label
	// (Label), or a flow's "A waits for B v". Cat is its category
	// ("value" for a slice, "wait" for a flow), and Ph its phase: "M",
	// "X", "s" or "f".
	Name string `json:"name"`
	Cat  string `json:"cat,omitempty"`
	Ph   string `json:"ph"`
	// Ts is the event's time, and Dur a slice's length, in microseconds.
	Ts  float64  `json:"ts"`
	Dur *float64 `json:"dur,omitempty"`
	// Pid is the process of the event's device, and Tid the thread of
	// its queue: the queue's index plus 1.
	Pid int `json:"pid"`
	Tid int `json:"tid"`
	// ID ties a flow's "f" to its "s", and Bp is "e" on an "f": the flow
	// ends at the slice that encloses its time. Args holds a metadata
	// record's name or sort index, or a slice's value, parts and waits.
	ID   int    `json:"id,omitempty"`
	Bp   string `json:"bp,omitempty"`
	Args any    `json:"args,omitempty"`
}

// Trace is the JSON object WriteTrace writes.
type Trace struct {
	// TraceEvents is the events, and DisplayTimeUnit the unit a viewer
	// shows times in: "ns".
	TraceEvents     []TraceEvent `json:"traceEvents"`
	DisplayTimeUnit string       `json:"displayTimeUnit"`
}

// sliceArgs is what a value's slice carries.
type sliceArgs struct {
	Value uint64 `json:"value"`
	Parts []Part `json:"parts,omitempty"`
	Waits []Wait `json:"waits,omitempty"`
}

// WriteTrace exports the profile's spans as Chrome trace event JSON.
func (p *Profile) WriteTrace(w io.Writer) error {
	return WriteTrace(w, p.Spans(), p.Devices()...)
}

// WriteTrace writes spans as a Chrome trace event JSON object, which
// Perfetto and chrome://tracing open: a process per device, in the order
// devices names them and then of the spans; a thread per queue, in the
// order of the queues' indices; a complete slice ("X") per span, named for
// its parts, with the value, the parts and the waits in its arguments; and
// a flow ("s" to "f", category "wait") from the span of each value that a
// span waited for on another device to the span that waited, where both
// are in spans. Times are microseconds of device.Now, to the nanosecond.
// It streams the events, so that a profile of millions of values is not
// held twice.
func WriteTrace(w io.Writer, spans []Span, devices ...string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := traceWriter{w: bw}
	enc.raw(`{"displayTimeUnit":"ns","traceEvents":[`)

	// A process per device, a thread per queue.
	pids := map[string]int{}
	addDev := func(name string) {
		if _, ok := pids[name]; !ok {
			pids[name] = len(pids) + 1
			enc.event(TraceEvent{Name: "process_name", Ph: "M", Pid: pids[name], Args: map[string]string{"name": name}})
			enc.event(TraceEvent{Name: "process_sort_index", Ph: "M", Pid: pids[name], Args: map[string]int{"sort_index": pids[name]}})
		}
	}
	for _, d := range devices {
		addDev(d)
	}
	type track struct {
		pid, tid int
	}
	threads := map[track]string{}
	for i := range spans {
		addDev(spans[i].Device)
		t := track{pids[spans[i].Device], spans[i].QueueIndex + 1}
		if _, ok := threads[t]; !ok {
			q := spans[i].Queue
			if q == "" {
				q = fmt.Sprintf("queue %d", spans[i].QueueIndex)
			}
			threads[t] = q
		}
	}
	tracks := make([]track, 0, len(threads))
	for t := range threads {
		tracks = append(tracks, t)
	}
	sort.Slice(tracks, func(i, j int) bool {
		if tracks[i].pid != tracks[j].pid {
			return tracks[i].pid < tracks[j].pid
		}
		return tracks[i].tid < tracks[j].tid
	})
	for _, t := range tracks {
		enc.event(TraceEvent{Name: "thread_name", Ph: "M", Pid: t.pid, Tid: t.tid, Args: map[string]string{"name": threads[t]}})
		enc.event(TraceEvent{Name: "thread_sort_index", Ph: "M", Pid: t.pid, Tid: t.tid, Args: map[string]int{"sort_index": t.tid}})
	}

	// A slice per span.
	type key struct {
		dev   string
		value uint64
	}
	index := map[key]int{}
	for i := range spans {
		sp := &spans[i]
		dur := float64(length(sp.Start, sp.End)) / 1e3
		enc.event(TraceEvent{Name: Label(sp), Cat: "value", Ph: "X", Ts: micros(sp.Start), Dur: &dur,
			Pid: pids[sp.Device], Tid: sp.QueueIndex + 1, Args: sliceArgs{Value: sp.Value, Parts: sp.Parts, Waits: sp.Waits}})
		index[key{sp.Device, sp.Value}] = i
	}

	// A flow per wait whose both ends are spans, bound to the slices at
	// their middles so that no neighbour slice takes them.
	id := 0
	for i := range spans {
		to := &spans[i]
		for _, wt := range to.Waits {
			j, ok := index[key{wt.Device, wt.Value}]
			if !ok {
				continue
			}
			from := &spans[j]
			id++
			name := fmt.Sprintf("%s waits for %s %d", to.Device, wt.Device, wt.Value)
			enc.event(TraceEvent{Name: name, Cat: "wait", Ph: "s", Ts: micros(mid(from)), Pid: pids[from.Device], Tid: from.QueueIndex + 1, ID: id})
			enc.event(TraceEvent{Name: name, Cat: "wait", Ph: "f", Bp: "e", Ts: micros(mid(to)), Pid: pids[to.Device], Tid: to.QueueIndex + 1, ID: id})
		}
	}
	enc.raw("\n]}\n")
	if enc.err != nil {
		return fmt.Errorf("profile: writing the trace: %w", enc.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("profile: writing the trace: %w", err)
	}
	return nil
}

// traceWriter writes events one to a line, comma-separated, and keeps the
// first error.
type traceWriter struct {
	w   *bufio.Writer
	n   int
	err error
}

func (t *traceWriter) raw(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

func (t *traceWriter) event(e TraceEvent) {
	if t.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.err = err
		return
	}
	if t.n > 0 {
		t.raw(",")
	}
	t.raw("\n")
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
	t.n++
}

// micros is ns in microseconds.
func micros(ns int64) float64 { return float64(ns) / 1e3 }

// mid is the middle of the span, its start where End is not after Start.
// Half the length, past 2^63 ns for the longest spans, fits an int64, and
// the middle lies within the span.
func mid(s *Span) int64 { return s.Start + int64(length(s.Start, s.End)/2) }

// Label names a span for a trace: its parts, such as "twice" for a launch
// of twice, "copy 1MiB", "fill 4KiB", joined by " + "; or "value" where its
// parts are unknown.
func Label(s *Span) string {
	if len(s.Parts) == 0 {
		return "value"
	}
	var b strings.Builder
	for i, p := range s.Parts {
		if i > 0 {
			b.WriteString(" + ")
		}
		switch {
		case p.Kind == "launch" && p.Name != "":
			b.WriteString(p.Name)
		case p.Kind == "copy" || (p.Kind == "fill" && p.Bytes > 0):
			b.WriteString(p.Kind + " " + Bytes(p.Bytes))
		default:
			b.WriteString(p.Kind)
		}
	}
	return b.String()
}

// Bytes formats a count of bytes in binary units: "512B", "4KiB",
// "1.5MiB".
func Bytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	x := float64(n)
	u := 0
	for x >= 1024 && u < len(units)-1 {
		x /= 1024
		u++
	}
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f%s", x, units[u])
	}
	// Three significant digits of a value from 999.5 up round to four:
	// such a value reads as the next unit's, below 1, or as a whole number
	// where no unit is larger.
	if x >= 999.5 && u < len(units)-1 {
		x /= 1024
		u++
	}
	if x >= 999.5 {
		return fmt.Sprintf("%.0f%s", x, units[u])
	}
	return fmt.Sprintf("%.3g%s", x, units[u])
}
