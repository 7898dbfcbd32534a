package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestStagedPinnedRegionLetGo: Pinned memory an image is laid into,
// freed before the copy channel ran the upload, is kept while the upload
// may write it, then goes back Go memory and all: with the reap once the
// upload ran, or at Stop where it never ran. The driver then no longer
// holds the Go memory it mapped.
func TestStagedPinnedRegionLetGo(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(r *raw)
	}{
		{"reap", func(r *raw) {
			r.f.resume()
			r.alloc(device.PinnedMemory, 4096) // reaps
			if n := staged(r); n != 0 {
				t.Fatalf("%d staged memories after the upload ran", n)
			}
		}},
		{"stop", func(r *raw) {
			if err := r.d.Stop(""); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
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
			if n := staged(r); n != 2 {
				t.Fatalf("%d staged memories, want the staging buffer and the region", n)
			}
			c.end(r)
			if heldPinned(host) {
				t.Error("the driver holds the Go memory of a Pinned region it gave back")
			}
		})
	}
}

// staged is the number of memories the device keeps for uploads.
func staged(r *raw) int {
	r.d.retMu.Lock()
	defer r.d.retMu.Unlock()
	return len(r.d.staging)
}
