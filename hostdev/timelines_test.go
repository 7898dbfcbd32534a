package hostdev_test

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// Several host devices at once, as the timelines of one GPU: each its own
// word, queues and workers; memory of one used by another; waits between
// them; a fault shared by those of one fault domain alone.

func init() {
	// timelines.spin spins until the uint64 at parameter 0's address is
	// not 0, or the device stops.
	hostdev.RegisterParams("timelines.spin", 8, func(k *hostdev.Ctx) {
		w := (*uint64)(unsafe.Pointer(&k.Bytes(k.Uint64(0), 8)[0]))
		for atomic.LoadUint64(w) == 0 {
			select {
			case <-k.Stopped():
				return
			case <-time.After(20 * time.Microsecond):
			}
		}
	})
	// timelines.copy8 copies 8 bytes from parameter 0's address to
	// parameter 1's, and adds parameter 2.
	hostdev.RegisterParams("timelines.copy8", 24, func(k *hostdev.Ctx) {
		v := binary.LittleEndian.Uint64(k.Bytes(k.Uint64(0), 8))
		binary.LittleEndian.PutUint64(k.Bytes(k.Uint64(8), 8), v+k.Uint64(16))
	})
	hostdev.RegisterParams("timelines.fault", 0, func(k *hostdev.Ctx) { k.Fault("a fault of the test") })
	// timelines.hold sleeps for the nanoseconds in parameter 1, or until
	// the device stops, and writes when it started and ended (nanoseconds
	// since holdEpoch, by the monotonic clock) to the two uint64s at
	// parameter 0's address.
	hostdev.RegisterParams("timelines.hold", 16, func(k *hostdev.Ctx) {
		start := time.Since(holdEpoch)
		t := time.NewTimer(time.Duration(k.Uint64(8)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-k.Stopped():
		}
		out := k.Bytes(k.Uint64(0), 16)
		binary.LittleEndian.PutUint64(out, uint64(start))
		binary.LittleEndian.PutUint64(out[8:], uint64(time.Since(holdEpoch)))
	})
}

// holdEpoch is the origin of timelines.hold's times.
var holdEpoch = time.Now()

// hostTimelines opens n host devices named name/0 … of fault domain dom,
// and closes them at the test's end.
func hostTimelines(t *testing.T, name, dom string, n int) []*rig.Device {
	t.Helper()
	var devs []*rig.Device
	for i := range n {
		devs = append(devs, openHost(t, hostdev.Config{Name: name + "/" + string(rune('0'+i)), FaultDomain: dom}))
	}
	return devs
}

func fn(t *testing.T, d *rig.Device, name string) *rig.Function {
	t.Helper()
	img, err := d.LoadImage(hostdev.ImageOf(name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := img.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func submit(t *testing.T, d *rig.Device, parts []rig.Part, set func(r *rig.Run), bufs ...*rig.Buffer) rig.Point {
	t.Helper()
	s, err := rig.NewSubmission(d, parts...)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Take()
	r.Groups(0, 1, 1, 1)
	r.Threads(0, 1, 1, 1)
	if set != nil {
		set(r)
	}
	p, err := r.Submit(context.Background(), bufs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t *testing.T, p rig.Point) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Wait(ctx)
}

// TestSeveralDevices runs independent work on two host devices, one held
// back while the other completes, then work of one on memory of the other
// that waits for the other's write.
func TestSeveralDevices(t *testing.T) {
	devs := hostTimelines(t, "host-tl", "", 2)
	a, b := devs[0], devs[1]
	flag, err := a.Alloc(device.PinnedMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Alloc(device.PinnedMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	spin, copyA, copyB := fn(t, a, "timelines.spin"), fn(t, a, "timelines.copy8"), fn(t, b, "timelines.copy8")
	flagWord := (*uint64)(unsafe.Pointer(&flag.Bytes()[0]))
	defer atomic.StoreUint64(flagWord, 1)
	binary.LittleEndian.PutUint64(flag.Bytes()[8:], 40)

	// A spins; B's own work completes meanwhile.
	pa := submit(t, a, []rig.Part{rig.Launch(spin, 8, rig.Read(0, 0))}, nil, flag)
	pb := submit(t, b, []rig.Part{rig.Launch(copyB, 24, rig.Read(0, 0), rig.Write(0, 8))}, func(r *rig.Run) {
		binary.LittleEndian.PutUint64(r.Params(0)[16:], 1)
	}, out)
	if err := waitFor(t, pb); err != nil {
		t.Fatal(err)
	}
	if pa.Reached() {
		t.Fatal("A's spin ended before the test let it")
	}
	if got := binary.LittleEndian.Uint64(out.Bytes()); got != 1 {
		t.Fatalf("B's own work wrote %d, want 1", got)
	}

	// A writes x once its spin ends (8 + 40 + 2); B copies x into out, on
	// A's memory, after A's write.
	pa = submit(t, a, []rig.Part{rig.Launch(copyA, 24, rig.Read(0, 0).Plus(8), rig.Write(1, 8))}, func(r *rig.Run) {
		binary.LittleEndian.PutUint64(r.Params(0)[16:], 2)
	}, flag, x)
	pb = submit(t, b, []rig.Part{rig.Launch(copyB, 24, rig.Read(0, 0), rig.Write(1, 8))}, nil, x, out)
	time.Sleep(10 * time.Millisecond)
	if pb.Reached() || pa.Reached() {
		t.Fatal("work ran before the spin it waits for ended")
	}
	atomic.StoreUint64(flagWord, 1)
	if err := waitFor(t, pb); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(out.Bytes()); got != 42 {
		t.Fatalf("B read %d from A's memory, want 42", got)
	}
}

// TestSeveralDevicesSideBySide runs a kernel that holds its goroutine
// 1 ms on each of two host devices, submitted back to back, in 20 rounds:
// by the kernels' own start and end times, the two ran at once in most
// rounds (in none where the devices ran their work one after the other),
// and each held its 1 ms. It logs the pair's median wall time.
func TestSeveralDevicesSideBySide(t *testing.T) {
	const hold, rounds = time.Millisecond, 20
	devs := hostTimelines(t, "host-pair", "", 2)
	var outs [2]*rig.Buffer
	var parts [2][]rig.Part
	for i, d := range devs {
		out, err := d.Alloc(device.PinnedMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = out
		parts[i] = []rig.Part{rig.Launch(fn(t, d, "timelines.hold"), 16, rig.Write(0, 0))}
	}
	setHold := func(r *rig.Run) { binary.LittleEndian.PutUint64(r.Params(0)[8:], uint64(hold)) }
	overlapped := 0
	var walls []time.Duration
	for round := range rounds {
		t0 := time.Now()
		var ps [2]rig.Point
		for i, d := range devs {
			clear(outs[i].Bytes())
			ps[i] = submit(t, d, parts[i], setHold, outs[i])
		}
		for _, p := range ps {
			if err := waitFor(t, p); err != nil {
				t.Fatal(err)
			}
		}
		walls = append(walls, time.Since(t0))
		var start, end [2]uint64
		for i, out := range outs {
			start[i], end[i] = binary.LittleEndian.Uint64(out.Bytes()), binary.LittleEndian.Uint64(out.Bytes()[8:])
			if start[i] == 0 || end[i] < start[i]+uint64(hold) {
				t.Fatalf("round %d: %s's kernel ran from %d to %d, not %v", round, devs[i].Name(), start[i], end[i], hold)
			}
		}
		if start[0] < end[1] && start[1] < end[0] {
			overlapped++
		}
	}
	slices.Sort(walls)
	t.Logf("two %v kernels on two host devices: ran at once in %d of %d rounds; the pair took %v at the median", hold, overlapped, rounds, walls[len(walls)/2])
	if overlapped <= rounds/2 {
		t.Errorf("the kernels of two host devices ran at once in %d of %d rounds", overlapped, rounds)
	}
}

// TestSeveralDevicesFault faults one of three host devices: the one of
// its fault domain is lost with it, the one of another domain runs on.
func TestSeveralDevicesFault(t *testing.T) {
	same := hostTimelines(t, "host-fd", "test-domain", 2)
	other := hostTimelines(t, "host-fo", "", 1)[0]
	p := submit(t, same[1], []rig.Part{rig.Launch(fn(t, same[1], "timelines.fault"), 0)}, nil)
	if err := waitFor(t, p); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the fault answered %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		_, err = same[0].Alloc(device.DeviceMemory, 64)
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the device of the same domain was not lost: %v", err)
	}
	out, err := other.Alloc(device.PinnedMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	cp := fn(t, other, "timelines.copy8")
	if err := waitFor(t, submit(t, other, []rig.Part{rig.Launch(cp, 24, rig.Read(0, 0), rig.Write(0, 8))}, nil, out)); err != nil {
		t.Fatalf("the device of no domain was lost: %v", err)
	}
}
