package hostdev

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"golang.org/x/sys/unix"
)

func TestFacts(t *testing.T) {
	d, w := newDev(t, Config{Name: "h1", Hang: 5 * time.Millisecond, MapsHost: true, FaultDomain: "hosts"}, 3)
	f := d.Facts()
	if f.Arch != "host" || f.Budget != 1<<30 || len(f.Queues) != 2 || f.Queues[0] != "COMPUTE:0" || f.Queues[1] != "COPY:0" ||
		f.CopyEngine != 1 || f.Completion != device.Store || !f.Waits.Has(device.WaitStores|device.WaitHosts) || f.MayBlock ||
		f.HangMs != 5 || !f.MapsHost || f.HostAddresses || f.Alignment != pageSize || f.Word != w || f.OwnWord != nil ||
		f.FaultDomain != "hosts" || f.Capability != Key {
		t.Fatalf("facts %+v", f)
	}
	c, ok := d.Capability().(*Caps)
	if !ok || c.Name != "h1" || c.Workers < 1 {
		t.Fatalf("capability %#v", d.Capability())
	}
	if o := Default(); o.Name != "host" {
		t.Fatalf("default opener named %q", o.Name)
	}
	if _, err := Open(Config{}).Make(nil); err == nil {
		t.Fatal("make with no word")
	}
	if _, err := Open(Config{Ring: -1}).Make(new(uint64)); err == nil {
		t.Fatal("make with a negative ring")
	}
}

func TestOwnWord(t *testing.T) {
	d, w := newDev(t, Config{OwnWord: true}, 9)
	f := d.Facts()
	if f.Word != nil || f.OwnWord == nil {
		t.Fatalf("facts %+v", f)
	}
	if d.Signaled() != 9 {
		t.Fatalf("own word starts at %d, want 9", d.Signaled())
	}
	v := submit(t, d, one(entry(t, d, "empty"), nil))
	if err := reach(t, d, v); err != nil || d.Signaled() != 10 || *w != 9 {
		t.Fatalf("own word %d, given word %d: %v", d.Signaled(), *w, err)
	}
	d.Stop("")
	if err := d.Free(f.OwnWord); err != nil {
		t.Fatal(err)
	}
}

