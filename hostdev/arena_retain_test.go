package hostdev

import (
	"runtime"
	"testing"
	"weak"

	"github.com/rig-go/rig/device"
)

// TestReplacedArenasLetGo grows each of the launch ring's arenas past a
// buffer that values completed in, and checks that the device keeps none
// of the replaced buffers once a Room gave their bytes back to the budget:
// neither a completed value's slot (its parts and waits) nor the parts
// left in the ring, whose parameter bytes lie in the replaced buffer.
// Otherwise the memory stays in Go's heap, outside the budget, until the
// slots and parts are taken again, which an idle device never does.
func TestReplacedArenasLetGo(t *testing.T) {
	word := new(uint64) // a wait that holds at once
	waits := func(n int) []device.Wait {
		ws := make([]device.Wait, n)
		for i := range ws {
			ws[i] = device.Wait{Word: word}
		}
		return ws
	}
	for _, tc := range []struct {
		name string
		// buf returns whether the arena's buffer now is still alive
		buf func(d *dev) func() bool
		// small fits the arena Make made; big grows the arena
		small, big func(e *device.Entry) *device.Submission
	}{
		{"parts", func(d *dev) func() bool {
			w := weak.Make(&d.q.parts.buf[0])
			return func() bool { return w.Value() != nil }
		}, func(e *device.Entry) *device.Submission {
			return &device.Submission{Parts: []device.Part{one(e, nil), one(e, nil), one(e, nil)}}
		}, func(e *device.Entry) *device.Submission {
			return &device.Submission{Parts: []device.Part{one(e, nil), one(e, nil), one(e, nil), one(e, nil), one(e, nil)}}
		}},
		{"waits", func(d *dev) func() bool {
			w := weak.Make(&d.q.waits.buf[0])
			return func() bool { return w.Value() != nil }
		}, func(e *device.Entry) *device.Submission {
			return &device.Submission{Waits: waits(3)}
		}, func(e *device.Entry) *device.Submission {
			return &device.Submission{Waits: waits(5)}
		}},
		{"parameter bytes", func(d *dev) func() bool {
			w := weak.Make(&d.q.bytes.buf[0])
			return func() bool { return w.Value() != nil }
		}, func(e *device.Entry) *device.Submission {
			// Two parts, of which the big value's one part takes the
			// first place only.
			return &device.Submission{Parts: []device.Part{one(e, make([]byte, 20)), one(e, make([]byte, 20))}}
		}, func(e *device.Entry) *device.Submission {
			return &device.Submission{Parts: []device.Part{one(e, make([]byte, 100))}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDev(t, Config{Grow: true}, 0)
			e := entry(t, d, "limits.params")
			if err := reach(t, d, submitS(t, d, tc.small(e))); err != nil {
				t.Fatal(err)
			}
			old := tc.buf(d)
			used := d.used.Load()
			if err := reach(t, d, submitS(t, d, tc.big(e))); err != nil {
				t.Fatal(err)
			}
			if d.used.Load() <= used {
				t.Fatal("the big value grew no arena")
			}
			// A Room of the next value gives the replaced buffers back
			// to the budget: the values in them completed.
			if err := reach(t, d, submitS(t, d, &device.Submission{})); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			runtime.GC()
			if old() {
				t.Fatal("the device holds an arena buffer that a growth replaced, whose values completed: its memory stays outside the budget")
			}
		})
	}
}
