package rig_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// stubbornRuns has a value sent as each test_stubborn launch starts.
var stubbornRuns = make(chan struct{}, 64)

// faultGate releases a test_gatefault launch, which then faults.
var faultGate = make(chan struct{}, 1)

func init() {
	// gatefault waits for faultGate and then faults the device, or ends
	// at the device's stop. One thread.
	hostdev.RegisterParams("test_gatefault", 0, func(k *hostdev.Ctx) {
		select {
		case <-faultGate:
			k.Fault("released by the test")
		case <-k.Stopped():
		}
	})
	// stubborn sleeps for the nanoseconds at 0 and ignores the device's
	// stop, as a GPU kernel that runs to its end. One thread.
	hostdev.RegisterParams("test_stubborn", 8, func(k *hostdev.Ctx) {
		select {
		case stubbornRuns <- struct{}{}:
		default:
		}
		time.Sleep(time.Duration(k.Uint64(0)))
	})
}

// stubborn submits on d a launch that runs for ns whatever happens, and
// returns once it runs.
func stubborn(t *testing.T, d *rig.Device, ns time.Duration) rig.Point {
	t.Helper()
	r := sub(t, d, rig.Launch(fn(t, d, "test_stubborn"), 8)).Take()
	binary.LittleEndian.PutUint64(r.Params(0), uint64(ns))
	p, err := r.Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	<-stubbornRuns
	return p
}

// TestOpenWaitsForRelease checks that Open of the name of a closed or lost
// device whose work still runs waits for its release while its context
// allows, and returns the context's error otherwise.
func TestOpenWaitsForRelease(t *testing.T) {
	for _, c := range []struct {
		name string
		hang time.Duration // the device's hang bound, which loses it
	}{{"closed", 0}, {"lost", 20 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := hostdev.Config{Name: "release-" + c.name, Hang: c.hang}
			// One open that gives up, one that waits.
			for _, patient := range []bool{false, true} {
				d, err := rig.Open(context.Background(), hostdev.Open(cfg))
				if err != nil {
					t.Fatal(err)
				}
				// The lost device's launch outlasts its hang bound by far,
				// so that a busy machine still loses it first.
				run := 300 * time.Millisecond
				if c.hang != 0 {
					run = time.Second
				}
				p := stubborn(t, d, run)
				if c.hang == 0 {
					_ = d.Close()
				} else if err := p.Wait(context.Background()); !errors.Is(err, rig.ErrLost) {
					t.Fatalf("a launch past the hang bound answered %v", err)
				}
				timeout := 20 * time.Millisecond
				if patient {
					timeout = 10 * time.Second
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				e, err := rig.Open(ctx, hostdev.Open(cfg))
				cancel()
				if !patient {
					if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "work still runs") {
						t.Fatalf("an open that gave up waiting: %v", err)
					}
					<-d.Done()
					continue
				}
				if err != nil {
					t.Fatalf("an open that waits for the release: %v", err)
				}
				select {
				case <-d.Done():
				default:
					t.Fatal("the open returned before the old device gave back what it held")
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				<-e.Done()
			}
		})
	}
}

// TestLossKeepsCompleted checks that a value that completed just before
// the next one faulted is returned as reached, not lost: the loss records
// what the word held at the fault, not before the supervisor's last sleep.
func TestLossKeepsCompleted(t *testing.T) {
	for i := 0; i < 10; i++ {
		d := host(t, hostdev.Config{})
		s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8))
		faulty := sub(t, d, rig.Launch(fn(t, d, "fault"), 0))
		p, err := sleepRun(s, 5*time.Millisecond).Submit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		q, err := faulty.Take().Submit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(context.Background()); err != nil {
			t.Fatalf("run %d: the value before the fault, which completed, answered %v", i, err)
		}
		if !p.Reached() {
			t.Fatalf("run %d: the value before the fault is not reached", i)
		}
		if err := q.Wait(context.Background()); !errors.Is(err, rig.ErrLost) {
			t.Fatalf("run %d: the faulting value answered %v", i, err)
		}
		if q.Reached() {
			t.Fatalf("run %d: the faulting value is reached", i)
		}
	}
}

// TestCloseKeepsBuffersOtherDevicesUse checks that the close of device A
// gives a buffer of A back only once the work of device B that reads it
// ended, and that B's work reads A's bytes, not freed memory.
func TestCloseKeepsBuffersOtherDevicesUse(t *testing.T) {
	const n = 4096
	for _, kind := range []device.Memory{device.DeviceMemory, device.PinnedMemory} {
		t.Run(kind.String(), func(t *testing.T) {
			a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
			x := alloc(t, a, kind, n)
			z := alloc(t, b, device.PinnedMemory, 8)
			wait(t, fill(t, a, x, 4, device.Compute))
			p := slowSum(t, b, x, z)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(context.Background()); err != nil {
				t.Fatalf("B's read of A's buffer after A's close: %v", err)
			}
			if got := binary.LittleEndian.Uint64(z.Bytes()); got != 4*n {
				t.Fatalf("B's read of A's buffer summed %d, want %d", got, 4*n)
			}
			<-a.Done()
			if used, _ := a.Budget(); used != 0 {
				t.Fatalf("A counts %d bytes after it gave everything back", used)
			}
			// B can no longer use the buffer A gave back.
			if _, err := sub(t, b, rig.FillBytes(0, 0, n, 1)).Take().Submit(context.Background(), x); err == nil {
				t.Fatal("B used a buffer of A after A gave it back")
			}
		})
	}
}

