package hw

import (
	"testing"

	"github.com/rig-go/rig/device"
)

func TestGpu(t *testing.T) {
	// The H200's litter counts as the RM reports them.
	g, err := NewGpu(0x900, 8, 9, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	if g.Gen != Hopper || g.ComputeClass != HopperComputeA || g.ChannelClass != HopperChannelGpfifoA ||
		g.CopyClass != HopperDmaCopyA || g.SMs() != 144 || g.Windows != DefaultWindows {
		t.Errorf("%+v", g)
	}
	if DefaultWindows.Shared%(4<<30) != 0 || DefaultWindows.Local+4<<30 != 1<<40 || WindowsBase != 1<<40-8<<30 {
		t.Errorf("windows %+v", DefaultWindows)
	}
	perTPC, total := g.LocalBytes(0x240)
	if perTPC != 0x240*32*64*2 || total != perTPC*9*8 || perTPC%0x8000 != 0 || total%0x20000 != 0 {
		t.Errorf("local memory: %#x a TPC, %#x", perTPC, total)
	}
	if p, _ := g.LocalBytes(1); p != 32*32*64*2 {
		t.Errorf("one byte a thread: %#x a TPC", p)
	}
	if _, err := NewGpu(0x750, 1, 1, 1, 1); err == nil {
		t.Error("sm_75")
	}
	if _, err := NewGpu(0x900, 0, 1, 1, 1); err == nil {
		t.Error("no GPCs")
	}
	var _ *device.Key[*Gpu] = Key
	if Key.String() != "nvdev" {
		t.Error(Key.String())
	}
	var f device.Facts
	Declare(&f)
	if f.Capability != any(Key) {
		t.Error("Declare")
	}
}
