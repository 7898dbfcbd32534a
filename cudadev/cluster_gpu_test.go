package cudadev

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
	rig "github.com/rig-go/rig/runtime"
)

// A kernel that requires clusters of two groups along x (__cluster_dims__)
// is refused on a grid of 3 before it runs, naming the clusters, and runs
// on a grid of 4, each group adding 1 to its word: the device stays
// usable after the refusal.
func TestGPUClusterDims(t *testing.T) {
	dev := openRig(t, Config{})
	if dev.Arch() != "sm_90" {
		t.Skipf("the cluster kernel is built for sm_90; the GPU is %s", dev.Arch())
	}
	img, err := dev.LoadImage(testkernels.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	add := resolve(t, img, "cluster_add")
	buf := alloc(t, dev, device.PinnedMemory, 16)
	s := submission(t, dev, rig.Launch(add, 8, rig.Write(0, 0)))
	run := s.Take()
	run.Groups(0, 3, 1, 1)
	run.Threads(0, 32, 1, 1)
	last := dev.Last()
	_, err = run.Submit(bg, buf)
	var re *rig.RefusalError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "not a multiple of the 2 of the clusters") {
		t.Fatalf("a grid of 3 groups in clusters of 2: %v", err)
	}
	if dev.Last() != last {
		t.Error("the refused submission took a value")
	}
	t.Log(err)
	run = s.Take()
	run.Groups(0, 4, 1, 1)
	run.Threads(0, 32, 1, 1)
	do(t, run, buf)
	b := buf.Bytes()
	for i := range 4 {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != 1 {
			t.Errorf("word %d is %d after a grid of 4 groups, want 1", i, got)
		}
	}
}
