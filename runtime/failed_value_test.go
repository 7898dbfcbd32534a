package rig

import (
	"context"
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
)

// TestFailedValueNeverReached submits a value the driver answers Failed
// for, after it wrote the value into the word (cudadev writes a refused
// value after the work enqueued before it, so that later waits end, and
// the GPU may run that write before rig reads the word): the value's work
// did not all run, so a wait on its point returns the loss, never nil,
// while the value before it, which completed, stays reached.
func TestFailedValueNeverReached(t *testing.T) {
	f := newFake()
	d := openFake(t, "failed-value", f)
	ok := submit(t, launchOn(t, d, Write(0, 0)), allocOn(t, d))
	if err := ok.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.fail, f.failStores = "a launch CUDA refused", true
	f.mu.Unlock()
	p, err := launchOn(t, d, Write(0, 0)).Take().Submit(context.Background(), allocOn(t, d))
	if err == nil {
		err = p.Wait(context.Background())
	}
	if !errors.Is(err, ErrLost) {
		t.Fatalf("the failed value answered %v, want the loss", err)
	}
	if p.d != nil {
		if err := p.Wait(context.Background()); !errors.Is(err, ErrLost) {
			t.Fatalf("a wait on the failed value's point answered %v, want the loss", err)
		}
	}
	if err := ok.Wait(context.Background()); err != nil {
		t.Fatalf("the value before the failure answered %v after it", err)
	}
}

// allocOn is a buffer of 64 bytes of d's Device memory.
func allocOn(t *testing.T, d *Device) *Buffer {
	t.Helper()
	b, err := d.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFailedCommitNeverReached commits pending values through a Commit
// the driver answers Failed for, after it wrote the value into the word
// (Failed: the word still reaches the value): the uncommitted values' work
// is not known to have run, so a wait on their points returns the loss,
// never nil, while the value committed before stays reached.
func TestFailedCommitNeverReached(t *testing.T) {
	f := newFake()
	f.pending, f.held = true, true
	d := openFake(t, "failed-commit", f)
	ok := submit(t, empty(t, d))
	if err := d.commit(ok.Value()); err != nil {
		t.Fatal(err)
	}
	f.complete(ok.Value())
	if err := ok.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.commitFail, f.failStores = "a write CUDA refused", true
	f.mu.Unlock()
	p := submit(t, empty(t, d))
	if err := p.Wait(context.Background()); !errors.Is(err, ErrLost) {
		t.Fatalf("a wait on a value whose commit failed answered %v, want the loss", err)
	}
	if p.Reached() {
		t.Fatal("a value whose commit failed reads as reached")
	}
	if err := ok.Wait(context.Background()); err != nil {
		t.Fatalf("the value committed before the failure answered %v after it", err)
	}
}