// TestWaitOnLostDevice checks that work of device B that waits on the
// device side for a point of device A, in another fault domain, fails
// with an error naming A where A never reaches the point: A lost before
// B's submission, A lost after it, or A closed after it with the work
// that writes B's input dropped.
func TestWaitOnLostDevice(t *testing.T) {
	const n = 4096
	for _, c := range []struct {
		name string
		// before runs before B's submission, after it.
		before, after func(t *testing.T, a *rig.Device, pa rig.Point)
		// want is what A's error says.
		want string
	}{
		{"lost before", func(t *testing.T, a *rig.Device, pa rig.Point) {
			faultGate <- struct{}{}
			if err := pa.Wait(context.Background()); !errors.Is(err, rig.ErrLost) {
				t.Fatalf("the faulting launch on A answered %v", err)
			}
		}, nil, "released by the test"},
		{"lost after", nil, func(t *testing.T, a *rig.Device, pa rig.Point) { faultGate <- struct{}{} }, "released by the test"},
		{"closed after", nil, func(t *testing.T, a *rig.Device, pa rig.Point) { _ = a.Close() }, "closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
			if a.Facts().FaultDomain != "" {
				t.Fatal("the host devices share a fault domain")
			}
			x, y := alloc(t, a, device.PinnedMemory, n), alloc(t, b, device.PinnedMemory, n)
			for i := range x.Bytes() {
				x.Bytes()[i] = 1
			}
			// A's launch "writes" x and never completes.
			pa := submit(t, sub(t, a, rig.Launch(fn(t, a, "test_gatefault"), 0, rig.Uses(0, rig.Writes))), x)
			if c.before != nil {
				c.before(t, a, pa)
			}
			// B copies x, after A's write.
			pb, err := sub(t, b, rig.Copy(0, 0, 1, 0, n)).Take().Submit(context.Background(), x, y)
			if c.after != nil {
				if err != nil {
					t.Fatalf("B's submission before A's end: %v", err)
				}
				c.after(t, a, pa)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = pb.Wait(ctx)
				cancel()
				if pb.Reached() {
					t.Error("B's point is reached")
				}
			}
			if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), a.Name()) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("B's work that waits on A's point, which A never reaches: %v", err)
			}
		})
	}
}

// TestCrossDeviceSubmitAllocs guards the submit path of work that waits on
// another device's points on the device side: in steady state it records
// what it owes without allocating.
func TestCrossDeviceSubmitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
	x := alloc(t, a, device.PinnedMemory, 4*256)
	sa := sub(t, a, rig.Launch(fn(t, a, "twice"), 8, rig.ReadWrite(0, 0)))
	sb := sub(t, b, rig.Launch(fn(t, b, "twice"), 8, rig.ReadWrite(0, 0)))
	ctx := context.Background()
	var p rig.Point
	step := func() {
		for _, s := range []*rig.Submission{sa, sb} {
			r := s.Take()
			r.Threads(0, 256, 1, 1)
			var err error
			if p, err = r.Submit(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 100; i++ {
		step()
	}
	wait(t, p)
	if n := testing.AllocsPerRun(500, step); n != 0 {
		t.Fatalf("two submissions that wait on each other's devices allocate %v times", n)
	}
	wait(t, p)
}

// TestCloseWaitsForLostUser checks that the close of device A keeps a
// buffer of A that work of a lost device B still holds until B's release,
// and gives it back then.
func TestCloseWaitsForLostUser(t *testing.T) {
	const n = 4096
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{Hang: 20 * time.Millisecond})
	x, y := alloc(t, a, device.PinnedMemory, n), alloc(t, b, device.PinnedMemory, n)
	wait(t, fill(t, a, x, 6, device.Compute))
	// B's copy of x waits behind a hang, which loses B.
	p := submit(t, sub(t, b, rig.Launch(fn(t, b, "hang"), 0), rig.Copy(0, 0, 1, 0, n).After(0)), x, y)
	if err := p.Wait(context.Background()); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("B's held copy answered %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
		t.Fatal("A gave back a buffer that the lost B's work still holds")
	case <-time.After(50 * time.Millisecond):
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("A did not give its memory back after B's release")
	}
	if used, _ := a.Budget(); used != 0 {
		t.Fatalf("A counts %d bytes after it gave everything back", used)
	}
}
