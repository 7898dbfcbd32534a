package nvdev

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPUInterruptBudget runs four timelines of GPU 0 in the shared
// channel group, two goroutines each, copying 16 MiB within Device memory
// and waiting for each copy, for a second: waits that park, on words that
// move every 70 µs or so, so that the supervisors sleep on the non-stall
// event (without the budget they raised 35,000 interrupts a second). The interrupts the
// timelines planned together must stay within the GPU's budget (a burst,
// then interruptRate a second). The test logs the waits' p50, p99 and
// max, and the copies a second.
func TestGPUInterruptBudget(t *testing.T) {
	needGPU(t)
	const timelines, perTimeline, size = 4, 2, 16 << 20
	var devs []*rig.Device
	for k := range timelines {
		devs = append(devs, openNamed(t, Name(0, k), Config{Timeline: k, SharedGroup: true}))
	}
	b := budgetFor(devs[0].Facts().Bus)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	taken0, t0 := b.taken.Load(), time.Now()
	for _, d := range devs {
		for range perTimeline {
			src, err := d.Alloc(device.DeviceMemory, size)
			if err != nil {
				t.Fatal(err)
			}
			dst, err := d.Alloc(device.DeviceMemory, size)
			if err != nil {
				t.Fatal(err)
			}
			s, err := rig.NewSubmission(d, rig.Copy(0, 0, 1, 0, size))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				var mine []time.Duration
				for ctx.Err() == nil {
					at := time.Now()
					p, err := s.Take().Submit(ctx, src, dst)
					if err == nil {
						err = p.Wait(context.Background())
					}
					if err != nil {
						if ctx.Err() == nil {
							t.Error(err)
						}
						break
					}
					mine = append(mine, time.Since(at))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	took, taken := time.Since(t0), b.taken.Load()-taken0
	if len(lat) == 0 {
		t.Fatal("no copy completed")
	}
	slices.Sort(lat)
	t.Logf("%d copies in %v (%.0f a second), %d interrupts planned (%.0f a second); waits p50 %v, p99 %v, max %v",
		len(lat), took, float64(len(lat))/took.Seconds(), taken, float64(taken)/took.Seconds(),
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	if limit := uint64(took.Seconds()*interruptRate) + interruptBurst; taken > limit {
		t.Errorf("%d interrupts planned in %v: the budget allows %d", taken, took, limit)
	}
	if taken == 0 {
		t.Errorf("no interrupt planned in %d copies with waiters parked", len(lat))
	}
}