func TestMemory(t *testing.T) {
	d, _ := newDev(t, Config{Budget: 64 << 10}, 0)
	for _, tc := range []struct {
		m    device.Memory
		host bool
	}{
		{device.DeviceMemory, false},
		{device.PinnedMemory, true},
		{device.MappedMemory, true},
	} {
		r, err := d.Alloc(tc.m, 100)
		if err != nil {
			t.Fatal(err)
		}
		l := d.Locate(r)
		if l.Address == 0 || l.Address != l.Handle || l.Address%uint64(pageSize) != 0 || (l.Host != 0) != tc.host ||
			(tc.host && uint64(l.Host) != l.Address) {
			t.Fatalf("%v located at %+v", tc.m, l)
		}
		if err := d.Free(r); err != nil {
			t.Fatal(err)
		}
		if err := d.Free(r); err == nil {
			t.Fatal("a second free of a region")
		}
	}
	for _, n := range []int{0, -4, 3} {
		if _, err := d.Alloc(device.DeviceMemory, n); err == nil || errors.Is(err, device.ErrNoMemory) {
			t.Fatalf("alloc of %d answered %v", n, err)
		}
	}
	if _, err := d.Alloc(7, 4); err == nil {
		t.Fatal("alloc of unknown memory")
	}
	// The budget.
	var rs []device.Region
	for range 16 {
		r, err := d.Alloc(device.DeviceMemory, 4)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if _, err := d.Alloc(device.DeviceMemory, 4); !errors.Is(err, device.ErrNoMemory) {
		t.Fatalf("alloc beyond the budget answered %v", err)
	}
	if _, err := d.Alloc(device.DeviceMemory, 1<<40); !errors.Is(err, device.ErrNoMemory) {
		t.Fatalf("alloc beyond the budget answered %v", err)
	}
	d.Free(rs[0])
	r, err := d.Alloc(device.PinnedMemory, 4)
	if err != nil {
		t.Fatal(err)
	}
	rs[0] = r
	// Free works after Stop.
	d.Stop("")
	for _, r := range rs {
		if err := d.Free(r); err != nil {
			t.Fatal(err)
		}
	}
	if d.used.Load() != 0 {
		t.Fatalf("%d bytes of the budget taken after every free", d.used.Load())
	}
	// A region of another device.
	o, _ := newDev(t, Config{}, 0)
	ro, _ := alloc(t, o, 4)
	if err := d.Free(ro); err == nil || !strings.Contains(err.Error(), "another device") {
		t.Fatalf("free of another device's region answered %v", err)
	}
	if err := d.Free(42); err == nil {
		t.Fatal("free of a foreign region")
	}
}

func TestMapHost(t *testing.T) {
	d, _ := newDev(t, Config{MapsHost: true}, 0)
	no, _ := newDev(t, Config{}, 0)
	mem, err := unix.Mmap(-1, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	p := uintptr(unsafe.Pointer(&mem[0]))
	if _, err := no.MapHost(p, 10); !errors.Is(err, device.ErrNever) {
		t.Fatalf("map_host without MapsHost answered %v", err)
	}
	if _, err := d.MapHost(p+1, 10); err == nil {
		t.Fatal("map_host off a page")
	}
	if _, err := d.MapHost(p, 0); err == nil {
		t.Fatal("map_host of no bytes")
	}
	r, err := d.MapHost(p, pageSize+1)
	if err != nil {
		t.Fatal(err)
	}
	if l := d.Locate(r); l.Address != uint64(p) || l.Host != p {
		t.Fatalf("located at %+v", l)
	}
	// Work reaches the caller's pages, whole, with no copy.
	src, sm := alloc(t, d, 2*pageSize)
	for i := range sm {
		sm[i] = byte(i)
	}
	v := submit(t, d, device.Part{Kind: device.CopyRows, Queue: device.Copy, Src: src, Dst: r, RowBytes: uint64(2 * pageSize), Rows: 1})
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
	if mem[2*pageSize-1] != byte(2*pageSize-1) {
		t.Fatal("the copy did not reach the caller's pages")
	}
	if err := d.Free(r); err != nil {
		t.Fatal(err)
	}
	mem[0] = 1 // the pages stay the caller's
}

func TestMapPeer(t *testing.T) {
	a, _ := newDev(t, Config{}, 0)
	b, _ := newDev(t, Config{}, 0)
	ra, _ := alloc(t, a, 4096)
	v, err := b.MapPeer(a, ra)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.MapPeer(a, v); err == nil {
		t.Fatal("map_peer of b's own view as a region of a")
	}
	if _, err := b.MapPeer(fakeDriver{}, ra); !errors.Is(err, device.ErrNever) {
		t.Fatalf("map_peer of another driver answered %v", err)
	}
	if b.Peer(fakeDriver{}) {
		t.Fatal("peer of another driver")
	}
	// The view ends with its region.
	a.Free(ra)
	if b.find(addr(ra), 4) != nil {
		t.Fatal("the view outlived its region")
	}
	if err := b.Free(v); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DMA(ra, "0000:41:00.0"); err == nil || !strings.Contains(err.Error(), "no PCI function") || !strings.Contains(err.Error(), "0000:41:00.0") {
		t.Fatalf("dma answered %v", err)
	}
}

type fakeDriver struct{ device.Driver }

func TestImages(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	for _, tc := range []struct {
		name string
		b    string
		why  string
	}{
		{"empty", "", "not a hostdev image"},
		{"magic", "rig-hostdev image 2\n", "not a hostdev image"},
		{"unknown directive", magic + "\nkernal twice\n", "line 2: unknown directive"},
		{"unregistered", magic + "\nkernel nosuch\n", "no Register call"},
		{"twice", magic + "\nkernel twice\nkernel twice 8\n", "line 3: kernel \"twice\" named twice"},
		{"params", magic + "\nkernel twice x\n", "parameter bytes"},
		{"params big", magic + "\nkernel twice 32765\n", "parameter bytes"},
		{"params negative", magic + "\nkernel twice -1\n", "parameter bytes"},
		{"words", magic + "\nkernel twice 8 9\n", "have 4 words"},
		{"name", magic + "\nkernel 9lives\n", "starting with no digit"},
		{"place", magic + "\nplace 0\n", "place"},
		{"place twice", magic + "\nplace 10\nplace 10\n", "place stated twice"},
		{"place words", magic + "\nplace\n", "place N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Image([]byte(tc.b))
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("image answered %v, want an error naming %q", err, tc.why)
			}
		})
	}
	code, err := d.Image([]byte(magic + "\r\n# a comment\n\nkernel twice 16\r\nkernel empty\nkernel fault\n"))
	if err != nil || code.Loaded == nil {
		t.Fatal(code, err)
	}
	for _, tc := range []struct {
		name   string
		params int
	}{{"twice", 16}, {"empty", 0}, {"fault", 0}} {
		e, err := d.Entry(code.Loaded, tc.name)
		if err != nil || e.Name != tc.name || e.Params != tc.params || e.Threads != 1024 || e.Shared != 48<<10 {
			t.Fatalf("entry %q: %+v, %v", tc.name, e, err)
		}
		if again, _ := d.Entry(code.Loaded, tc.name); again != e {
			t.Fatal("a second entry made a new one")
		}
		if err := d.Prepare(code.Loaded, tc.name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Entry(code.Loaded, "sleep"); !errors.Is(err, device.ErrAbsent) {
		t.Fatalf("entry of a kernel the image lacks answered %v", err)
	}
	o, _ := newDev(t, Config{}, 0)
	if _, err := o.Entry(code.Loaded, "twice"); err == nil {
		t.Fatal("entry of another device's image")
	}
	if err := d.Unload(code.Loaded); err != nil {
		t.Fatal(err)
	}
	if err := d.Unload(code.Loaded); err == nil {
		t.Fatal("a second unload")
	}
	if _, err := d.Entry(code.Loaded, "twice"); err == nil {
		t.Fatal("entry of an unloaded image")
	}
}

func TestPlace(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	b := PlacedImageOf(4096, "twice", "empty")
	code, err := d.Image(b)
	if err != nil || code.Loaded != nil || code.Place != 4096 || code.Lay == nil {
		t.Fatal(code, err)
	}
	small, _ := d.Alloc(device.DeviceMemory, 64)
	if _, err := code.Lay(small); err == nil {
		t.Fatal("lay into a region too small")
	}
	r, err := d.Alloc(device.DeviceMemory, 4096)
	if err != nil {
		t.Fatal(err)
	}
	img, err := code.Lay(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.(*region).bytes(0, uint64(len(b)))) != string(b) {
		t.Fatal("lay did not place the image")
	}
	e, err := d.Entry(img, "empty")
	if err != nil || e.Code != addr(r.(*region))+64 {
		t.Fatalf("entry %+v, %v", e, err)
	}
	v := submit(t, d, one(e, nil))
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
	d.Unload(img)
	d.Free(r)
	d.Free(small)
}

func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
		why  string
	}{
		{"duplicate", func() { Register("twice", func(*Ctx) {}) }, `kernel "twice" is already registered`},
		{"bad name", func() { Register("a b", func(*Ctx) {}) }, "kernel name"},
		{"nil", func() { Register("test.nil", nil) }, "nil function"},
		{"params", func() { RegisterParams("test.big", MaxParams+1, func(*Ctx) {}) }, "parameter bytes"},
		{"imageof", func() { ImageOf("twice:x") }, "parameter bytes"},
		{"place", func() { PlacedImageOf(0) }, "place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), tc.why) {
					t.Fatalf("panicked with %v, want a panic naming %q", v, tc.why)
				}
			}()
			tc.f()
		})
	}
	if lookup("test.registered") == nil { // a test run with -count registers once
		Register("test.registered", func(*Ctx) {})
	}
	found := false
	for _, n := range Registered() {
		found = found || n == "test.registered"
	}
	if !found {
		t.Fatal("Registered lacks a registered kernel")
	}
}

