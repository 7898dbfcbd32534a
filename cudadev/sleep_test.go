package cudadev

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// cpuTime is the process's CPU time, user and system together.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestGPUSleepBlocks waits on a kernel that spins until the test sets a
// flag: while it runs, the parked waiter and the supervisor's Sleep cost
// the process almost no CPU (Sleep blocks in cuEventSynchronize on a
// blocking-sync event, where it polled in nanosleeps before), and the
// wait ends once the kernel does.
func TestGPUSleepBlocks(t *testing.T) {
	dev := openRig(t, Config{})
	dev.SetWaitSpin(0)
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	spin := resolve(t, img, "spin_until")
	flag := alloc(t, dev, device.PinnedMemory, 8)
	fb := flag.Bytes()
	released := false
	defer func() {
		if !released {
			setFlag(fb)
		}
	}()
	p, err := submission(t, dev, rig.Launch(spin, 8, rig.Read(0, 0))).Take().Submit(bg, flag)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait(bg) }()
	time.Sleep(50 * time.Millisecond)
	c0, w0 := cpuTime(t), time.Now()
	time.Sleep(300 * time.Millisecond)
	used, wall := cpuTime(t)-c0, time.Since(w0)
	setFlag(fb)
	released = true
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end 10 s after the kernel was released")
	}
	t.Logf("%v of CPU in %v of waiting", used, wall)
	// The process's own time (the test, the collector, the supervisor)
	// counts too: a Sleep that polled in steps of tens of microseconds
	// would take a good share of a core.
	if used > wall/15 {
		t.Errorf("%v of CPU in %v of waiting on a running kernel: Sleep polls", used, wall)
	}
}

// BenchmarkGPUParkedWake is the round trip of an empty launch and a wait
// that parks at once (SetWaitSpin(0)), so that the supervisor's Sleep
// wakes it: ns/op is the wake-up's latency on top of the launch, and
// cpu-ns/op the process's CPU time per round trip.
func BenchmarkGPUParkedWake(b *testing.B) {
	for _, spin := range []time.Duration{0, rig.DefaultWaitSpin} {
		b.Run("spin="+spin.String(), func(b *testing.B) {
			dev := openRig(b, Config{})
			dev.SetWaitSpin(spin)
			img, err := dev.LoadImage(kernels(b, dev.Arch()))
			if err != nil {
				b.Fatal(err)
			}
			s := submission(b, dev, rig.Launch(resolve(b, img, "empty"), 0))
			b.ReportAllocs()
			c0 := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				p, err := s.Take().Submit(bg)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Wait(bg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}
