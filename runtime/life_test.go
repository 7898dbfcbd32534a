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

func init() {
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
		hang int // the device's HangMs, which loses it
	}{{"closed", 0}, {"lost", 20}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := hostdev.Config{Name: "release-" + c.name, HangMs: c.hang}
			// One open that gives up, one that waits.
			for _, patient := range []bool{false, true} {
				d, err := rig.Open(context.Background(), hostdev.Open(cfg))
				if err != nil {
					t.Fatal(err)
				}
				p := stubborn(t, d, 300*time.Millisecond)
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
// the next one faulted is answered as reached, not lost: the loss records
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
	for _, kind := range []device.Memory{device.Device, device.Pinned} {
		t.Run(kind.String(), func(t *testing.T) {
			a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
			x := alloc(t, a, kind, n)
			z := alloc(t, b, device.Pinned, 8)
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
