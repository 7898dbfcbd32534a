package rig_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// stressRan holds the ids of the stress test's launches that ran.
var stressRan sync.Map

// stressFault marks the id of a launch that faults its device.
const stressFault = 1 << 63

func init() {
	// stress_mark records that the launch of the id at 8 ran, writes the
	// id's low byte into the first byte of the buffer at 0, and faults
	// the device for an id marked stressFault. One thread.
	hostdev.RegisterParams("test_stress_mark", 16, func(k *hostdev.Ctx) {
		id := k.Uint64(8)
		if id&stressFault != 0 {
			k.Fault("a stress test's fault")
		}
		stressRan.Store(id, true)
		k.Bytes(k.Uint64(0), 1)[0] = byte(id)
	})
}

// TestStressDevicesShareBuffers runs many goroutines that submit on three
// host devices launches that write buffers of any of them, and wait on
// their points, with contexts that end at random, while a buffer is freed,
// a device is lost to a fault and another closed, each once a random share
// of the work was submitted. Every Submit returns an error or a point; a
// wait answers nil only for a launch that ran; every wait returns; and
// once the devices closed nothing is counted in Waiting nor in their
// budgets.
func TestStressDevicesShareBuffers(t *testing.T) {
	goroutines, each := 600, 6
	if testing.Short() {
		goroutines = 150
	}
	var ids atomic.Uint64
	for round := range 3 {
		rng := rand.New(rand.NewPCG(uint64(round), 3))
		const ndev, nbuf = 3, 4
		var devs [ndev]*rig.Device
		var subs [ndev]*rig.Submission
		var bufs []*rig.Buffer
		for i := range devs {
			devs[i] = host(t, hostdev.Config{Ring: 16 + rng.IntN(64)})
			devs[i].SetWaitSpin(time.Duration(rng.IntN(2)) * 20 * time.Microsecond)
			subs[i] = sub(t, devs[i], rig.Launch(fn(t, devs[i], "test_stress_mark"), 16, rig.Write(0, 0)))
			for range nbuf {
				bufs = append(bufs, alloc(t, devs[i], device.DeviceMemory, 64))
			}
		}

		var bad, oks, submitted atomic.Int64
		var firstBad atomic.Pointer[string]
		fail := func(msg string) {
			if bad.Add(1) == 1 {
				firstBad.Store(&msg)
			}
		}
		var wg sync.WaitGroup
		for g := range goroutines {
			salt := rng.Uint64()
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(salt, uint64(g)))
				for range each {
					i := rng.IntN(ndev)
					id := ids.Add(1)
					r := subs[i].Take()
					binary.LittleEndian.PutUint64(r.Params(0)[8:], id)
					ctx, cancel := stressContext(rng)
					p, err := r.Submit(ctx, bufs[rng.IntN(len(bufs))])
					submitted.Add(1)
					if err != nil {
						cancel()
						if !stressAnswer(err) {
							fail("Submit: " + err.Error())
						}
						continue
					}
					if p.Device() != devs[i] {
						fail("Submit returned a point of another device")
					}
					err = p.Wait(ctx)
					cancel()
					if err == nil {
						oks.Add(1)
						if _, ok := stressRan.Load(id); !ok {
							fail("a wait answered nil for a launch that did not run")
						}
					} else if !stressAnswer(err) {
						fail("Wait: " + err.Error())
					}
				}
			})
		}
		// The events, each once a random share of the work, a quarter at
		// least, was submitted.
		total := int64(goroutines * each)
		var events sync.WaitGroup
		at := func(do func()) {
			share := total/4 + rng.Int64N(total*3/4)
			events.Go(func() {
				for submitted.Load() < share && submitted.Load() < total {
					time.Sleep(100 * time.Microsecond)
				}
				do()
			})
		}
		at(func() { _ = bufs[rng.IntN(len(bufs))].Free() })
		lose := devs[rng.IntN(ndev)]
		at(func() {
			r := subs[indexOfDev(devs[:], lose)].Take()
			binary.LittleEndian.PutUint64(r.Params(0)[8:], stressFault)
			_, _ = r.Submit(context.Background(), bufs[0])
		})
		closing := devs[rng.IntN(ndev)]
		at(func() { _ = closing.Close() })
		stressEnds(t, &wg, "the submitters and waiters")
		events.Wait()

		for _, d := range devs {
			if n := d.Waiting(); n != 0 {
				t.Fatalf("round %d: %s counts %d waiters after every wait returned", round, d.Name(), n)
			}
		}
		for _, d := range devs {
			_ = d.Close()
		}
		var done sync.WaitGroup
		for _, d := range devs {
			done.Go(func() { <-d.Done() })
		}
		stressEnds(t, &done, "the devices' close")
		for _, d := range devs {
			if used, _ := d.Budget(); used != 0 {
				t.Fatalf("round %d: %s's budget counts %d bytes after its close", round, d.Name(), used)
			}
		}
		t.Logf("round %d: %d of %d waits answered nil", round, oks.Load(), total)
		if n := bad.Load(); n > 0 {
			t.Fatalf("round %d: %d broken answers, the first: %s", round, n, *firstBad.Load())
		}
	}
}

func indexOfDev(ds []*rig.Device, d *rig.Device) int {
	for i, o := range ds {
		if o == d {
			return i
		}
	}
	return -1
}

// stressEnds waits for wg, and fails the test with every goroutine's stack
// where it does not end within a bound far past what it takes.
func stressEnds(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	const bound = 60 * time.Second
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(bound):
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s did not end in %v; the goroutines:\n%s", what, bound, buf)
	}
}

// stressContext returns a context that is live, ended already, or ends
// after a random while.
func stressContext(rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch rng.IntN(4) {
	case 0:
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	case 1:
		return context.WithTimeout(context.Background(), time.Duration(rng.IntN(500))*time.Microsecond)
	}
	return context.WithCancel(context.Background())
}

// stressAnswer reports whether err is an answer the stress test's Submit
// or Wait may give: its context's end, a device's loss or close, or the
// freed buffer.
func stressAnswer(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, rig.ErrLost) || errors.Is(err, rig.ErrClosed) || errors.Is(err, rig.ErrFreed)
}
