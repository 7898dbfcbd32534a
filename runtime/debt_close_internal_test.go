package rig

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestDebtLossAsCloseBegins: device D's work waits on the device side for
// a value of device U, and U's stop, which drops that value, loses D
// (failDebtors) just as D's supervisor begins D's close. The waiter of D's
// point that D's close wakes gets the answer a later wait on the point
// gets: the loss, where D was lost, not ErrClosed.
func TestDebtLossAsCloseBegins(t *testing.T) {
	fu := newFake()
	fu.held = true
	u := openFake(t, "debt-close-u", fu)
	fd := newFake()
	fd.held, fd.peer = true, true
	fd.keepOwnWord(0)
	d := openFake(t, "debt-close-d", fd)
	d.SetWaitSpin(0)
	x, err := u.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	y, err := d.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := NewSubmission(u, FillBytes(0, 0, 64, 1))
	if err != nil {
		t.Fatal(err)
	}
	submit(t, fill, x)
	cp, err := NewSubmission(d, Copy(0, 0, 1, 0, 64))
	if err != nil {
		t.Fatal(err)
	}
	p := submit(t, cp, x, y)
	fd.mu.Lock()
	if n := len(fd.submitted); n != 1 || len(fd.submitted[0].Waits) != 1 {
		t.Fatalf("D's work waits on %v, want U's word", fd.submitted)
	}
	fd.mu.Unlock()
	res := make(chan error, 1)
	go func() { res <- p.Wait(context.Background()) }()
	for d.Waiting() != 1 {
		time.Sleep(10 * time.Microsecond)
	}
	// U's stop, as its close records it, and its look for the devices
	// that owe it, run on D's supervisor at its close's first read of
	// D's word.
	var fired atomic.Bool
	hook := func() {
		if !strings.Contains(string(debug.Stack()), "(*supervisor).close") || fired.Swap(true) {
			return
		}
		u.stopAt.Store(u.read())
		u.stopped.Store(true)
		u.failDebtors()
	}
	fd.onSignaled.Store(&hook)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	got := <-res
	later := p.Wait(context.Background())
	if !fired.Load() {
		t.Fatal("the hook never ran in D's close")
	}
	if got == nil || later == nil || errors.Is(got, ErrLost) != errors.Is(later, ErrLost) {
		t.Fatalf("the waiter D's close woke got %v, and a later wait %v (D's loss: %v)", got, later, d.Err())
	}
	if d.Err() != nil && !errors.Is(got, ErrLost) {
		t.Fatalf("D was lost (%v), and its waiter got %v", d.Err(), got)
	}
}
