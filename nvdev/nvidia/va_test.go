package nvidia

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPool(t *testing.T) {
	p := newPool(0x10000, 0x100000)
	a, ok := p.alloc(0x1000, 0x1000)
	if !ok || a != 0x10000 {
		t.Fatalf("first alloc: 0x%x %v", a, ok)
	}
	b, ok := p.alloc(0x1000, 0x10000)
	if !ok || b != 0x20000 {
		t.Fatalf("aligned alloc: 0x%x %v", b, ok)
	}
	c, ok := p.alloc(0x2000, 0x1000)
	if !ok || c != 0x11000 {
		t.Fatalf("alloc into the alignment gap: 0x%x %v", c, ok)
	}
	if _, ok := p.alloc(0x200000, 0x1000); ok {
		t.Error("alloc beyond the pool succeeded")
	}
	if _, ok := p.alloc(0x1000, 3); ok {
		t.Error("alloc with an alignment that is no power of two succeeded")
	}
	for _, x := range []struct{ a, n uint64 }{{a, 0x1000}, {c, 0x2000}, {b, 0x1000}} {
		p.release(x.a, x.n)
	}
	if len(p.free) != 1 || p.free[0] != (span{0x10000, 0x100000}) {
		t.Errorf("after releasing everything: %x", p.free)
	}
	if p.freeBytes() != 0x100000 || !p.contains(span{0x10000, 0x1000}) || p.contains(span{0x10000, 0x200000}) {
		t.Errorf("free bytes 0x%x", p.freeBytes())
	}
	d, _ := p.alloc(0x1000, 0x1000)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a double release did not panic")
			}
		}()
		p.release(d, 0x1000)
		p.release(d, 0x1000)
	}()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a release outside the pool did not panic")
			}
		}()
		p.release(0x1000, 0x1000)
	}()
}

// Random allocations and releases never hand out overlapping ranges, stay
// aligned and in the pool, and merge back into one free range.
func TestPoolRandom(t *testing.T) {
	const base, size = 1 << 40, 1 << 30
	p := newPool(base, size)
	r := rand.New(rand.NewPCG(1, 2))
	var held []span
	for range 5000 {
		if len(held) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(held))
			p.release(held[i].addr, held[i].size)
			held = slices.Delete(held, i, i+1)
			continue
		}
		n := uint64(r.IntN(64)+1) << 12
		align := uint64(1) << (12 + r.IntN(10))
		a, ok := p.alloc(n, align)
		if !ok {
			continue
		}
		s := span{a, n}
		if a%align != 0 || a < base || s.end() > base+size {
			t.Fatalf("alloc(0x%x, 0x%x) = 0x%x", n, align, a)
		}
		for _, h := range held {
			if h.overlaps(s) {
				t.Fatalf("[0x%x, 0x%x) overlaps [0x%x, 0x%x)", s.addr, s.end(), h.addr, h.end())
			}
		}
		held = append(held, s)
	}
	for _, h := range held {
		p.release(h.addr, h.size)
	}
	if len(p.free) != 1 || p.free[0] != (span{base, size}) {
		t.Errorf("after releasing everything: %d free ranges", len(p.free))
	}
}

func TestSpanSet(t *testing.T) {
	var s spanSet
	s.add(span{0x1000, 0x2000})
	s.add(span{0x8000, 0x1000})
	for _, c := range []struct {
		s    span
		want bool
	}{
		{span{0x0, 0x1000}, false},
		{span{0x0, 0x1001}, true},
		{span{0x2fff, 0x1}, true},
		{span{0x3000, 0x5000}, false},
		{span{0x7000, 0x2000}, true},
	} {
		if got := s.overlaps(c.s); got != c.want {
			t.Errorf("overlaps(%x) = %v", c.s, got)
		}
	}
	s.remove(span{0x1000, 0x2000})
	if s.overlaps(span{0x1000, 0x1000}) {
		t.Error("a removed span still overlaps")
	}
}

func TestLayout(t *testing.T) {
	if hostBase+hostSize > hostTop || hostTop > windows || hostMin > hostSize {
		t.Error("the host-visible reservation reaches Go's heap or the windows")
	}
	if deviceBase < 1<<40 {
		t.Error("Device memory starts below the end of the windows")
	}
	if windows != 0xfe00000000 {
		t.Errorf("windows at 0x%x", windows)
	}
}

// The reservation is the kernel's: a second reservation of the same range
// fails, and a mapping over it can be taken back to a reservation.
func TestReserve(t *testing.T) {
	const size = 1 << 30
	a, n, err := reserveHost()
	if err != nil {
		t.Skipf("no reservation possible here: %v", err)
	}
	defer munmap(a, n)
	if a < hostBase || uint64(a)+n > hostTop || n != hostSize {
		t.Errorf("reservation at 0x%x", a)
	}
	if err := reserve(a, size); !errors.Is(err, unix.EEXIST) {
		t.Errorf("a second reservation: %v", err)
	}
	// Map a page in it, write it, and give it back.
	got, err := mmap(a, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS|unix.MAP_FIXED, -1, 0)
	if err != nil || got != a {
		t.Fatalf("mmap in the reservation: 0x%x %v", got, err)
	}
	*(*uint64)(ptrAt(a)) = 42
	if err := unreserveTo(a, pageSize); err != nil {
		t.Fatal(err)
	}
	if err := reserve(a, pageSize); !errors.Is(err, unix.EEXIST) {
		t.Errorf("the page is not reserved again: %v", err)
	}
}

