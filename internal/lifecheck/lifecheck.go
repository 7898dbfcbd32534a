// Package lifecheck holds checks of rig's lifetimes across two devices,
// which the GPU tests of the drivers run on their own devices: a device's
// Close keeps its buffers while another device's work uses them, and work
// that waits on the device side for a point that its device never reaches
// fails with an error that names that device.
//
// Each check takes two open devices, A and B, whose work can use each
// other's buffers (Driver.MapPeer), and a function of each that spins
// until the 8 bytes at the address in its first 8 parameter bytes are not
// zero (the test kernels' spin_until). The checks run on the calling test's
// goroutine and end A, by its close, or by its loss where the check's end
// waits for A's hang bound (Ender); the caller closes B, and A where it
// was lost.
package lifecheck

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// held is the time a check holds work to see what runs meanwhile.
const held = 200 * time.Millisecond

// gate is a spin of a device's work on a flag of Pinned memory. The host
// writes the flag: its device must not give it back before that.
type gate struct {
	flag *rig.Buffer
	word *uint64
}

func newGate(t testing.TB, d *rig.Device) *gate {
	t.Helper()
	flag := alloc(t, d, device.PinnedMemory, 8)
	g := &gate{flag: flag, word: (*uint64)(unsafe.Pointer(&flag.Bytes()[0]))}
	atomic.StoreUint64(g.word, 0)
	return g
}

func (g *gate) open() { atomic.StoreUint64(g.word, 1) }

func alloc(t testing.TB, d *rig.Device, k device.Memory, n int) *rig.Buffer {
	t.Helper()
	b, err := d.Alloc(k, n)
	if err != nil {
		t.Fatalf("%s: alloc of %d bytes of %v memory: %v", d.Name(), n, k, err)
	}
	return b
}

func submit(t testing.TB, d *rig.Device, parts []rig.Part, bufs ...*rig.Buffer) (rig.Point, error) {
	t.Helper()
	s, err := rig.NewSubmission(d, parts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Take().Submit(ctx, bufs...)
}

func waitFor(p rig.Point) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return p.Wait(ctx)
}

// CloseKeepsPeerBuffers fills a Device buffer x of A on A, has B copy x
// into a Pinned buffer of B behind B's spin, and closes A while B's copy
// waits: A must give x back only after B's copy ran, and the copy must
// read A's bytes.
func CloseKeepsPeerBuffers(t *testing.T, a, b *rig.Device, spinB *rig.Function) {
	const n = 1 << 20
	x, y := alloc(t, a, device.DeviceMemory, n), alloc(t, b, device.PinnedMemory, n)
	clear(y.Bytes())
	p, err := submit(t, a, []rig.Part{rig.FillBytes(0, 0, n, 0x5a)}, x)
	if err == nil {
		err = waitFor(p)
	}
	if err != nil {
		t.Fatalf("%s: fill: %v", a.Name(), err)
	}
	g := newGate(t, b)
	defer g.open()
	pb, err := submit(t, b, []rig.Part{rig.Launch(spinB, 8, rig.Read(0, 0)), rig.Copy(1, 0, 2, 0, n).After(0)}, g.flag, x, y)
	if err != nil {
		t.Fatalf("%s: the held copy of %s's buffer: %v", b.Name(), a.Name(), err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("%s: close: %v", a.Name(), err)
	}
	select {
	case <-a.Done():
		t.Fatalf("%s gave its memory back while %s's work that reads it waited", a.Name(), b.Name())
	case <-time.After(held):
	}
	g.open()
	if err := waitFor(pb); err != nil {
		t.Fatalf("%s: the copy of %s's buffer after %s's close: %+v", b.Name(), a.Name(), a.Name(), err)
	}
	for i, c := range y.Bytes() {
		if c != 0x5a {
			t.Fatalf("%s: byte %d of the copy of %s's buffer is %#x, want 0x5a", b.Name(), i, a.Name(), c)
		}
	}
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not give its memory back in 20 s after %s's work ended", a.Name(), b.Name())
	}
	if used, _ := a.Budget(); used != 0 {
		t.Fatalf("%s counts %d bytes after it gave everything back", a.Name(), used)
	}
}

// WaitOnEnded holds A's work that writes a Device buffer x of A behind
// A's spin, and has B copy x into a Pinned buffer of B, which B's work
// waits for on the device side. end ends A without its work: before B's
// submission where before is set, after it otherwise. B's work must then
// fail with an error that matches ErrLost, names A and holds want, and its
// point must not be reached.
func WaitOnEnded(t *testing.T, a, b *rig.Device, spinA *rig.Function, before bool, end func(), want string) {
	const n = 1 << 20
	x, y := alloc(t, a, device.DeviceMemory, n), alloc(t, b, device.PinnedMemory, n)
	// The flag is B's, which outlives A's close: A's spin reads it through
	// A's view, and the host still writes it after A gave its memory back.
	g := newGate(t, b)
	defer g.open()
	if _, err := submit(t, a, []rig.Part{rig.Launch(spinA, 8, rig.Read(0, 0)), rig.FillBytes(1, 0, n, 0x77).After(0)}, g.flag, x); err != nil {
		t.Fatalf("%s: the held fill: %v", a.Name(), err)
	}
	if before {
		end()
	}
	pb, err := submit(t, b, []rig.Part{rig.Copy(0, 0, 1, 0, n)}, x, y)
	if !before {
		if err != nil {
			t.Fatalf("%s: the copy of %s's buffer: %v", b.Name(), a.Name(), err)
		}
		end()
		err = waitFor(pb)
		if pb.Reached() {
			t.Errorf("%s: the copy's point is reached", b.Name())
		}
	}
	if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), a.Name()) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: the copy of %s's buffer, which %s never writes: %+v", b.Name(), a.Name(), a.Name(), err)
	}
	t.Logf("%s: %v", b.Name(), err)
}

// Ender returns the end WaitOnEnded takes: a close of d where held is
// false, and otherwise a wait (up to limit) until d's hang bound loses it
// while its work is held.
func Ender(t *testing.T, d *rig.Device, held bool, limit time.Duration) func() {
	return func() {
		t.Helper()
		if !held {
			_ = d.Close()
			return
		}
		select {
		case <-d.Lost():
		case <-time.After(limit):
			t.Fatalf("%s is not lost %v into its held work", d.Name(), limit)
		}
	}
}
