package testutil_test

import (
	"encoding/binary"
	"flag"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHelpersRunAKernel opens a host device, runs sleep through every
// helper, and closes it by CloseDone.
func TestHelpersRunAKernel(t *testing.T) {
	dev := testutil.Open(t, hostdev.Open(hostdev.Config{Name: "testutil"}))
	sleep := testutil.Functions(t, dev, hostdev.ImageOf("sleep", "empty"), "sleep", "empty")[0]
	buf := testutil.Alloc(t, dev, device.PinnedMemory, 64)
	if len(buf.Bytes()) != 64 {
		t.Fatalf("Alloc of 64 bytes gave %d", len(buf.Bytes()))
	}
	r := testutil.Submission(t, dev, rig.Launch(sleep, 8)).Take()
	binary.LittleEndian.PutUint64(r.Params(0), uint64(time.Millisecond))
	p := testutil.SubmitWait(t, r, testutil.Timeout)
	testutil.Wait(t, p)
	if err := p.Wait(testutil.Context(t, time.Second)); err != nil {
		t.Fatal(err)
	}
	if !testutil.CloseDone(t, dev) {
		t.Fatal("CloseDone returned false")
	}
}

// TestNeedGPU checks that NeedGPU skips exactly where RIG_GPU is not 1.
func TestNeedGPU(t *testing.T) {
	for _, v := range []string{"", "0", "1"} {
		t.Run("RIG_GPU="+v, func(t *testing.T) {
			t.Setenv("RIG_GPU", v)
			ran := false
			t.Run("inner", func(t *testing.T) {
				testutil.NeedGPU(t)
				ran = true
			})
			if ran != (v == "1") || testutil.GPU() != (v == "1") {
				t.Errorf("RIG_GPU=%q: the test ran %v, GPU() = %v", v, ran, testutil.GPU())
			}
		})
	}
}

// TestSettleAndReadSum frees a buffer, settles the budget back to its
// count before the buffer, and reads the freed buffer's slice.
func TestSettleAndReadSum(t *testing.T) {
	dev := testutil.Open(t, hostdev.Open(hostdev.Config{Name: "testutil-settle"}))
	used, _ := dev.Budget()
	b := testutil.Alloc(t, dev, device.PinnedMemory, 100)
	mem := b.Bytes()
	for i := range mem {
		mem[i] = 2
	}
	if u, _ := dev.Budget(); u == used {
		t.Fatal("the budget does not count the buffer")
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	testutil.Settle(t, dev, used)
	if got := testutil.ReadSum(t, mem); got != 200 {
		t.Fatalf("ReadSum = %d, want 200", got)
	}
}

// TestBenchHelpers runs TimeSteps and Pipelined in a benchmark of 50
// iterations and checks the steps, the drains and the median.
func TestBenchHelpers(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("50x"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bt.Value.Set(old) }()
	var steps, drains, n int
	r := testing.Benchmark(func(b *testing.B) {
		steps, drains, n = 0, 0, b.N
		testutil.Pipelined(b, 20, func() { steps++ }, func() { drains++ })
		testutil.TimeSteps(b, func() time.Duration { return time.Microsecond })
	})
	if n != 50 || steps != testutil.Warmup+50 || drains != 4 {
		t.Errorf("b.N %d: %d steps and %d drains, want %d and 4", n, steps, drains, testutil.Warmup+50)
	}
	if got := r.Extra["ns-median"]; got != 1000 {
		t.Errorf("ns-median = %v, want 1000", got)
	}
}
