package nvidia

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
)

// fakeExport is a fake of NVIDIA's kernel driver's NV_ESC_EXPORT_TO_DMABUF_FD,
// which checks a call as nv-ioctl.h and nv-dmabuf.c of release 580 would,
// and returns a memfd of the exported size for the dma-buf.
type fakeExport struct {
	t      *testing.T
	devFD  int
	ps     uint64            // the host page size it checks against
	vidmem map[Handle]uint64 // video memory objects and their sizes
	sysmem map[Handle]bool   // host memory objects
	status uint32            // answered instead of an export, if not 0
	errno  syscall.Errno     // answered instead of an export, if not 0
	noFD   bool              // answer NV_OK and fd -1
	calls  int
	last   exportDMABufParams
}

const (
	fakeClient = Handle(0xc1d00001)
	fakeDevFD  = 77
	fakeCtlFD  = 42
)

func (f *fakeExport) ioctl(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	f.calls++
	if fd != f.devFD {
		return syscall.EINVAL // NV_ACTUAL_DEVICE_ONLY: not on the control file
	}
	if req != escape(escExportToDMABufFD, unsafe.Sizeof(exportDMABufParams{})) {
		return syscall.EINVAL
	}
	if f.errno != 0 {
		return f.errno
	}
	x := (*exportDMABufParams)(arg)
	f.last = *x
	x.Status = f.check(x)
	if x.Status != StatusOK {
		return 0
	}
	if f.noFD {
		return 0
	}
	mfd, err := unix.MemfdCreate("fake-dmabuf", unix.MFD_CLOEXEC)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := unix.Ftruncate(mfd, int64(x.TotalSize)); err != nil {
		f.t.Fatal(err)
	}
	x.FD = int32(mfd)
	return 0
}

// check is the status the driver returns the block x with.
func (f *fakeExport) check(x *exportDMABufParams) uint32 {
	if f.status != 0 {
		return f.status
	}
	if x.FD != -1 || x.Client != fakeClient || x.TotalObjects != 1 || x.NumObjects != 1 || x.Index != 0 ||
		x.MappingType != dmabufMappingDefault || x.AllowMmap != 0 || x.TotalSize != x.Sizes[0] {
		return StatusInvalidArgument
	}
	h, off, size := x.Handles[0], x.Offsets[0], x.Sizes[0]
	if f.sysmem[h] {
		return StatusInvalidArgument // neither vidmem nor a GPU without FB
	}
	n, ok := f.vidmem[h]
	if !ok {
		return StatusObjectNotFound
	}
	if off%f.ps != 0 || size%f.ps != 0 || size == 0 || size > n || off > n-size {
		return StatusInvalidArgument
	}
	return StatusOK
}

// fakePath is a path whose only call of the driver is the export, on the
// fake.
func fakePath(f *fakeExport) *Client {
	p := &Client{gpuState: &gpuState{devFD: f.devFD}}
	p.r = rm{conn: conn{ioctl: f.ioctl, sink: &p.sink}, ctl: fakeCtlFD, client: fakeClient}
	return p
}

