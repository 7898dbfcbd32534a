package nvdev

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testutil"
	"github.com/rig-go/rig/nvdev/hw"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPULocalAcrossGrowth runs a kernel across a growth of the local
// memory on GPU 0. local_hold (testdata/local.sm_90.cubin, assembled from
// internal/testkernels/local.ptx) fills an array in each thread's local
// memory and holds, two groups on each multiprocessor, until the host
// writes its flag; its value ends with its own release. Then an entry
// that needs more local memory a thread (local_mem) grows it, and a
// launch of local_mem follows on the same timeline, so that the compute
// channel takes the new local memory while local_hold may still run.
// Once the flag is written, local_hold's threads read their arrays back:
// each must read what it wrote, and local_mem must be right in the new
// memory.
func TestGPULocalAcrossGrowth(t *testing.T) {
	needGPU(t)
	var d *gpu
	o := Open(0, gpuConfig(Config{}))
	mk := o.Make
	o.Make = func(word *uint64) (device.Driver, error) {
		drv, err := mk(word)
		if err == nil {
			d = drv.(*gpu)
		}
		return drv, err
	}
	dev := testutil.Open(t, o)
	ctx := ctxFor(t, 30*time.Second)
	g, ok := rig.Capability(dev, hw.Key)
	if !ok {
		t.Fatal("no capability")
	}
	bin, err := os.ReadFile(filepath.Join("testdata", "local.sm_90.cubin"))
	if err != nil {
		t.Fatalf("%v: build it on a machine with CUDA, from the repository's root: ptxas -arch=sm_90 -o nvdev/testdata/local.sm_90.cubin internal/testkernels/local.ptx", err)
	}
	hold := testutil.Functions(t, dev, bin, "local_hold")[0]
	groups, threads := 2*g.SMs(), 256
	n := groups * threads
	flag := allocBuf(t, dev, device.PinnedMemory, 4096)
	out := allocBuf(t, dev, device.PinnedMemory, 4*n)
	// A test that fails lets local_hold end before the device closes.
	t.Cleanup(func() { atomic.StoreUint64(word64(flag, 0), 1) })
	s := testutil.Submission(t, dev, rig.Launch(hold, hold.Params(), rig.Read(0, 0), rig.Write(1, 8)))
	run := s.Take()
	dims(0, groups, threads)(run)
	first, err := run.Submit(ctx, flag, out)
	if err != nil {
		t.Fatal(err)
	}
	before := d.local.Load()
	if before == nil {
		t.Fatal("local_hold's entry gave the compute channel no local memory")
	}
	local := testutil.Functions(t, dev, cubin(t), "local_mem")[0]
	after := d.local.Load()
	if after == before {
		t.Fatalf("local_mem's entry did not grow the local memory of %d bytes a thread", before.perThread)
	}
	idx, lout := allocBuf(t, dev, device.PinnedMemory, 1024), allocBuf(t, dev, device.PinnedMemory, 1024)
	for i := range 256 {
		binary.LittleEndian.PutUint32(idx.Bytes()[4*i:], uint32((i*37+11)&255))
	}
	s2 := testutil.Submission(t, dev, rig.Launch(local, local.Params(), rig.Read(0, 0), rig.Write(1, 8)))
	run2 := s2.Take()
	dims(0, 1, 256)(run2)
	second, err := run2.Submit(ctx, idx, lout)
	if err != nil {
		t.Fatal(err)
	}
	// The GPU reaches the second value's words while local_hold spins.
	time.Sleep(50 * time.Millisecond)
	if first.Reached() {
		t.Fatal("local_hold ended before its flag was written")
	}
	atomic.StoreUint64(word64(flag, 0), 1)
	for _, p := range []rig.Point{first, second} {
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bad := 0
	for th := range n {
		var want uint32
		for i := range 64 {
			want = want*31 + uint32(th*64+(i*7+th)&63)
		}
		if got := binary.LittleEndian.Uint32(out.Bytes()[4*th:]); got != want {
			if bad < 4 {
				t.Errorf("local_hold's thread %d read 0x%x back, want 0x%x", th, got, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d threads of local_hold read back what they did not write", bad, n)
	}
	for i := range 256 {
		if got, want := i32(lout.Bytes(), i), int32(((i*37+11)&255)*i); got != want {
			t.Fatalf("local_mem's out[%d] = %d, want %d", i, got, want)
		}
	}
	t.Logf("%d threads of local_hold read back their local memory of %d bytes a thread across its growth to %d; local_mem right after it",
		n, before.perThread, after.perThread)
	noCUDA(t)
}
