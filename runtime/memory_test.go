package rig_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

func TestAllocKinds(t *testing.T) {
	d := host(t, hostdev.Config{MapsHost: true})
	for _, kind := range []device.Memory{device.DeviceMemory, device.PinnedMemory, device.MappedMemory} {
		b := alloc(t, d, kind, 1001)
		if b.Len() != 1001 || b.Kind() != kind || b.Device() != d || b.Address() == 0 {
			t.Fatalf("%s buffer: len %d kind %s address %#x", kind, b.Len(), b.Kind(), b.Address())
		}
		if kind != device.DeviceMemory && len(b.Bytes()) != 1001 {
			t.Fatalf("%s memory exposes %d bytes to the host", kind, len(b.Bytes()))
		}
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		if err := b.Free(); err != nil {
			t.Fatalf("second free: %v", err)
		}
	}
	if _, err := d.Alloc(device.DeviceMemory, 0); err == nil || !strings.Contains(err.Error(), "at least one byte") {
		t.Fatalf("alloc of 0 bytes: %v", err)
	}
}

func TestMapHost(t *testing.T) {
	d := host(t, hostdev.Config{MapsHost: true})
	mem := make([]byte, 10000)
	x := mem[123:5123]
	for i := range x {
		x[i] = 1
	}
	b, err := d.MapHost(x)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != len(x) || &b.Bytes()[0] != &x[0] {
		t.Fatal("MapHost does not expose the caller's bytes")
	}
	wait(t, fill(t, d, b, 9, device.Copy))
	allBytes(t, b, 9)
	if mem[122] != 0 || mem[5123] != 0 {
		t.Fatal("a fill of the borrowed bytes wrote outside them")
	}
	if _, err := host(t, hostdev.Config{}).MapHost(x); !errors.Is(err, device.ErrNever) {
		t.Fatalf("MapHost where the device maps no host memory: %v", err)
	}
}

// TestReclamation fills a budget, fails with the bytes lacked, and recovers
// after a Free, after the garbage collector, and after in-flight work.
func TestReclamation(t *testing.T) {
	const budget, chunk = 1 << 20, 256 << 10
	d := host(t, hostdev.Config{Budget: budget})
	var held []*rig.Buffer
	for i := 0; i < budget/chunk; i++ {
		held = append(held, alloc(t, d, device.DeviceMemory, chunk))
	}
	_, err := d.Alloc(device.DeviceMemory, chunk)
	var oom *rig.OutOfMemoryError
	if !errors.Is(err, rig.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Lacking <= 0 || !strings.Contains(err.Error(), "bytes lacking") {
		t.Fatalf("alloc past the budget: %v", err)
	}

	t.Run("after a free", func(t *testing.T) {
		_ = held[0].Free()
		held[0] = alloc(t, d, device.DeviceMemory, chunk)
	})
	t.Run("after the garbage collector", func(t *testing.T) {
		// Nothing reaches the buffer: reclamation's collection round
		// runs its cleanup, which gives the memory back.
		held[1] = nil
		held[1] = alloc(t, d, device.DeviceMemory, chunk)
	})
	t.Run("after in-flight work", func(t *testing.T) {
		s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8, rig.Uses(0, rig.Writes)))
		p, err := sleepRun(s, 50*time.Millisecond).Submit(context.Background(), held[2])
		if err != nil {
			t.Fatal(err)
		}
		_ = held[2].Free()
		if p.Reached() {
			t.Skip("the launch ended before the allocation")
		}
		held[2] = alloc(t, d, device.DeviceMemory, chunk)
		if !p.Reached() {
			t.Fatal("the allocation succeeded before the work that held the memory ended")
		}
	})
	runtime.KeepAlive(held)
}

