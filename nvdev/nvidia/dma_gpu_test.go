package nvidia

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
)

// checkDMABuf checks that fd is a dma-buf of NVIDIA's driver (exp_name
// nv_dmabuf where the kernel's fdinfo names exporters) of whole host pages
// and at least least bytes, closed on exec, and logs what Linux says of it.
func checkDMABuf(t testing.TB, fd int, least uint64) {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		t.Fatalf("fd %d: %v", fd, err)
	}
	if !strings.Contains(link, "dmabuf") {
		t.Errorf("fd %d is %q, not a dma-buf", fd, link)
	}
	size := fdSize(t, fd)
	if size < 0 || uint64(size) < least || size%int64(os.Getpagesize()) != 0 {
		t.Errorf("fd %d: a dma-buf of %d bytes, want whole host pages covering %d bytes", fd, size, least)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd %d: descriptor flags %#x, %v: not closed on exec", fd, fl, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatalf("fd %d: %v", fd, err)
	}
	text := string(b)
	if exp, ok := fdinfo(text, "exp_name"); ok && exp != "nv_dmabuf" {
		t.Errorf("fd %d: exported by %q, not NVIDIA's driver", fd, exp)
	} else if !ok {
		t.Logf("fd %d: the kernel's fdinfo names no exporter", fd)
	}
	if s, ok := fdinfo(text, "size"); ok && s != strconv.FormatInt(size, 10) {
		t.Errorf("fd %d: fdinfo's size %s, the seek's %d", fd, s, size)
	}
	t.Logf("fd %d: %s, %d bytes; fdinfo %q", fd, link, size, strings.ReplaceAll(strings.TrimSpace(text), "\t", " "))
}