func FuzzManifest(f *testing.F) {
	f.Add(ImageOf("twice:8", "empty"))
	f.Add(PlacedImageOf(100, "hang"))
	f.Add([]byte(magic + "\nkernel a 1\nplace 3\n# x\n\n"))
	f.Add([]byte(magic + "\r\nkernel\tb\r\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifest(b)
		if err != nil {
			if m != nil {
				t.Fatal("a refusal with a manifest")
			}
			if !strings.HasPrefix(err.Error(), "manifest line ") && !strings.HasPrefix(err.Error(), "not a hostdev image") && !strings.HasPrefix(err.Error(), "image of ") {
				t.Fatalf("error %q names no line", err)
			}
			return
		}
		// What parses writes out and parses back the same.
		specs := make([]string, len(m.kernels))
		seen := map[string]bool{}
		for i, k := range m.kernels {
			if checkName(k.name) != nil || seen[k.name] || k.params < -1 || k.params > MaxParams {
				t.Fatalf("parsed a bad kernel %+v", k)
			}
			seen[k.name] = true
			specs[i] = k.name
			if k.params >= 0 {
				specs[i] = fmt.Sprintf("%s:%d", k.name, k.params)
			}
		}
		out := imageOf(m.place, specs)
		m2, err := parseManifest(out)
		if err != nil {
			t.Fatalf("%q does not parse back: %v", out, err)
		}
		if m2.place != m.place || len(m2.kernels) != len(m.kernels) {
			t.Fatalf("%q parses back as %+v, want %+v", out, m2, m)
		}
		for i := range m.kernels {
			if m.kernels[i] != m2.kernels[i] {
				t.Fatalf("kernel %d parses back as %+v, want %+v", i, m2.kernels[i], m.kernels[i])
			}
		}
	})
}

