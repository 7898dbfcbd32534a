package hw

import (
	"errors"
	"testing"
)

func TestGenerationLookup(t *testing.T) {
	for _, tc := range []struct {
		sm   int
		rm   uint32
		arch string
		g    *Generation
	}{{80, 0x800, "sm_80", Ampere}, {86, 0x806, "sm_86", AmpereB}, {89, 0x809, "sm_89", Ada}, {90, 0x900, "sm_90", Hopper}} {
		g1, err1 := ForSM(tc.sm)
		g2, err2 := ForRM(tc.rm)
		g3, err3 := ForArch(tc.arch)
		if g1 != tc.g || g2 != tc.g || g3 != tc.g || err1 != nil || err2 != nil || err3 != nil {
			t.Errorf("%s: %v %v %v", tc.arch, g1, g2, g3)
		}
	}
	for _, bad := range []string{"sm_75", "sm_100", "compute_90", "sm_x", ""} {
		if _, err := ForArch(bad); !errors.Is(err, ErrArch) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := ForRM(0x80a); !errors.Is(err, ErrArch) {
		t.Error("0x80a")
	}
	if !Ada.Runs(80) || !Ada.Runs(86) || Ada.Runs(90) || !Hopper.Runs(90) || Hopper.Runs(89) || Ampere.Runs(86) {
		t.Error("Runs")
	}
	if Hopper.Qmd != QmdV04 || Hopper.Qmd.Bytes() != 384 || Ada.Qmd != QmdV03 || Hopper.ParamsOffset != 0x210 || Ampere.ParamsOffset != 0x160 {
		t.Error("Hopper's descriptor and parameters")
	}
	if SassVersion(90) != 0x90 || SassVersion(86) != 0x86 {
		t.Error("SassVersion")
	}
	if len(Generations()) != 4 {
		t.Error("Generations")
	}
}

func TestSharedConfig(t *testing.T) {
	for _, tc := range []struct {
		g    *Generation
		n    int
		want uint32
		ok   bool
	}{
		{Hopper, 0, 3, true}, {Hopper, 1024, 3, true}, {Hopper, 8 << 10, 3, true}, {Hopper, 8<<10 + 1, 5, true},
		{Hopper, 100 << 10, 26, true}, {Hopper, 228 << 10, 58, true}, {Hopper, 228<<10 + 1, 0, false},
		{Ampere, 164 << 10, 42, true}, {AmpereB, 100 << 10, 26, true}, {Ada, 101 << 10, 0, false},
	} {
		got, ok := tc.g.SharedConfig(tc.n)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %d: %d %v", tc.g.Arch, tc.n, got, ok)
		}
	}
	if Hopper.MaxShared() != 228<<10 || Ampere.MaxShared() != 164<<10 || Ada.MaxShared() != 100<<10 {
		t.Error("MaxShared")
	}
}

func TestCheckSize(t *testing.T) {
	ok := [3]uint32{1, 1, 1}
	for _, tc := range []struct {
		grid, block [3]uint32
		bad         bool
	}{
		{ok, ok, false}, {[3]uint32{1<<31 - 1, 65535, 65535}, [3]uint32{1024, 1, 1}, false},
		{[3]uint32{0, 1, 1}, ok, true}, {ok, [3]uint32{1, 0, 1}, true}, {[3]uint32{1 << 31, 1, 1}, ok, true},
		{[3]uint32{1, 65536, 1}, ok, true}, {ok, [3]uint32{1, 1, 65}, true}, {ok, [3]uint32{32, 32, 2}, true},
	} {
		if why := Hopper.CheckSize(tc.grid, tc.block); (why != "") != tc.bad {
			t.Errorf("%v %v: %q", tc.grid, tc.block, why)
		}
	}
}
