package nvdev

import (
	"bytes"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
)

// TestUpload lays an image into a region of Device memory, as rig does:
// the copy channel copies it there from a staging buffer, the next
// submission on the compute channel acquires the copy channel's mark
// before it invalidates the caches, the kernel's descriptor names the
// region, and the staging buffer goes back once the copy completed.
func TestUpload(t *testing.T) {
	r := openRaw(t, Config{})
	code, err := r.d.Image(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	region := r.alloc(device.DeviceMemory, code.Place)
	live := r.f.live()
	img, err := code.Lay(region)
	if err != nil {
		t.Fatal(err)
	}
	r.imgs = append(r.imgs, img)
	if got := r.f.live(); got != live+1 {
		t.Errorf("%d memories after the lay, want %d (the staging buffer)", got, live+1)
	}
	c, _ := hw.Parse(cubin(t))
	want, err := c.Lay(region.Address)
	if err != nil {
		t.Fatal(err)
	}
	r.f.pump()
	if got := r.f.mem(region.Address, uint64(len(want))); !bytes.Equal(got, want) {
		t.Error("the region does not hold the relocated image")
	}
	e, err := r.d.Entry(img, "twice")
	if err != nil {
		t.Fatal(err)
	}
	if e.Code < region.Address || e.Code >= region.Address+uint64(region.Size) {
		t.Errorf("the entry's code at 0x%x, outside the region at 0x%x", e.Code, region.Address)
	}
	r.f.trace = map[string][]hw.Write{}
	x := r.alloc(device.DeviceMemory, 1024)
	r.wait(r.submit(nil, launch(e, 1, 32, u64s(x.Address))))
	got := r.f.trace["channel 0"]
	if len(got) < 6 || got[4].Method != hw.HostSemExecute || got[4].Value&7 != hw.SemAcqCircGEQ ||
		got[5].Method != hw.ComputeInvalidateShaderCachesNoWFI {
		t.Errorf("the compute channel's first words: %v", got)
	}
	// An allocation gave the staging buffer back.
	r.d.retMu.Lock()
	left := len(r.d.staging)
	r.d.retMu.Unlock()
	if left != 0 {
		t.Error("the staging buffer stayed after an allocation")
	}
	// Unload leaves the region to rig.
	if err := r.d.Unload(img); err != nil {
		t.Fatal(err)
	}
	r.imgs = r.imgs[:len(r.imgs)-1]
	if r.f.mem(region.Address, 1) == nil {
		t.Error("unload freed rig's region")
	}
}
