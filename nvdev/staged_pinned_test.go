package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestStagedPinnedRegionLetGo: Pinned memory an image is laid into,
// freed before the copy channel ran the upload, goes back with the reap
// once the upload ran, Go memory and all: the driver no longer holds the
// Go memory it mapped.
func TestStagedPinnedRegionLetGo(t *testing.T) {
	r := openRaw(t, Config{})
	code, err := r.d.Image(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.d.Alloc(device.PinnedMemory, code.Place)
	if err != nil {
		t.Fatal(err)
	}
	region := g.(*nvidia.Memory)
	host := &hostBytes(region, 0, 1)[0]
	r.f.pause()
	img, err := code.Lay(region)
	if err != nil {
		t.Fatal(err)
	}
	r.imgs = append(r.imgs, img)
	if err := r.d.Free(region); err != nil {
		t.Fatal(err)
	}
	r.d.retMu.Lock()
	staged := len(r.d.staging)
	r.d.retMu.Unlock()
	if staged != 2 {
		t.Fatalf("%d staged memories, want the staging buffer and the region", staged)
	}
	r.f.resume()
	r.alloc(device.PinnedMemory, 4096) // reaps
	r.d.retMu.Lock()
	staged = len(r.d.staging)
	r.d.retMu.Unlock()
	if staged != 0 {
		t.Fatalf("%d staged memories after the upload ran", staged)
	}
	if heldPinned(host) {
		t.Error("the driver holds the Go memory of a Pinned region it gave back")
	}
}

// TestStagedPinnedRegionAtStop: Pinned memory an image is laid into,
// freed before the copy channel ran the upload, goes back at Stop with
// its Go memory where the upload never ran.
func TestStagedPinnedRegionAtStop(t *testing.T) {
	r := openRaw(t, Config{})
	code, err := r.d.Image(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.d.Alloc(device.PinnedMemory, code.Place)
	if err != nil {
		t.Fatal(err)
	}
	region := g.(*nvidia.Memory)
	host := &hostBytes(region, 0, 1)[0]
	r.f.pause()
	img, err := code.Lay(region)
	if err != nil {
		t.Fatal(err)
	}
	r.imgs = append(r.imgs, img)
	if err := r.d.Free(region); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Stop(""); err != nil {
		t.Fatal(err)
	}
	if heldPinned(host) {
		t.Error("the driver holds the Go memory of a Pinned region Stop gave back")
	}
}
