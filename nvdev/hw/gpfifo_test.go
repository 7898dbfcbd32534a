package hw

import (
	"errors"
	"testing"
)

func TestSegmentGolden(t *testing.T) {
	const addr = 0x0000_00ab_cdef_1234
	// tinygrad writes a subroutine segment as (addr & ~3) | len<<42 | 1<<41.
	if got, want := Segment(addr, 10, Subroutine, false), Entry(addr&^3|10<<42|1<<41); got != want {
		t.Errorf("%#x, want %#x", got, want)
	}
	e := Segment(addr, MaxSegmentWords, Main, true)
	e0, e1 := e.Words()
	if e0 != 0xcdef1234 || e1 != 0xab|MaxSegmentWords<<10|1<<31 || EntryOf(e0, e1) != e {
		t.Errorf("%#08x %#08x", e0, e1)
	}
	if e.Address() != addr || e.Length() != MaxSegmentWords || e.Level() != Main || !e.Sync() {
		t.Errorf("%#x %d %d %v", e.Address(), e.Length(), e.Level(), e.Sync())
	}
	if _, ok := e.Control(); ok {
		t.Error("a segment read as a control entry")
	}
	x := ExtendedBase(0x0123_4500_0000_0000)
	x0, x1 := x.Words()
	if x0 != 0x12345<<8 || x1 != EntryOpExtendedBase || x.Base() != 0x0123_4500_0000_0000 {
		t.Errorf("extended base %#08x %#08x", x0, x1)
	}
	if op, ok := x.Control(); !ok || op != EntryOpExtendedBase {
		t.Errorf("control %d %v", op, ok)
	}
}

func TestAppendSegment(t *testing.T) {
	var base uint64
	ring, err := AppendSegment(nil, Hopper, &base, 0x1000, 8, Main, false)
	if err != nil || len(ring) != 1 || base != 0 {
		t.Fatalf("%v %v %#x", ring, err, base)
	}
	high := uint64(0x0001_0000_0000_1000)
	ring, err = AppendSegment(ring, Hopper, &base, high, 8, Subroutine, false)
	if err != nil || len(ring) != 3 || base != high&^(1<<40-1) || ring[1] != ExtendedBase(high) || ring[2].Address() != high&(1<<40-1) {
		t.Fatalf("%x %v %#x", ring, err, base)
	}
	ring, _ = AppendSegment(ring, Hopper, &base, high+0x100, 4, Main, false)
	if len(ring) != 4 {
		t.Fatalf("same base: %d entries", len(ring))
	}
	ring, _ = AppendSegment(ring, Hopper, &base, 0x2000, 4, Main, false)
	if len(ring) != 6 || ring[4] != ExtendedBase(0) || base != 0 {
		t.Fatalf("back below 2^40: %x", ring)
	}
	base = 0
	for _, tc := range []struct {
		g     *Generation
		addr  uint64
		words uint32
		err   error
	}{
		{Ampere, 1 << 40, 4, ErrAddress}, {Ada, 1 << 41, 4, ErrAddress}, {Hopper, 1 << 57, 4, ErrAddress},
		{Hopper, 0x1002, 4, ErrAddress}, {Hopper, 0x1000, 0, ErrLength}, {Hopper, 0x1000, MaxSegmentWords + 1, ErrLength},
	} {
		r, err := AppendSegment(nil, tc.g, &base, tc.addr, tc.words, Main, false)
		if !errors.Is(err, tc.err) || len(r) != 0 || base != 0 {
			t.Errorf("%s %#x %d: %v, %d entries", tc.g.Arch, tc.addr, tc.words, err, len(r))
		}
	}
}

func TestWordsEntries(t *testing.T) {
	if n, err := WordsEntries(make([]uint32, 6)); n != 3 || err != nil {
		t.Errorf("%d %v", n, err)
	}
	if _, err := WordsEntries(make([]uint32, 3)); !errors.Is(err, ErrOddWords) {
		t.Errorf("odd words: %v", err)
	}
}