func TestIsGPU(t *testing.T) {
	for _, c := range []struct {
		vendor uint16
		class  uint32
		want   bool
	}{
		{0x10de, 0x030200, true},  // 3D controller (H100, H200)
		{0x10de, 0x030000, true},  // VGA controller
		{0x10de, 0x030001, true},  // VGA, another interface
		{0x10de, 0x040300, false}, // its HD audio function
		{0x10de, 0x068000, false}, // NVSwitch bridge
		{0x1002, 0x030000, false}, // AMD
		{0x8086, 0x030000, false},
	} {
		if got := IsGPU(c.vendor, c.class); got != c.want {
			t.Errorf("IsGPU(0x%x, 0x%06x) = %v", c.vendor, c.class, got)
		}
	}
}

func TestPCIAddress(t *testing.T) {
	a, err := ParsePCIAddress("0000:41:00.1")
	if err != nil || a != (PCIAddress{0, 0x41, 0, 1}) || a.String() != "0000:41:00.1" {
		t.Errorf("0000:41:00.1: %v %v", a, err)
	}
	if a, err := ParsePCIAddress("10000:e1:1f.7"); err != nil || a.Domain != 0x10000 || a.String() != "10000:e1:1f.7" {
		t.Errorf("a VMD domain: %v %v", a, err)
	}
	for _, bad := range []string{"", "41:00.0", "0000:41:00", "0000:4:00.0", "0000:41:20.0", "0000:41:00.8", "zz00:41:00.0"} {
		if _, err := ParsePCIAddress(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestListGPUs(t *testing.T) {
	dir := t.TempDir()
	fn := func(name, vendor, class string) {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "vendor"), []byte(vendor+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "class"), []byte(class+"\n"), 0o644)
	}
	fn("0000:c1:00.0", "0x10de", "0x030200")
	fn("0000:c1:00.1", "0x10de", "0x040300") // audio
	fn("0000:41:00.0", "0x10de", "0x030000") // held by vfio, say: still counted
	fn("0000:00:06.0", "0x10de", "0x030200")
	fn("0001:00:00.0", "0x10de", "0x030200")
	fn("0000:00:01.0", "0x8086", "0x030000")
	fn("not-a-device", "0x10de", "0x030200")
	got, err := ListGPUs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range got {
		names = append(names, a.String())
	}
	want := []string{"0000:00:06.0", "0000:41:00.0", "0000:c1:00.0", "0001:00:00.0"}
	if !slices.Equal(names, want) {
		t.Errorf("GPUs %v, want %v", names, want)
	}
	if _, err := ListGPUs(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory listed")
	}
}

// TestReserveAroundHeap: Go may place its heap anywhere, also among the
// host-visible addresses; the reservation goes around what is mapped there,
// and shrinks where no place of hostSize is left.
func TestReserveAroundHeap(t *testing.T) {
	var blocks []span
	block := func(a, size uint64) {
		t.Helper()
		if err := reserve(uintptr(a), size); err != nil {
			t.Skipf("cannot map a stand-in for the heap at 0x%x: %v", a, err)
		}
		t.Cleanup(func() { _ = munmap(uintptr(a), size) })
		blocks = append(blocks, span{a, size})
	}
	inside := func(a uintptr, n uint64) {
		t.Helper()
		r := span{uint64(a), n}
		clear := r.addr >= hostBase && r.end() <= hostTop && n >= hostMin
		for _, b := range blocks {
			clear = clear && !r.overlaps(b)
		}
		if !clear {
			t.Fatalf("reservation of %d GiB at %d GiB, beside stand-ins for a heap at 300 to 400 and 700 to 716 GiB", n>>30, a>>30)
		}
	}
	// A heap at 300 GiB: the reservation goes around it.
	block(300<<30, 100<<30)
	a, n, err := reserveHost()
	if err != nil {
		t.Fatal(err)
	}
	inside(a, n)
	_ = munmap(a, n)
	// Another at 700 GiB: no 512 GiB place is left, 256 are.
	block(700<<30, 16<<30)
	a, n, err = reserveHost()
	if err != nil {
		t.Fatal(err)
	}
	defer munmap(a, n)
	inside(a, n)
	if n > hostSize/2 {
		t.Fatalf("reservation of %d GiB with no 512 GiB free", n>>30)
	}
}

// take removes the free addresses of a span for good, splitting the free
// spans it cuts and leaving the rest.
func TestPoolTake(t *testing.T) {
	for _, tc := range []struct {
		name string
		used []span // allocated before the take, by address
		take span
		want []span
	}{
		{"start", nil, span{0x10000, 0x1000}, []span{{0x11000, 0xff000}}},
		{"middle", nil, span{0x20000, 0x2000}, []span{{0x10000, 0x10000}, {0x22000, 0xee000}}},
		{"end", nil, span{0x10f000, 0x1000}, []span{{0x10000, 0xff000}}},
		{"whole", nil, span{0x10000, 0x100000}, nil},
		{"across a used span", []span{{0x10000, 0x2000}}, span{0x11000, 0x3000}, []span{{0x14000, 0xfc000}}},
		{"outside the pool", nil, span{0x200000, 0x1000}, []span{{0x10000, 0x100000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(0x10000, 0x100000)
			for _, u := range tc.used {
				if a, ok := p.alloc(u.size, pageSize); !ok || a != u.addr {
					t.Fatalf("alloc: 0x%x %v", a, ok)
				}
			}
			p.take(tc.take)
			if !slices.Equal(p.free, tc.want) {
				t.Errorf("free after take: %x, want %x", p.free, tc.want)
			}
			if a, ok := p.alloc(pageSize, pageSize); ok && tc.take.overlaps(span{a, pageSize}) {
				t.Errorf("alloc handed out 0x%x of the taken span", a)
			}
		})
	}
}
