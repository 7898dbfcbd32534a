package nvdev

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/hostram"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// readSum and settle are testutil's ReadSum and Settle.
var (
	readSum = testutil.ReadSum
	settle  = testutil.Settle
)

// heldPinned reports whether the driver holds Go memory for Pinned memory
// whose host view starts at p.
func heldPinned(p *byte) bool {
	held := false
	goPinned.Range(func(_, v any) bool {
		if b := v.([]byte); unsafe.SliceData(b) == p {
			held = true
		}
		return !held
	})
	return held
}

// TestPinnedIsGoMemory checks on the fake that Pinned memory is Go memory
// the path maps as it maps the caller's (MapHost), which the driver holds
// until Free and then leaves to the slices that hold it.
func TestPinnedIsGoMemory(t *testing.T) {
	f := newFake()
	dev, err := rig.Open(bg, f.opener(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = dev.Close()
		<-dev.Done()
	}()
	used, _ := dev.Budget()
	b, err := dev.Alloc(device.PinnedMemory, 5000)
	if err != nil {
		t.Fatal(err)
	}
	mem := b.Bytes()
	if len(mem) != 5000 || uintptr(unsafe.Pointer(&mem[0]))%uintptr(pageSize) != 0 {
		t.Fatalf("Pinned memory of %d bytes at %p", len(mem), &mem[0])
	}
	if !heldPinned(&mem[0]) {
		t.Fatal("the driver holds no Go memory for the Pinned memory")
	}
	f.mu.Lock()
	borrowed := 0
	for _, fm := range f.mems {
		if fm.m.Borrowed && fm.host == uintptr(unsafe.Pointer(&mem[0])) {
			borrowed++
		}
	}
	f.mu.Unlock()
	if borrowed != 1 {
		t.Fatalf("%d host mappings of the Pinned memory's pages, want 1", borrowed)
	}
	for i := range mem {
		mem[i] = 3
	}
	_ = b.Free()
	settle(t, dev, used)
	if heldPinned(&mem[0]) {
		t.Fatal("the driver holds the Go memory of freed Pinned memory")
	}
	if sum := readSum(t, mem); sum != 3*5000 {
		t.Fatalf("the slice reads %d after Free, want %d", sum, 3*5000)
	}
}

// TestGPUBytesOutliveFree runs work through Pinned and Mapped memory,
// frees it and collects garbage, and reads the slices that Bytes returned:
// Pinned memory keeps the last bytes the GPU wrote, Mapped memory reads
// zeros, and neither faults nor aliases the memory allocated after.
func TestGPUBytesOutliveFree(t *testing.T) {
	dev := openRig(t, Config{})
	ctx := ctxFor(t, 60*time.Second)
	img, err := dev.LoadImage(cubin(t))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := img.Resolve("twice")
	if err != nil {
		t.Fatal(err)
	}
	do := func(run *rig.Run, bufs ...*rig.Buffer) {
		t.Helper()
		p, err := run.Submit(ctx, bufs...)
		if err == nil {
			err = p.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sub := func(parts ...rig.Part) *rig.Submission {
		t.Helper()
		s, err := rig.NewSubmission(dev, parts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	alloc := func(k device.Memory, n int) *rig.Buffer {
		t.Helper()
		b, err := dev.Alloc(k, n)
		if err != nil {
			t.Fatalf("alloc of %d bytes of %v memory: %v", n, k, err)
		}
		return b
	}
	used, _ := dev.Budget()
	const n = 1 << 16
	for _, k := range []device.Memory{device.PinnedMemory, device.MappedMemory} {
		x := alloc(device.DeviceMemory, 4*n)
		h := alloc(k, 4*n)
		hb := h.Bytes()
		for i := range n {
			binary.LittleEndian.PutUint32(hb[4*i:], math.Float32bits(float32(i)))
		}
		do(sub(rig.Copy(0, 0, 1, 0, 4*n)).Take(), h, x)
		run := sub(rig.Launch(twice, 8, rig.Write(0, 0))).Take()
		run.Groups(0, n/256, 1, 1)
		run.Threads(0, 256, 1, 1)
		do(run, x)
		do(sub(rig.Copy(0, 0, 1, 0, 4*n)).Take(), x, h)
		for i := range n {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:])); got != 2*float32(i) {
				t.Fatalf("%v: x[%d] = %v, want %v", k, i, got, 2*float32(i))
			}
		}
		_ = h.Free()
		_ = x.Free()
		old := alloc(k, n).Bytes()
		for i := range old {
			old[i] = 0xaa
		}
		settle(t, dev, used)
		var held []*rig.Buffer
		fill := sub(rig.FillBytes(0, 0, n, 0x55))
		for range 8 {
			b := alloc(k, n)
			do(fill.Take(), b)
			held = append(held, b)
		}
		sum, oldSum := readSum(t, hb), readSum(t, old)
		switch k {
		case device.PinnedMemory:
			for i := range n {
				if got := math.Float32frombits(binary.LittleEndian.Uint32(hb[4*i:])); got != 2*float32(i) {
					t.Fatalf("Pinned after Free and collection: x[%d] = %v, want %v", i, got, 2*float32(i))
				}
			}
			if oldSum != 0xaa*n {
				t.Fatalf("the slice of a collected Pinned buffer reads %d, want %d: it aliases other memory", oldSum, 0xaa*n)
			}
		case device.MappedMemory:
			// The collector may have freed old's buffer before the
			// writes of 0xaa, which then landed in the zeroed memory.
			if sum != 0 || (oldSum != 0 && oldSum != 0xaa*n) {
				t.Fatalf("slices of freed Mapped memory read sums %d and %d, want zeros", sum, oldSum)
			}
		}
		for _, b := range held {
			_ = b.Free()
		}
		settle(t, dev, used)
	}
	noCUDA(t)
}

// TestPinnedPastHostRAM asks the driver for more Pinned memory than the
// host has: the answer is ErrNoMemory, where Go's heap would end the
// process, and the device stays working.
func TestPinnedPastHostRAM(t *testing.T) {
	ram := hostram.Bytes()
	if ram == 0 || ram >= math.MaxInt/2 {
		t.Skipf("the host's memory reads %d bytes", ram)
	}
	f := newFake()
	w := new(uint64)
	drv, err := f.opener(Config{}).Make(w)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = drv.Stop("") }()
	n := int(ram) + 1<<20
	if _, err := drv.Alloc(device.PinnedMemory, n); !errors.Is(err, device.ErrNoMemory) || !strings.Contains(err.Error(), "host") {
		t.Fatalf("an alloc of %d bytes of Pinned memory on a host of %d answered %v", n, ram, err)
	}
	r, err := drv.Alloc(device.PinnedMemory, 4096)
	if err != nil {
		t.Fatalf("an alloc after the refusal: %v", err)
	}
	if err := drv.Free(r); err != nil {
		t.Fatal(err)
	}
}
