package cudadev

import (
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPUUncommittedTail submits lone launches that CUDA holds
// uncommitted (Submit answers Pending until 64 values are written) and
// waits for none of them: the supervisor commits them once the word
// stands still, so that their points are reached, the buffer freed
// behind them is given back, and the hang bound loses nothing for work
// that ended. Run it with RIG_GPU=1.
func TestGPUUncommittedTail(t *testing.T) {
	const hang = 200 * time.Millisecond
	dev := openRig(t, Config{Hang: hang})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	empty := resolve(t, img, "empty")
	b, err := dev.Alloc(device.DeviceMemory, 64)
	if err != nil {
		t.Fatal(err)
	}
	var last rig.Point
	for range 3 {
		if last, err = submission(t, dev, rig.Launch(empty, 0, rig.Uses(0, rig.Writes))).Take().Submit(bg, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !last.Reached() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !last.Reached() {
		t.Fatal("the uncommitted launches' last point was never reached")
	}
	time.Sleep(3 * hang)
	if err := dev.Err(); err != nil {
		t.Fatalf("the device was lost for work that ended: %v", err)
	}
	if err := last.Wait(bg); err != nil {
		t.Fatalf("the last launch answered %v", err)
	}
}