// TestGPUDMA exports GPU 0's memory as dma-bufs for the GPU's own PCI
// function, checks each is NVIDIA's dma-buf covering the region, that one
// outlives Free, and each refusal: fn no bus address or no function, host
// memory, freed memory, and the RM's own refusals named by status. Run it
// with RIG_GPU=1.
func TestGPUDMA(t *testing.T) {
	needGPU(t)
	p, err := Open(0, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	fn := p.Bus()
	t.Logf("driver %s, GPU 0 at %s, host pages of %d bytes", p.DriverVersion(), fn, os.Getpagesize())
	live := map[*Memory]bool{}
	alloc := func(t *testing.T, k device.Memory, n int) *Memory {
		t.Helper()
		m, err := p.Alloc(k, n)
		if err != nil {
			t.Fatalf("Alloc(%v, %d): %v", k, n, err)
		}
		live[m] = true
		return m
	}
	free := func(t *testing.T, m *Memory) {
		t.Helper()
		delete(live, m)
		if err := p.Free(m); err != nil {
			t.Errorf("Free(%v at 0x%x): %v", m.Kind, m.Address, err)
		}
	}
	defer func() {
		for m := range live {
			free(t, m)
		}
	}()

	// The exports: 2 MiB of Device memory first, then a region of part of
	// a page, one of 2 MiB pages and Mapped memory.
	for i, c := range []struct {
		k device.Memory
		n int
	}{{device.DeviceMemory, 2 << 20}, {device.DeviceMemory, 1000}, {device.DeviceMemory, 9 << 20}, {device.MappedMemory, 64 << 10}} {
		ok := t.Run(fmt.Sprintf("%v/%d", c.k, c.n), func(t *testing.T) {
			m, err := p.Alloc(c.k, c.n)
			if c.k == device.MappedMemory && err != nil {
				t.Skipf("no Mapped memory: %v", err)
			}
			if err != nil {
				t.Fatalf("Alloc(%v, %d): %v", c.k, c.n, err)
			}
			live[m] = true
			t0 := time.Now()
			d, err := p.DMA(m, fn)
			if err != nil {
				t.Fatalf("DMA of %d bytes of %v memory at 0x%x for %s: %v", c.n, c.k, m.Address, fn, err)
			}
			defer unix.Close(d.FD)
			t.Logf("DMA of %d bytes of %v memory at 0x%x (handle 0x%x) for %s in %v: %+v", c.n, c.k, m.Address, m.Handle, fn, time.Since(t0), d)
			if d.Kind != device.DMABuf || d.FD < 0 || d.Offset != 0 || d.Address != 0 {
				t.Errorf("answered %+v, want a dma-buf from the region's first byte", d)
			}
			checkDMABuf(t, d.FD, d.Offset+uint64(m.Size))
		})
		if !ok && i == 0 {
			t.Fatal("no export of 2 MiB of Device memory")
		}
	}

	dev := alloc(t, device.DeviceMemory, 2<<20)
	t.Run("two exports, one past Free", func(t *testing.T) {
		m := alloc(t, device.DeviceMemory, 2<<20)
		a, err := p.DMA(m, fn)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(a.FD)
		b, err := p.DMA(m, fn)
		if err != nil {
			t.Fatal(err)
		}
		if a.FD == b.FD {
			t.Errorf("two exports answered one descriptor %d", a.FD)
		}
		if err := unix.Close(b.FD); err != nil {
			t.Errorf("close of the second dma-buf: %v", err)
		}
		free(t, m)
		checkDMABuf(t, a.FD, 2<<20) // NVIDIA's driver holds the memory
	})

	t.Run("refusals", func(t *testing.T) {
		pinned := alloc(t, device.PinnedMemory, 4096)
		const hostLen = 64 << 10
		ha, err := mmap(0, hostLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer munmap(ha, hostLen)
		host, err := p.MapHost(ha, hostLen)
		if err != nil {
			t.Fatalf("MapHost: %v", err)
		}
		live[host] = true
		defer free(t, host) // before the munmap
		gone := alloc(t, device.DeviceMemory, 4096)
		free(t, gone)
		bogus := *dev
		bogus.Handle = 0xdead0001
		for _, c := range []struct {
			name string
			m    *Memory
			fn   string
			errs []string
			rm   bool // a refusal of the RM's, named by its status
		}{
			{"no bus address", dev, "zz", []string{`"zz"`, "not a PCI bus address"}, false},
			{"no such function", dev, "0000:ff:1f.7", []string{"0000:ff:1f.7", "no such PCI function"}, false},
			{"Pinned memory", pinned, fn, []string{fn, "Pinned memory", "only the GPU's own memory"}, false},
			{"MapHost memory", host, fn, []string{fn, "host memory", "only the GPU's own memory"}, false},
			{"freed memory", gone, fn, []string{fn, "freed"}, false},
			{"a handle the RM lacks", &bogus, fn, []string{fn, "0xdead0001"}, true},
		} {
			if c.fn == "0000:ff:1f.7" {
				if _, err := os.Stat("/sys/bus/pci/devices/" + c.fn); err == nil {
					t.Logf("%s: this machine has a function at %s", c.name, c.fn)
					continue
				}
			}
			d, err := p.DMA(c.m, c.fn)
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
			if e, ok := AsRMError(err); ok != c.rm || (ok && (e.Status == StatusOK || !strings.Contains(err.Error(), StatusName(e.Status)))) {
				t.Errorf("%s: the RM's refusal %v (%v), want one %v", c.name, e, ok, c.rm)
			}
			if isFault(err) {
				t.Errorf("%s: a fault", c.name)
			}
		}

		// The RM's checks of the export itself (nv-dmabuf.c, osapi.c):
		// host memory, an offset off a host page, more bytes than the
		// object has.
		ps := uint64(os.Getpagesize())
		inval := []uint32{StatusInvalidArgument}
		for _, c := range []struct {
			name      string
			h         Handle
			off, size uint64
			want      []uint32
		}{
			// Not video memory; or, where the RM gave the host pages'
			// object no GPU, not this GPU's.
			{"Pinned memory's object", pinned.Handle, 0, ps, []uint32{StatusInvalidArgument, StatusInvalidObjectParent}},
			{"an offset off a host page", dev.Handle, 100, ps, inval},
			{"a size off host pages", dev.Handle, 0, ps + 100, inval},
			{"more than the object", dev.Handle, 0, 4 << 20, inval},
		} {
			fd, err := p.exportDMABuf(c.h, c.off, c.size)
			t.Logf("export of %s: %v", c.name, err)
			if err == nil {
				unix.Close(fd)
				t.Errorf("export of %s: answered fd %d", c.name, fd)
				continue
			}
			if e, ok := AsRMError(err); !ok || !slices.Contains(c.want, e.Status) || !strings.Contains(err.Error(), StatusName(e.Status)) {
				t.Errorf("export of %s: %v, want the status %s", c.name, err, StatusName(c.want[0]))
			}
		}
	})

	if err := p.Check(); err != nil {
		t.Errorf("a refusal was taken for a fault: %v", err)
	}
	d, err := p.DMA(dev, fn)
	if err != nil {
		t.Fatalf("DMA after the refusals: %v", err)
	}
	checkDMABuf(t, d.FD, 2<<20)
	if err := unix.Close(d.FD); err != nil {
		t.Errorf("close: %v", err)
	}
}