func TestFreeWaitsForUse(t *testing.T) {
	d := host(t, hostdev.Config{})
	b := alloc(t, d, device.DeviceMemory, 1<<16)
	s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8, rig.Uses(0, rig.Reads)))
	p, err := sleepRun(s, 30*time.Millisecond).Submit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	used, _ := d.Budget()
	_ = b.Free()
	if after, _ := d.Budget(); after != used && !p.Reached() {
		t.Fatal("the buffer went back while work that reads it ran")
	}
	if _, err := s.Take().Submit(context.Background(), b); !errors.Is(err, rig.ErrFreed) {
		t.Fatalf("submit with a freed buffer: %v", err)
	}
	wait(t, p)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if u, _ := d.Budget(); u < used {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the buffer did not go back once its work was reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPlacedImageOnHost(t *testing.T) {
	d := host(t, hostdev.Config{})
	img, err := d.LoadImage(hostdev.PlacedImageOf(4096, "twice", "empty"))
	if err != nil {
		t.Fatal(err)
	}
	if used, _ := d.Budget(); used < 4096 {
		t.Fatalf("a placed image counts %d bytes", used)
	}
	f, err := img.Resolve("twice")
	if err != nil || f.Params() != 8 || f.Name() != "twice" {
		t.Fatalf("resolve: %v %v", f, err)
	}
	if _, err := img.Resolve("nothing"); !errors.Is(err, rig.ErrNoFunction) {
		t.Fatalf("resolve of an absent function: %v", err)
	}
	if err := img.Prepare("empty"); err != nil {
		t.Fatal(err)
	}
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	if _, err := img.Resolve("empty"); !errors.Is(err, rig.ErrFreed) {
		t.Fatalf("resolve after unload: %v", err)
	}
	if used, _ := d.Budget(); used != 0 {
		t.Fatalf("%d bytes counted after the unload", used)
	}
}

func TestDMAOnHost(t *testing.T) {
	d := host(t, hostdev.Config{})
	b := alloc(t, d, device.DeviceMemory, 4096)
	if _, err := b.DMA("0000:41:00.0"); err == nil || !strings.Contains(err.Error(), "0000:41:00.0") {
		t.Fatalf("dma on the host driver: %v", err)
	}
	if d.Err() != nil {
		t.Fatalf("a refused dma lost the device: %v", d.Err())
	}
}

// TestDMAOfMapHost: DMA of a MapHost buffer, which only memory Alloc made
// may answer, returns an error matching ErrInvalid that names the PCI
// function, and the device stays usable.
func TestDMAOfMapHost(t *testing.T) {
	d := host(t, hostdev.Config{MapsHost: true})
	b, err := d.MapHost(make([]byte, 100))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if _, err := b.DMA("0000:41:00.0"); !errors.Is(err, rig.ErrInvalid) || !strings.Contains(err.Error(), "0000:41:00.0") {
		t.Fatalf("dma of a MapHost buffer: %v, want ErrInvalid naming the function", err)
	}
	if d.Err() != nil {
		t.Fatalf("a refused dma lost the device: %v", d.Err())
	}
}

// readAll is testutil's ReadSum.
var readAll = testutil.ReadSum

// TestBytesOutlivesFree reads, after Free, the slice Bytes returned before
// it: of memory the device wrote, and of memory written through the slice.
func TestBytesOutlivesFree(t *testing.T) {
	const n = 3 << 12
	for _, kind := range []device.Memory{device.PinnedMemory, device.MappedMemory} {
		t.Run(kind.String(), func(t *testing.T) {
			d := host(t, hostdev.Config{})
			b := alloc(t, d, kind, n)
			mem := b.Bytes()
			wait(t, fill(t, d, b, 7, device.Copy))
			if err := b.Free(); err != nil {
				t.Fatal(err)
			}
			waitBudget(t, d, 0)
			if sum := readAll(t, mem); sum != 7*n {
				t.Fatalf("the slice reads %d after Free, want %d", sum, 7*n)
			}
			mem[0] = 1 // a write after Free lands in memory no one else holds
			if after := b.Bytes(); len(after) != 0 && readAll(t, after) != 7*n-6 {
				t.Fatal("Bytes after Free returns other memory than before")
			}
		})
	}
}

// TestBytesOutlivesCollection drops the Buffer while its slice is held:
// the collector frees the buffer, and new buffers must not take the memory
// the slice holds.
func TestBytesOutlivesCollection(t *testing.T) {
	const n = 1 << 16
	d := host(t, hostdev.Config{})
	mem := alloc(t, d, device.PinnedMemory, n).Bytes()
	for i := range mem {
		mem[i] = 0xaa
	}
	for range 4 {
		runtime.GC()
	}
	waitBudget(t, d, 0)
	var held []*rig.Buffer
	for range 8 {
		b := alloc(t, d, device.PinnedMemory, n)
		wait(t, fill(t, d, b, 0x55, device.Copy))
		for i := range b.Bytes() {
			b.Bytes()[i] = 0x55
		}
		held = append(held, b)
	}
	if sum := readAll(t, mem); sum != 0xaa*n {
		t.Fatalf("a slice of a collected buffer reads %d, want %d: it aliases a new buffer", sum, 0xaa*n)
	}
	runtime.KeepAlive(held)
}

// waitBudget waits until d's budget counts want bytes, which it does once
// the frees deferred to the supervisor, and the cleanups of the buffers
// nothing reaches, ran.
func waitBudget(t *testing.T, d *rig.Device, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		used, _ := d.Budget()
		if used == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the budget counts %d bytes, want %d", used, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAllocHuge asks for more than any budget holds, and for lengths whose
// rounding overflows: each returns an error matching ErrOutOfMemory, at
// once, and the budget never counts a byte of them.
func TestAllocHuge(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget int64
	}{{"with a budget", 1 << 20}, {"default budget", 0}} {
		t.Run(c.name, func(t *testing.T) {
			d := host(t, hostdev.Config{Budget: c.budget})
			stop := make(chan struct{})
			negative := make(chan int64, 1)
			go func() {
				defer close(negative)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if used, _ := d.Budget(); used != 0 {
						negative <- used
						return
					}
				}
			}()
			for _, n := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt - 3, math.MaxInt - 4, math.MaxInt64 / 2, 1 << 50} {
				rounds := d.Stats().ReclaimRounds
				_, err := d.Alloc(device.PinnedMemory, n)
				var oom *rig.OutOfMemoryError
				if !errors.Is(err, rig.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Lacking <= 0 {
					t.Errorf("alloc of %d bytes: %v", n, err)
				} else if strings.Contains(err.Error(), "rounds of reclamation") {
					t.Errorf("alloc of %d bytes, refused with no round run: the error says %q", n, err)
				}
				// At once: no round of reclamation ran for it.
				if r := d.Stats().ReclaimRounds - rounds; r != 0 {
					t.Errorf("alloc of %d bytes ran %d rounds of reclamation before it failed", n, r)
				}
			}
			close(stop)
			if used, ok := <-negative; ok {
				t.Fatalf("the budget counted %d bytes during huge allocations", used)
			}
			b := alloc(t, d, device.PinnedMemory, 4096)
			_ = b.Free()
		})
	}
}