// TestConcurrentCalls runs the calls any goroutine may make beside a
// submitting goroutine and the supervisor's Sleep, for the race detector.
func TestConcurrentCalls(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	e := entry(t, d, "test.index")
	r, _ := alloc(t, d, 4096)
	stop := make(chan struct{})
	done := make(chan struct{}, 3)
	go func() { // memory
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			x, err := d.Alloc(device.PinnedMemory, 64)
			if err != nil {
				t.Error(err)
				return
			}
			d.Locate(x)
			d.Free(x)
		}
	}()
	go func() { // the supervisor
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := d.Sleep(atomic.LoadUint64(d.word), time.Millisecond); err != nil {
				t.Error(err)
				return
			}
			d.Settle(nil)
		}
	}()
	go func() { // images
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := d.Image(ImageOf("empty"))
			if err != nil {
				t.Error(err)
				return
			}
			d.Entry(c.Loaded, "empty")
			d.Unload(c.Loaded)
		}
	}()
	var v uint64
	for range 2000 {
		v = submitS(t, d, &device.Submission{Timed: true, Parts: []device.Part{launch(e, [3]uint32{4, 1, 1}, [3]uint32{4, 1, 1}, p64(addr(r)))}})
	}
	if err := reach(t, d, v); err != nil {
		t.Fatal(err)
	}
	close(stop)
	for range 3 {
		<-done
	}
}

// TestFindOverlapping finds addresses in regions that overlap: an
// allocation, a MapHost mapping of its first page and a view of another
// device's region.
func TestFindOverlapping(t *testing.T) {
	d, _ := newDev(t, Config{MapsHost: true}, 0)
	o, _ := newDev(t, Config{}, 0)
	a, _ := alloc(t, d, 3*pageSize)
	m, err := d.MapHost(a.addr, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	ro, _ := alloc(t, o, pageSize)
	v, err := d.MapPeer(o, ro)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		n    int
		want device.Region
	}{
		{addr(a), 8, m},
		{addr(a), pageSize + 8, a},
		{addr(a) + 2*uint64(pageSize), pageSize, a},
		{addr(a) + 3*uint64(pageSize) - 4, 8, nil},
		{addr(ro), pageSize, v},
		{addr(ro) - 1, 2, nil},
		{0, 0, nil},
	} {
		got := d.find(tc.addr, tc.n)
		if (got == nil) != (tc.want == nil) || (got != nil && got != tc.want.(*region)) {
			t.Errorf("find(%#x, %d) = %p, want %v", tc.addr, tc.n, got, tc.want)
		}
	}
	d.Free(m)
	if got := d.find(addr(a), 8); got != a {
		t.Fatalf("find after the mapping's free = %p, want the allocation", got)
	}
}

// TestMapHostGoMemory maps the pages that hold a Go slice, which hold other
// Go allocations too, and fills the slice's bytes through them, with the
// garbage collector running.
func TestMapHostGoMemory(t *testing.T) {
	d, _ := newDev(t, Config{MapsHost: true}, 0)
	for range 20 {
		mem := make([]byte, 10000)
		x := mem[123:5123]
		at := uintptr(unsafe.Pointer(&x[0]))
		p := at &^ uintptr(pageSize-1)
		r, err := d.MapHost(p, int(at-p)+len(x))
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		v := submit(t, d, device.Part{Kind: device.CopyRows, Queue: device.Copy, Dst: r, DstOffset: uint64(at - p), RowBytes: uint64(len(x)), Rows: 1, Filling: true, Byte: 9})
		if err := reach(t, d, v); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		for i := range mem {
			if want := byte(0); i >= 123 && i < 5123 && mem[i] != 9 || (i < 123 || i >= 5123) && mem[i] != want {
				t.Fatalf("byte %d of the slice is %d", i, mem[i])
			}
		}
		if err := d.Free(r); err != nil {
			t.Fatal(err)
		}
	}
}
