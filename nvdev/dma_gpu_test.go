package nvdev

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
	rig "github.com/rig-go/rig/runtime"
)

// dmabufFacts is what Linux says of the file fd: its name in /proc/self/fd,
// its size (a seek to its end, which a dma-buf returns with its size) and
// its /proc/self/fdinfo text.
func dmabufFacts(t testing.TB, fd int) (link string, size int64, info string) {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		t.Fatalf("fd %d: %v", fd, err)
	}
	if size, err = unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		t.Fatalf("fd %d: seek to the end: %v", fd, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatalf("fd %d: %v", fd, err)
	}
	return link, size, string(b)
}

// fdinfoLine is the value of key in fdinfo text ("key:\tvalue" lines).
func fdinfoLine(text, key string) (string, bool) {
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// TestGPUDMA exports a buffer of 2 MiB of GPU 0's Device memory through
// rig as a dma-buf for the GPU's own PCI function, checks it is NVIDIA's
// dma-buf and covers the buffer, and checks that each refusal names its
// cause and leaves the device running the example. Run it with
// RIG_GPU=1.
func TestGPUDMA(t *testing.T) {
	dev := openRig(t, Config{})
	fn := dev.Facts().Bus
	if _, err := nvidia.ParsePCIAddress(fn); err != nil {
		t.Fatalf("the device's bus address: %v", err)
	}
	check := func(t *testing.T, what string, d device.DMA, n int) {
		t.Helper()
		defer unix.Close(d.FD)
		if d.Kind != device.DMABuf || d.FD < 0 || d.Offset != 0 || d.Address != 0 {
			t.Errorf("%s: answered %+v, want a dma-buf from the buffer's first byte", what, d)
		}
		link, size, info := dmabufFacts(t, d.FD)
		t.Logf("%s: fd %d is %s of %d bytes; fdinfo %q", what, d.FD, link, size, strings.ReplaceAll(strings.TrimSpace(info), "\t", " "))
		if !strings.Contains(link, "dmabuf") {
			t.Errorf("%s: fd %d is %q, not a dma-buf", what, d.FD, link)
		}
		if size < int64(d.Offset)+int64(n) || size%int64(os.Getpagesize()) != 0 {
			t.Errorf("%s: a dma-buf of %d bytes, want whole host pages covering %d bytes from %d", what, size, n, d.Offset)
		}
		if exp, ok := fdinfoLine(info, "exp_name"); ok && exp != "nv_dmabuf" {
			t.Errorf("%s: exported by %q, not NVIDIA's driver", what, exp)
		}
		if s, ok := fdinfoLine(info, "size"); ok && s != strconv.FormatInt(size, 10) {
			t.Errorf("%s: fdinfo's size %s, the seek's %d", what, s, size)
		}
	}

	b := allocBuf(t, dev, device.DeviceMemory, 2<<20)
	t0 := time.Now()
	d, err := b.DMA(fn)
	if err != nil {
		t.Fatalf("dma of 2 MiB of Device memory at 0x%x for %s: %v", b.Address(), fn, err)
	}
	t.Logf("dma of 2 MiB of Device memory at 0x%x for %s in %v: %+v", b.Address(), fn, time.Since(t0), d)
	t.Run("Device 2 MiB", func(t *testing.T) { check(t, "Device 2 MiB", d, 2<<20) })
	t.Run("Device 1000 bytes", func(t *testing.T) {
		s := allocBuf(t, dev, device.DeviceMemory, 1000)
		d, err := s.DMA(fn)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "Device 1000 bytes", d, 1000)
	})
	t.Run("Mapped 64 KiB", func(t *testing.T) {
		if !dev.Facts().Kinds.Has(device.MappedMemory) {
			t.Skip("the device has no Mapped memory")
		}
		m := allocBuf(t, dev, device.MappedMemory, 64<<10)
		d, err := m.DMA(fn)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "Mapped 64 KiB", d, 64<<10)
	})

	pinned := allocBuf(t, dev, device.PinnedMemory, 4096)
	for _, c := range []struct {
		name string
		buf  *rig.Buffer
		fn   string
		errs []string
	}{
		{"no bus address", b, "zz", []string{`"zz"`, "not a PCI bus address"}},
		{"no such function", b, "0000:ff:1f.7", []string{"0000:ff:1f.7", "no such PCI function"}},
		{"Pinned memory", pinned, fn, []string{fn, "Pinned memory", "only the GPU's own memory"}},
	} {
		if c.fn == "0000:ff:1f.7" {
			if _, err := os.Stat("/sys/bus/pci/devices/" + c.fn); err == nil {
				t.Logf("%s: this machine has a function at %s", c.name, c.fn)
				continue
			}
		}
		d, err := c.buf.DMA(c.fn)
		t.Logf("%s: %v", c.name, err)
		if err == nil {
			unix.Close(d.FD)
			t.Errorf("%s: answered %+v", c.name, d)
			continue
		}
		for _, s := range c.errs {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q lacks %q", c.name, err, s)
			}
		}
	}
	if err := dev.Err(); err != nil {
		t.Fatalf("the refusals lost the device: %v", err)
	}
	example(t, dev)
	noCUDA(t)
}