// The budget counts what the driver takes: on the host driver, a page for
// each small buffer. A budget of 16 pages holds 16 buffers of 4 bytes, says
// so, and refuses the 17th with the page it lacks.
func TestBudgetCountsWhatTheDriverTakes(t *testing.T) {
	const page = 4096
	d := host(t, hostdev.Config{Budget: 16 * page})
	var keep []*rig.Buffer
	for i := range 16 {
		b, err := d.Alloc(device.PinnedMemory, 4)
		if err != nil {
			used, limit := d.Budget()
			t.Fatalf("alloc %d of 4 bytes: %v (Budget %d of %d)", i, err, used, limit)
		}
		keep = append(keep, b)
	}
	if used, _ := d.Budget(); used != 16*page {
		t.Errorf("16 buffers of 4 bytes count %d bytes, want %d", used, 16*page)
	}
	if b := d.Stats().Bytes; b[device.PinnedMemory] != 16*page {
		t.Errorf("Stats counts %d bytes of Pinned memory, want %d", b[device.PinnedMemory], 16*page)
	}
	_, err := d.Alloc(device.PinnedMemory, 4)
	var oom *rig.OutOfMemoryError
	if !errors.As(err, &oom) || oom.Lacking != page {
		t.Fatalf("the 17th buffer: %v, want an OutOfMemoryError lacking %d bytes", err, page)
	}
	for _, b := range keep {
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if used, _ := d.Budget(); used != 0 {
		t.Errorf("after the frees the budget counts %d bytes", used)
	}
}

// TestSubmitNamesFreedBuffer: a submission given a freed buffer returns an
// error matching ErrFreed that names the buffer's index and device.
func TestSubmitNamesFreedBuffer(t *testing.T) {
	d := host(t, hostdev.Config{})
	a := alloc(t, d, device.DeviceMemory, 4096)
	b := alloc(t, d, device.DeviceMemory, 4096)
	s := sub(t, d, rig.Copy(0, 0, 1, 0, 4096))
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Take().Submit(context.Background(), a, b)
	if !errors.Is(err, rig.ErrFreed) {
		t.Fatalf("a copy into a freed buffer: %v, want ErrFreed", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "buffer 1 ") || !strings.Contains(msg, d.Name()) {
		t.Errorf("a copy into buffer 1, freed: %q names neither its index nor its device", msg)
	}
}