// fakeSysfs is a directory that lists the PCI functions names.
func fakeSysfs(t testing.TB, names ...string) string {
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// vidmem is a record of a memory object of length bytes at va of kind k,
// and the region of n bytes from byte off of it, of no path: a test names
// the path that gave it.
func vidmem(k device.Memory, h Handle, va, length, off uint64, n int) *Memory {
	return &Memory{Kind: k, Address: va + off, Size: n, Handle: h, Data: &memRecord{va: va, length: length, page: pageSize}}
}

// fdSize is the size of the file fd, by a seek to its end, as a dma-buf
// returns it.
func fdSize(t testing.TB, fd int) int64 {
	t.Helper()
	n, err := unix.Seek(fd, 0, unix.SEEK_END)
	if err != nil {
		t.Fatalf("seek to the end of fd %d: %v", fd, err)
	}
	return n
}

func TestDMA(t *testing.T) {
	const va = 0x20_0000_0000
	dir := fakeSysfs(t, "0000:41:00.0", "0000:4a:00.0", "10000:e1:1f.7")
	freed := vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20)
	freed.Data.(*memRecord).freed = true
	pinned := vidmem(device.PinnedMemory, 0xcaf00003, va, 4096, 0, 4096)
	pinned.Data.(*memRecord).own = true
	borrowed := vidmem(device.PinnedMemory, 0xcaf00003, va, 8192, 0x123, 100)
	borrowed.Borrowed = true
	for _, c := range []struct {
		name   string
		m      *Memory
		fn     string
		ps     uint64
		fake   func(*fakeExport)
		size   int64  // the dma-buf's size where the export succeeds
		offset uint64 // the region's offset in it
		calls  int    // calls of the driver
		errs   []string
		fault  bool
	}{
		{name: "2 MiB of Device memory", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0", size: 2 << 20, calls: 1},
		{name: "upper-case hex", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:4A:00.0", size: 2 << 20, calls: 1},
		{name: "a domain past 0xffff", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "10000:e1:1f.7", size: 2 << 20, calls: 1},
		{name: "1000 bytes in a page", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 4096, 0, 1000), fn: "0000:41:00.0", size: 4096, calls: 1},
		{name: "Mapped memory", m: vidmem(device.MappedMemory, 0xcaf00002, va, 64<<10, 0, 64<<10), fn: "0000:41:00.0", size: 64 << 10, calls: 1},
		{name: "2 MiB pages, 9 MiB asked", m: vidmem(device.DeviceMemory, 0xcaf00004, va, 10<<20, 0, 9<<20), fn: "0000:41:00.0", size: 9 << 20, calls: 1},
		{name: "a region inside its object", m: vidmem(device.DeviceMemory, 0xcaf00004, va, 10<<20, 0x1234, 0x2000), fn: "0000:41:00.0", size: 0x3000, offset: 0x234, calls: 1},
		{name: "64 KiB host pages", m: vidmem(device.DeviceMemory, 0xcaf00004, va, 10<<20, 0x10010, 16), fn: "0000:41:00.0", ps: 64 << 10, size: 64 << 10, offset: 0x10, calls: 1},

		{name: "no bus address", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "zz", errs: []string{`"zz"`, "not a PCI bus address"}},
		{name: "empty fn", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "", errs: []string{`""`, "not a PCI bus address"}},
		{name: "slot past 31", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:20.0", errs: []string{"0000:41:20.0", "not a PCI bus address"}},
		{name: "no such function", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:ff:1f.7", errs: []string{"0000:ff:1f.7", "no such PCI function"}},
		{name: "Pinned memory", m: pinned, fn: "0000:41:00.0", errs: []string{"0000:41:00.0", "Pinned memory", "only the GPU's own memory"}},
		{name: "MapHost memory", m: borrowed, fn: "0000:41:00.0", errs: []string{"0000:41:00.0", "host memory", "only the GPU's own memory"}},
		{name: "freed memory", m: freed, fn: "0000:41:00.0", errs: []string{"0000:41:00.0", "freed"}},
		{name: "memory of no path", m: &Memory{Kind: device.DeviceMemory, Address: va, Size: 4096, Handle: 0xcaf00001}, fn: "0000:41:00.0", errs: []string{"not memory this path gave"}},
		{name: "memory of another path", m: &Memory{Kind: device.DeviceMemory, Address: va, Size: 4096, Handle: 0xcaf00001,
			Data: &memRecord{va: va, length: 4096, page: pageSize, path: &Client{}}}, fn: "0000:41:00.0", errs: []string{"not memory this path gave"}},
		{name: "no memory", fn: "0000:41:00.0", errs: []string{"no memory"}},
		{name: "4 KiB object, 64 KiB host pages", m: vidmem(device.DeviceMemory, 0xcaf00005, va, 4096, 0, 4096), fn: "0000:41:00.0", ps: 64 << 10, errs: []string{"0000:41:00.0", "whole host pages of 65536 bytes"}},
		{name: "a region past its object", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 4096, 0, 8192), fn: "0000:41:00.0", errs: []string{"outside its memory object"}},

		{name: "not supported", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0",
			fake: func(f *fakeExport) { f.status = StatusNotSupported }, calls: 1,
			errs: []string{"0000:41:00.0", "NV_ERR_NOT_SUPPORTED", "exports no dma-buf of this GPU's memory"}},
		{name: "a handle the RM lacks", m: vidmem(device.DeviceMemory, 0xdead0001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0", calls: 1,
			errs: []string{"0000:41:00.0", "NV_ERR_OBJECT_NOT_FOUND", "0xdead0001"}},
		{name: "a handle of host memory", m: vidmem(device.DeviceMemory, 0xcaf00003, va, 4096, 0, 4096), fn: "0000:41:00.0", calls: 1,
			errs: []string{"0000:41:00.0", "NV_ERR_INVALID_ARGUMENT"}},
		{name: "a record longer than the RM's object", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 4<<20, 0, 4<<20), fn: "0000:41:00.0", calls: 1,
			errs: []string{"NV_ERR_INVALID_ARGUMENT"}},
		{name: "EINVAL", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0",
			fake: func(f *fakeExport) { f.errno = syscall.EINVAL }, calls: 1, errs: []string{"0000:41:00.0", "before the RM saw it", "invalid argument"}},
		{name: "lacking", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0",
			fake: func(f *fakeExport) { f.status = StatusNoMemory }, calls: 1, errs: []string{"NV_ERR_NO_MEMORY"}},
		{name: "no descriptor", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0",
			fake: func(f *fakeExport) { f.noFD = true }, calls: 1, errs: []string{"0000:41:00.0", "no file descriptor"}},
		{name: "the GPU lost", m: vidmem(device.DeviceMemory, 0xcaf00001, va, 2<<20, 0, 2<<20), fn: "0000:41:00.0",
			fake: func(f *fakeExport) { f.status = StatusGPUIsLost }, calls: 1, errs: []string{"0000:41:00.0", "NV_ERR_GPU_IS_LOST"}, fault: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := c.ps
			if ps == 0 {
				ps = 4096
			}
			f := &fakeExport{t: t, devFD: fakeDevFD, ps: ps,
				vidmem: map[Handle]uint64{0xcaf00001: 2 << 20, 0xcaf00002: 64 << 10, 0xcaf00004: 10 << 20, 0xcaf00005: 4096},
				sysmem: map[Handle]bool{0xcaf00003: true}}
			if c.fake != nil {
				c.fake(f)
			}
			p := fakePath(f)
			if c.m != nil {
				if rec, ok := c.m.Data.(*memRecord); ok && rec.path == nil {
					rec.path = p // the path's own memory
				}
			}
			d, err := p.dma(c.m, c.fn, dir, ps)
			if f.calls != c.calls {
				t.Errorf("%d calls of the driver, want %d", f.calls, c.calls)
			}
			if c.errs != nil {
				if err == nil {
					unix.Close(d.FD)
					t.Fatalf("answered %+v, not an error", d)
				}
				for _, s := range c.errs {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%q lacks %q", err, s)
					}
				}
				if isFault(err) != c.fault {
					t.Errorf("%v: a fault %v, want %v", err, isFault(err), c.fault)
				}
				if got := p.sink.load(); (got != nil) != c.fault {
					t.Errorf("the path recorded %v for Check", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(d.FD)
			if d.Kind != device.DMABuf || d.FD < 0 || d.Offset != c.offset || d.Address != 0 {
				t.Errorf("answered %+v, want a dma-buf with offset 0x%x", d, c.offset)
			}
			if f.last.Handles[0] != c.m.Handle || f.last.Sizes[0] != uint64(c.size) || f.last.TotalSize != uint64(c.size) {
				t.Errorf("exported %d bytes of 0x%x from 0x%x, want %d bytes of 0x%x", f.last.Sizes[0], f.last.Handles[0], f.last.Offsets[0], c.size, c.m.Handle)
			}
			if got := fdSize(t, d.FD); got != c.size || uint64(got) < d.Offset+uint64(c.m.Size) {
				t.Errorf("the dma-buf holds %d bytes, want %d, covering %d bytes from %d", got, c.size, c.m.Size, d.Offset)
			}
		})
	}
}

// TestDMAPublic: DMA checks fn against the machine's own functions.
func TestDMAPublic(t *testing.T) {
	f := &fakeExport{t: t, devFD: fakeDevFD, ps: 4096, vidmem: map[Handle]uint64{0xcaf00001: 4096}}
	p := fakePath(f)
	m := vidmem(device.DeviceMemory, 0xcaf00001, 0x20_0000_0000, 4096, 0, 4096)
	m.Data.(*memRecord).path = p
	for _, fn := range []string{"zz", "ffff:ff:1f.7"} {
		if _, err := p.DMA(m, fn); err == nil || !strings.Contains(err.Error(), fn) {
			t.Errorf("DMA for %q answered %v", fn, err)
		}
	}
	if f.calls != 0 {
		t.Errorf("%d calls of the driver for functions the machine lacks", f.calls)
	}
	ents, err := os.ReadDir(sysfsPCI)
	if err != nil || len(ents) == 0 {
		t.Skipf("this machine lists no PCI functions: %v", err)
	}
	d, err := p.DMA(m, ents[0].Name())
	if err != nil {
		t.Fatalf("DMA for this machine's %s: %v", ents[0].Name(), err)
	}
	unix.Close(d.FD)
}

// FuzzDMAFunction: any fn is taken for the one function the fake machine
// has exactly where it names that function, and returns an error naming fn
// without a call of the driver otherwise.
func FuzzDMAFunction(f *testing.F) {
	for _, s := range []string{"0000:41:00.0", "0000:41:00.1", "0000:4A:00.0", "00000000:41:00.0", "0:41:00.0", "zz", "", "0000:41:00.0\n", "0000:41:1f.7", "../0000:41:00.0", "0000:41:00.0/.."} {
		f.Add(s)
	}
	dir := fakeSysfs(f, "0000:41:00.0")
	f.Fuzz(func(t *testing.T, fn string) {
		fe := &fakeExport{t: t, devFD: fakeDevFD, ps: 4096, vidmem: map[Handle]uint64{0xcaf00001: 4096}}
		p := fakePath(fe)
		m := vidmem(device.DeviceMemory, 0xcaf00001, 0x20_0000_0000, 4096, 0, 4096)
		m.Data.(*memRecord).path = p
		d, err := p.dma(m, fn, dir, 4096)
		a, perr := ParsePCIAddress(fn)
		want := perr == nil && a == PCIAddress{Bus: 0x41}
		if err == nil {
			unix.Close(d.FD)
		}
		switch {
		case want && err != nil:
			t.Fatalf("%q: %v", fn, err)
		case !want && err == nil:
			t.Fatalf("%q taken for 0000:41:00.0", fn)
		case !want && !strings.Contains(err.Error(), fn) && !strings.Contains(err.Error(), strconv.Quote(fn)):
			t.Fatalf("%q: the error does not name it: %v", fn, err)
		case !want && fe.calls != 0:
			t.Fatalf("%q: the driver was called", fn)
		}
	})
}

// FuzzDMASpan: the span an export takes is the fewest whole host pages of
// the object that hold the region, or none where there are none.
func FuzzDMASpan(f *testing.F) {
	f.Add(uint64(0), uint64(2<<20), uint64(2<<20), uint8(12))
	f.Add(uint64(0x1234), uint64(0x2000), uint64(10<<20), uint8(12))
	f.Add(uint64(0), uint64(4096), uint64(4096), uint8(16))
	f.Add(^uint64(0)-10, uint64(20), ^uint64(0), uint8(12))
	f.Add(^uint64(0)-0xfff, uint64(0x1000), ^uint64(0), uint8(12))
	f.Fuzz(func(t *testing.T, off, n, objLen uint64, shift uint8) {
		ps := uint64(1) << (12 + shift%5)
		start, size, err := dmaSpan(off, n, objLen, ps)
		// What whole pages would hold, in arbitrary precision.
		o, e, l, p := new(big.Int).SetUint64(off), new(big.Int).SetUint64(n), new(big.Int).SetUint64(objLen), new(big.Int).SetUint64(ps)
		e.Add(e, o) // the region's end
		first := new(big.Int).Mul(new(big.Int).Div(o, p), p)
		last := new(big.Int).Mul(new(big.Int).Div(new(big.Int).Add(e, new(big.Int).Sub(p, big.NewInt(1))), p), p)
		possible := n > 0 && e.Cmp(l) <= 0 && last.Cmp(l) <= 0
		if (err == nil) != possible {
			t.Fatalf("dmaSpan(%d, %d, %d, %d) = %d, %d, %v; possible %v", off, n, objLen, ps, start, size, err, possible)
		}
		if err != nil {
			return
		}
		if new(big.Int).SetUint64(start).Cmp(first) != 0 || new(big.Int).SetUint64(start+size).Cmp(last) != 0 {
			t.Fatalf("dmaSpan(%d, %d, %d, %d) = [%d, +%d), want [%v, %v)", off, n, objLen, ps, start, size, first, last)
		}
	})
}

// fdinfo is the value of key in the text of a /proc/<pid>/fdinfo file
// ("key:\tvalue" lines), and whether it has one.
func fdinfo(text, key string) (string, bool) {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

func TestFdinfo(t *testing.T) {
	// A dma-buf's fdinfo as Linux 6.8 writes it.
	const dmabuf = "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t2048\nsize:\t2097152\ncount:\t1\nexp_name:\tnv_dmabuf\nname:\t\n"
	for _, c := range []struct {
		text, key, want string
		ok              bool
	}{
		{dmabuf, "size", "2097152", true},
		{dmabuf, "exp_name", "nv_dmabuf", true},
		{dmabuf, "name", "", true},
		{dmabuf, "flags", "02000002", true},
		{dmabuf, "exp", "", false},
		{"pos:\t0\nflags:\t02\n", "exp_name", "", false},
		{"", "size", "", false},
		{"size 10\n", "size", "", false},
	} {
		if got, ok := fdinfo(c.text, c.key); got != c.want || ok != c.ok {
			t.Errorf("%q in %q: %q %v, want %q %v", c.key, c.text, got, ok, c.want, c.ok)
		}
	}
	// The kernel's own: a memfd has a position and flags, and no exporter.
	fd, err := unix.MemfdCreate("fdinfo", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(fd)
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Skip(err)
	}
	if v, ok := fdinfo(string(b), "pos"); !ok || v != "0" {
		t.Errorf("pos of a new memfd: %q %v in %q", v, ok, b)
	}
	if _, ok := fdinfo(string(b), "exp_name"); ok {
		t.Errorf("a memfd has an exporter: %q", b)
	}
}
