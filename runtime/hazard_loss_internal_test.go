package rig

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestHazardOnPointLostMeanwhile: a submission of device D that reads a
// buffer whose last write is work of device O, where O is lost short of
// that work, and its word raised past it, after the submission looked for
// O's loss and before it read O's word, waits for nothing: it returns O's
// loss, submits nothing, and D keeps working. The work never wrote the
// buffer.
func TestHazardOnPointLostMeanwhile(t *testing.T) {
	fo := newFake()
	fo.held, fo.peer = true, true
	fo.keepOwnWord(0)
	o := openFake(t, "hazard-lost-o", fo)
	fd := newFake()
	fd.peer = true
	d := openFake(t, "hazard-lost-d", fd)
	x, err := o.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	y, err := d.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := NewSubmission(o, FillBytes(0, 0, 64, 1))
	if err != nil {
		t.Fatal(err)
	}
	p := submit(t, fill, x)
	// O is lost with its word short of p as D's submission reads O's
	// word in its hazards, and the word is then raised past p, as a lost
	// device's held work ends there.
	var once atomic.Bool
	hook := func() {
		buf := make([]byte, 16<<10)
		if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), "Run).hazards") || !once.CompareAndSwap(false, true) {
			return
		}
		o.loseAt("a fault of the fill", &device.Fault{Why: "a fault of the fill"}, p.v-1)
		fo.own.Store(p.v)
	}
	fo.onSignaled.Store(&hook)
	cp, err := NewSubmission(d, Copy(0, 0, 1, 0, 64))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := cp.Take().Submit(ctx, x, y)
	fo.onSignaled.Store(nil)
	if !once.Load() {
		t.Fatal("the submission did not read O's word in its hazards")
	}
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), o.name) {
		t.Fatalf("the submission returned (%v, %v), want O's loss", q, err)
	}
	if n := fd.count(); n != 0 {
		t.Fatalf("D's driver got %d submissions of work that reads what O never wrote", n)
	}
	submit(t, empty(t, d))
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
}
