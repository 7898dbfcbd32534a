package rig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// uncommitting is the fake whose Commit commits nothing: the values its
// Submit answers Pending stay uncommitted.
type uncommitting struct{ *fake }

func (u *uncommitting) Commit(v uint64) device.SubmitAnswer {
	u.fake.Commit(v)
	return device.SubmitAnswer{Kind: device.Pending}
}

// uncommittedWrite opens device U of fu, as uncommitting, and device D of
// a plain fake, named after name, and has U's work write z, a buffer of
// D, with a value U leaves uncommitted; it returns U, D, z and that
// value's point.
func uncommittedWrite(t *testing.T, name string, fu *fake) (u, d *Device, z *Buffer, p Point) {
	t.Helper()
	u = openWith(t, device.Opener{Name: name + "-u", Make: func(w *uint64) (device.Driver, error) {
		fu.facts.Word = w
		return &uncommitting{fu}, nil
	}})
	d = openFake(t, name+"-d", newFake())
	z, err := d.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := NewSubmission(u, FillBytes(0, 0, 64, 1))
	if err != nil {
		t.Fatal(err)
	}
	return u, d, z, submit(t, fill, z)
}

// TestSubmitOnAClosingDevicesUncommittedPoint: a submission of device D
// whose work would wait on the device side for a value that device U holds
// uncommitted, while U's Close is under way (it waits for a counted call),
// returns at once an error matching ErrClosed that names U: U commits
// nothing once it closes, and its stop drops the value. It neither spins
// nor waits for U's close to end, and D keeps working.
func TestSubmitOnAClosingDevicesUncommittedPoint(t *testing.T) {
	fu := newFake()
	fu.pending, fu.held, fu.peer = true, true, true
	entered, release := make(chan struct{}), make(chan struct{})
	fu.onDMA = func() {
		close(entered)
		<-release
	}
	// U's work writes z, a buffer of D, with a value U leaves uncommitted.
	u, d, z, _ := uncommittedWrite(t, "closing-commit", fu)
	y, err := u.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	dma := make(chan struct{})
	go func() {
		defer close(dma)
		_, _ = y.DMA("0000:00:00.0")
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- u.Close() }()
	for !u.closing.Load() {
		time.Sleep(10 * time.Microsecond)
	}
	s, err := NewSubmission(d, FillBytes(0, 0, 64, 2))
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := s.Take().Submit(context.Background(), z)
		res <- err
	}()
	var got error
	select {
	case got = <-res:
	case <-time.After(5 * time.Second):
		close(release)
		<-dma
		got = <-res
		t.Errorf("the submission returned only once U's close ended, with %v", got)
		<-closed
		return
	}
	close(release)
	<-dma
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, ErrClosed) || !strings.Contains(got.Error(), u.name) {
		t.Fatalf("the submission returned %v, want an error matching ErrClosed that names %s", got, u.name)
	}
	submit(t, empty(t, d))
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSubmitOnAPointItsDriverNeverCommits: a submission of device D whose
// work would wait on the device side for a value of device U, whose
// driver answers Pending to Commit (against the contract), returns at
// once an error that names U and the value, rather than retrying the
// commit until its context ends, and D keeps working; a wait on that
// value returns the same error at once, rather than waiting for a word
// that never moves.
func TestSubmitOnAPointItsDriverNeverCommits(t *testing.T) {
	fu := newFake()
	fu.pending, fu.held, fu.peer = true, true, true
	u, d, z, p := uncommittedWrite(t, "never-commit", fu)
	// U's stop drops the value it never committed, which ends U's use
	// of z, a buffer of D, that D's close waits for: U closes first.
	t.Cleanup(func() {
		if err := u.Close(); err != nil {
			t.Error(err)
		}
	})
	s, err := NewSubmission(d, FillBytes(0, 0, 64, 2))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.Take().Submit(ctx, z)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the submission returned %v after the context's %v, want an error at once", err, ctx.Err())
	}
	for _, want := range []string{u.name, fmt.Sprint(p.v), "Pending"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %q", err, want)
		}
	}
	submit(t, empty(t, d))
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "Pending") {
		t.Fatalf("a wait on the uncommitted value returned %v after the context's %v, want the Commit's error at once", err, ctx.Err())
	}
}
