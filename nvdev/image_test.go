package nvdev

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
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

// alignedCubin is the test cubin with its first section of code aligned to
// align bytes.
func alignedCubin(t *testing.T, align uint64) []byte {
	t.Helper()
	b := bytes.Clone(cubin(t))
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	for i, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Flags&elf.SHF_ALLOC != 0 {
			binary.LittleEndian.PutUint64(b[shoff+uint64(i)*64+48:], align)
			return b
		}
	}
	t.Fatal("no section of code")
	return nil
}

// TestUploadAligned lays an image with a section aligned to more than a
// page into a region rig allocated, which is aligned to a page alone: the
// place holds the image at its alignment, and the lay puts it there.
func TestUploadAligned(t *testing.T) {
	r := openRaw(t, Config{})
	const align = 64 << 10
	b := alignedCubin(t, align)
	code, err := r.d.Image(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Align() != align {
		t.Fatalf("the image is aligned to %d", c.Align())
	}
	// Regions at each offset of a page within the alignment.
	for k := range align / 4096 {
		region := r.alloc(device.DeviceMemory, code.Place)
		img, err := code.Lay(region)
		if err != nil {
			t.Fatalf("a region at 0x%x (%d pages past the alignment): %v", region.Address, region.Address%align/4096, err)
		}
		r.imgs = append(r.imgs, img)
		addr := (region.Address + align - 1) &^ (align - 1)
		want, err := c.Lay(addr)
		if err != nil {
			t.Fatal(err)
		}
		r.f.pump()
		if got := r.f.mem(addr, uint64(len(want))); !bytes.Equal(got, want) {
			t.Errorf("region %d: the region does not hold the relocated image at 0x%x", k, addr)
		}
		e, err := r.d.Entry(img, "twice")
		if err != nil {
			t.Fatal(err)
		}
		if e.Code < addr || e.Code+16 > region.Address+uint64(region.Size) {
			t.Errorf("region %d: the entry's code at 0x%x, outside the image at 0x%x in the region at 0x%x", k, e.Code, addr, region.Address)
		}
		// The next region starts a page further from the alignment: the
		// fake places each region 1 MiB past the one before.
		size := uint64(region.Size+4095) &^ 4095
		pad := (4096 + 2*align - (size+2<<20)%align) % align
		if pad == 0 {
			pad = align
		}
		r.alloc(device.DeviceMemory, int(pad))
	}
}

// TestUploadsWithoutValues lays images one after another with no value
// submitted between them, more than the copy channel's segment ring and
// ring hold at once: each upload completed before the next, so each lay
// finds room, rather than waiting for a value's record to move.
func TestUploadsWithoutValues(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"segment ring of a page", Config{SegmentBytes: 4096}},
		{"ring of 16 entries", Config{RingEntries: 16}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := openRaw(t, c.cfg)
			code, err := r.d.Image(cubin(t))
			if err != nil {
				t.Fatal(err)
			}
			region := r.alloc(device.DeviceMemory, code.Place)
			for i := range 200 {
				img, err := code.Lay(region)
				if err != nil {
					t.Fatalf("lay %d: %v", i, err)
				}
				r.imgs = append(r.imgs, img)
				r.f.pump()
			}
		})
	}
}

// TestUploadFreeWaits frees rig's region of an image right after its lay,
// as rig does for an image it unloads before any launch: the region stays
// the path's until the copy channel completed the upload into it, and goes
// back after that at the next allocation, or at Stop.
func TestUploadFreeWaits(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(map[bool]string{false: "reaped", true: "stopped"}[stop], func(t *testing.T) {
			r := openRaw(t, Config{})
			code, err := r.d.Image(cubin(t))
			if err != nil {
				t.Fatal(err)
			}
			g, err := r.d.Alloc(device.DeviceMemory, code.Place)
			if err != nil {
				t.Fatal(err)
			}
			region := g.(*nvidia.Memory)
			r.f.pause()
			img, err := code.Lay(region)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.d.Unload(img); err != nil {
				t.Fatal(err)
			}
			if err := r.d.Free(region); err != nil {
				t.Fatal(err)
			}
			if r.f.mem(region.Address, 1) == nil {
				t.Fatal("the region went back while the copy channel's upload into it was pending")
			}
			if stop {
				if err := r.d.Stop(""); err != nil {
					t.Fatal(err)
				}
				if r.f.mem(region.Address, 1) != nil {
					t.Error("the region stayed after Stop")
				}
				return
			}
			r.f.resume()
			c, _ := hw.Parse(cubin(t))
			want, err := c.Lay(region.Address)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.f.mem(region.Address, uint64(len(want))); !bytes.Equal(got, want) {
				t.Error("the region does not hold the relocated image")
			}
			r.alloc(device.PinnedMemory, 4096)
			if r.f.mem(region.Address, 1) != nil {
				t.Error("the region stayed after the upload completed and an allocation")
			}
		})
	}
}
