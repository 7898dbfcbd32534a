package nvdev

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPUBesideFault runs kernels on timeline 0, one after another from
// one goroutine, while a kernel of timeline 1, a channel group of its own,
// faults: timeline 0 is not lost and runs on after, and the test logs how
// many of its kernels completed between the fault's submission and the
// loss that the RM reports for timeline 1, and the longest time timeline 0
// completed nothing, for each kind of fault. On the H200 (RM 580), in
// five runs, timeline 0 completed a few kernels in the first fraction of
// a millisecond and then stood still until 19 ms after the RM reported
// the loss (42 to 129 ms after the fault's submission): the compute
// engine runs no other channel group while one holds a fault, so that no
// timeline of the GPU serves meanwhile (docs/nvdev.md).
func TestGPUBesideFault(t *testing.T) {
	needGPU(t)
	a := openNamed(t, Name(0, 0), Config{Hang: 10 * time.Second})
	store := resolve(t, a, "store64")[0]
	word := allocBuf(t, a, device.PinnedMemory, 4096)
	sa, err := rig.NewSubmission(a, rig.Kernel(store, rig.WriteArg(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"fault_illegal_address", "fault_misaligned", "trap"} {
		t.Run(kind, func(t *testing.T) {
			b := openNamed(t, Name(0, 1), Config{Timeline: 1, Hang: 10 * time.Second})
			fn := resolve(t, b, kind)[0]
			var refs []rig.Ref
			var bufs []*rig.Buffer
			if kind != "trap" {
				refs = []rig.Ref{rig.WriteArg(0, 0)}
				bufs = []*rig.Buffer{allocBuf(t, b, device.PinnedMemory, 4096)}
			}
			sb, err := rig.NewSubmission(b, rig.Kernel(fn, refs...))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, 20*time.Second)
			defer cancel()
			var (
				mu    sync.Mutex
				done  []time.Time
				stop  = make(chan struct{})
				aErr  error
				wg    sync.WaitGroup
				value uint64
			)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					value++
					run := sa.Take()
					run.SetUint64(0, 1, value)
					p, err := run.Submit(ctx, word)
					if err == nil {
						err = p.Wait(ctx)
					}
					if err != nil {
						aErr = err
						return
					}
					now := time.Now()
					mu.Lock()
					done = append(done, now)
					mu.Unlock()
				}
			}()
			time.Sleep(50 * time.Millisecond)
			t0 := time.Now()
			p, err := sb.Take().Submit(ctx, bufs...)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Wait(ctx)
			lost := time.Now()
			if !errors.Is(err, rig.ErrLost) {
				t.Fatalf("the fault answered %v", err)
			}
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			if aErr != nil {
				t.Fatalf("timeline 0 during timeline 1's fault: %v", aErr)
			}
			var before, within int
			var gap, gapAt time.Duration
			last := t0
			for _, d := range done {
				if d.Before(t0) {
					before++
					continue
				}
				if d.Before(lost) {
					within++
				}
				if g := d.Sub(last); g > gap {
					gap, gapAt = g, last.Sub(t0)
				}
				last = d
			}
			if len(done) == before {
				t.Fatalf("%s: timeline 0 completed nothing after timeline 1's fault", kind)
			}
			t.Logf("%s: loss seen %v after the fault's submission; timeline 0 completed %d kernels before the fault (in 50 ms), %d between the fault and its loss, %d in all after; its longest stand-still %v, from %v after the fault",
				kind, lost.Sub(t0), before, within, len(done)-before, gap, gapAt)
		})
	}
	example(t, a)
}
