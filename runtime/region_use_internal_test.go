package rig

import (
	"context"
	"errors"
	"testing"

	"github.com/rig-go/rig/device"
)

// regionFrees is the frees that the fake f's driver made.
func regionFrees(f *fake) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frees
}

// TestFreeDuringRegionCall frees a buffer while a driver call reads its
// region (another device's peer mapping of it, a DMA): the buffer's
// driver gives the region back only once that call returned, never
// under it, and exactly once; the call that was under way answers as
// the buffer was when it began, and later uses answer ErrFreed.
func TestFreeDuringRegionCall(t *testing.T) {
	t.Run("a peer mapping", func(t *testing.T) {
		fa := newFake()
		a, b, vb := openViewPair(t, "region-use-map", fa)
		x, err := a.Alloc(device.DeviceMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.Alloc(device.DeviceMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		before := regionFrees(fa)
		during := -1
		vb.hook = func() {
			_ = x.Free()
			during = regionFrees(fa)
		}
		s, err := NewSubmission(b, Copy(0, 0, 1, 0, 64))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Take().Submit(context.Background(), x, y); !errors.Is(err, ErrFreed) {
			t.Fatalf("a submission whose buffer was freed as it was mapped: %v, want ErrFreed", err)
		}
		if during != before {
			t.Fatalf("A's driver freed %d regions while B's driver mapped one of them", during-before)
		}
		if n := regionFrees(fa) - before; n != 1 {
			t.Fatalf("A's driver freed %d regions once the mapping returned, want the buffer's 1", n)
		}
		if m, f := vb.maps.Load(), vb.frees.Load(); m != f {
			t.Fatalf("B's driver mapped the freed buffer %d times and freed %d of the mappings", m, f)
		}
		_ = y.Free()
	})
	t.Run("a DMA", func(t *testing.T) {
		f := newFake()
		d := openFake(t, "region-use-dma", f)
		x, err := d.Alloc(device.DeviceMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		before := regionFrees(f)
		during := -1
		f.onDMA = func() {
			_ = x.Free()
			during = regionFrees(f)
		}
		if _, err := x.DMA("0000:41:00.0"); err != nil {
			t.Fatalf("a DMA under way as its buffer was freed: %v", err)
		}
		if during != before {
			t.Fatalf("the driver freed %d regions inside a DMA of one of them", during-before)
		}
		if n := regionFrees(f) - before; n != 1 {
			t.Fatalf("the driver freed %d regions once the DMA returned, want the buffer's 1", n)
		}
		if _, err := x.DMA("0000:41:00.0"); !errors.Is(err, ErrFreed) {
			t.Fatalf("a DMA of the freed buffer: %v, want ErrFreed", err)
		}
	})
}
