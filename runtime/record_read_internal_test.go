package rig

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestRecordReadsWordAfterAnswers: a loss or a stop records the value the
// word held from a read of the word, and the word may move past that read
// before the record is published. A point that completes then, and that
// a reader finds reached (Reached, Wait) before the record is published,
// must not answer otherwise once it is: the record's value covers it, or
// the reader waits for the record. The device's word moves, in the table's
// cases, inside the read of its loss by another device's close (the work
// that waits on that device's point: failDebtors) and inside the read of
// its own stop (recordStop).
func TestRecordReadsWordAfterAnswers(t *testing.T) {
	for _, c := range []struct {
		name  string
		frame string // the function whose read of the word the point completes in
	}{
		{"debt loss", "(*Device).failDebtors"},
		{"stop", "(*Device).recordStop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fu := newFake()
			fu.held = true
			u := openFake(t, "record-read-u-"+c.name, fu)
			fd := newFake()
			fd.held, fd.peer = true, true
			fd.keepOwnWord(0)
			a := &afterRead{fake: fd}
			d := openWith(t, device.Opener{Name: "record-read-d-" + c.name, Make: func(*uint64) (device.Driver, error) { return a, nil }})
			d.SetWaitSpin(0)
			x, err := u.Alloc(device.DeviceMemory, 64)
			if err != nil {
				t.Fatal(err)
			}
			fill, err := NewSubmission(u, FillBytes(0, 0, 64, 1))
			if err != nil {
				t.Fatal(err)
			}
			submit(t, fill, x)
			// D's value 1, then value 2, which reads x and so waits on
			// U's word for U's fill.
			p := submit(t, empty(t, d))
			read, err := NewSubmission(d, Launch(fnOf(t, d), 16, Read(0, 0)))
			if err != nil {
				t.Fatal(err)
			}
			submit(t, read, x)

			// Inside the record's read of D's word, after the read took
			// its value: D's value 1 completes, and a reader looks.
			var fired atomic.Bool
			var first atomic.Int32 // 1: Reached answered true; 2: false
			hook := func() {
				buf := make([]byte, 16<<10)
				if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), c.frame) || fired.Swap(true) {
					return
				}
				fd.own.Store(p.v)
				if p.Reached() {
					first.Store(1)
				} else {
					first.Store(2)
				}
			}
			a.hook.Store(&hook)
			switch c.name {
			case "debt loss":
				if err := u.Close(); err != nil {
					t.Fatal(err)
				}
				if d.Err() == nil {
					t.Fatal("U's close did not lose D, whose work waits on U's dropped value")
				}
			case "stop":
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
			}
			a.hook.Store(nil)
			if !fired.Load() {
				t.Fatalf("the hook never ran in %s", c.frame)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			later := p.Wait(ctx)
			if first.Load() == 1 && (later != nil || !p.Reached()) {
				t.Fatalf("value 1 of D was reached as the record read the word, and later Wait answers %v, Reached %v", later, p.Reached())
			}
		})
	}
}

// fnOf is a function of an image on d (the fake's "k").
func fnOf(t *testing.T, d *Device) *Function {
	t.Helper()
	img, err := d.LoadImage([]byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := img.Resolve("k")
	if err != nil {
		t.Fatal(err)
	}
	return f
}
