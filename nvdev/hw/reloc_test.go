package hw

import (
	"errors"
	"fmt"
	"testing"
)

// TestLayDiffersAtRelocatedWords lays each test image (with vprintf and
// __assertfail defined) at two addresses: the images differ exactly at
// the 32-bit words the relocations write, and each relocated word holds
// its symbol's address where the image lies.
func TestLayDiffersAtRelocatedWords(t *testing.T) {
	const a, b = 0x0000_7f12_3400_0000, 0x0000_7f13_3410_0100
	for _, sm := range archs {
		t.Run(fmt.Sprintf("sm_%d", sm), func(t *testing.T) {
			c, err := Parse(editCubin(t, sm).defineDriverFunctions().bytes())
			if err != nil {
				t.Fatal(err)
			}
			la, err := c.Lay(a)
			if err != nil {
				t.Fatal(err)
			}
			lb := make([]byte, c.Size()+100)
			if err := c.LayInto(lb, b); err != nil {
				t.Fatal(err)
			}
			lb = lb[:c.Size()]
			relocated := map[uint64]bool{}
			for _, r := range c.Relocations() {
				at, n := r.Span()
				for w := at; w < at+uint64(n); w += 4 {
					relocated[w] = true
				}
			}
			if len(relocated) != 14 {
				t.Fatalf("%d relocated words, want 14 (7 addresses)", len(relocated))
			}
			for w := uint64(0); w < uint64(c.Size()); w += 4 {
				differs := le.Uint32(la[w:]) != le.Uint32(lb[w:])
				if differs != relocated[w] {
					t.Errorf("word at %#x: differs %v, relocated %v", w, differs, relocated[w])
				}
			}
			offsets := map[string]uint64{}
			for _, s := range c.Sections() {
				offsets[s.Name] = s.Offset
			}
			syms := map[string]Symbol{}
			for _, s := range c.Symbols() {
				syms[s.Name] = s
			}
			for _, r := range c.Relocations() {
				s := syms[r.Symbol]
				want := a + offsets[c.Sections()[s.Section].Name] + s.Value
				if got := le.Uint64(la[r.Offset:]); got != want {
					t.Errorf("%s: %#x, want %#x", r.Symbol, got, want)
				}
			}
			// The image holds the sections' bytes where the layout says.
			raw := readCubin(t, sm)
			for _, s := range c.Sections() {
				if !s.Laid || s.Type != 1 /* PROGBITS */ || s.Name == ".nv.constant4" {
					continue
				}
				data := sectionBytes(t, raw, s.Index)
				if string(la[s.Offset:s.Offset+s.Size]) != string(data) {
					t.Errorf("%s not laid as the file holds it", s.Name)
				}
			}
		})
	}
}

func sectionBytes(t *testing.T, b []byte, i int) []byte {
	t.Helper()
	f, err := readELF(b)
	if err != nil {
		t.Fatal(err)
	}
	return f.sections[i].data
}

// TestLayHalves retypes two of constant bank 4's relocations into the
// halves of an instruction's immediate (R_CUDA_ABS32_LO_32 and _HI_32),
// whose laying writes bits 63:32 of the instruction word, in a RELA file
// (sm_90) and a REL one (sm_80).
func TestLayHalves(t *testing.T) {
	const at = 0x0000_0123_4567_8900
	for _, sm := range []int{80, 90} {
		e := editCubin(t, sm).defineDriverFunctions()
		e.retype(relocSection(sm), "$str", RCudaAbs32Lo32).retype(relocSection(sm), "$str$1", RCudaAbs32Hi32)
		c, err := Parse(e.bytes())
		if err != nil {
			t.Fatal(err)
		}
		img, err := c.Lay(at)
		if err != nil {
			t.Fatal(err)
		}
		var init uint64
		for _, s := range c.Sections() {
			if s.Name == ".nv.global.init" {
				init = at + s.Offset
			}
		}
		for _, r := range c.Relocations() {
			switch r.Symbol {
			case "$str":
				if r.Type != RCudaAbs32Lo32 || le.Uint32(img[r.Offset:]) != 0 || le.Uint32(img[r.Offset+4:]) != uint32(init) {
					t.Errorf("sm_%d $str: %#x, want %#x in the high word", sm, le.Uint64(img[r.Offset:]), uint32(init))
				}
			case "$str$1":
				if r.Type != RCudaAbs32Hi32 || le.Uint32(img[r.Offset+4:]) != uint32((init+6)>>32) {
					t.Errorf("sm_%d $str$1: %#x, want %#x in the high word", sm, le.Uint64(img[r.Offset:]), uint32((init+6)>>32))
				}
			}
		}
	}
}

func TestLayRefusesAddresses(t *testing.T) {
	c, err := Parse(editCubin(t, 90).defineDriverFunctions().bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []uint64{0x1080, 1 << 57, 1<<57 - 4096} {
		if _, err := c.Lay(addr); !errors.Is(err, ErrAddress) {
			t.Errorf("Lay(%#x): %v", addr, err)
		}
	}
	if err := c.LayInto(make([]byte, c.Size()-1), 0); err == nil {
		t.Error("LayInto a short buffer")
	}
	if c.Size()%128 != 0 || c.Align() != 256 {
		t.Errorf("size %d, align %d", c.Size(), c.Align())
	}
}

// TestLay32BitRelocations retypes one of constant bank 4's relocations
// into R_CUDA_32 and R_CUDA_ABS32_32: laid below 4 GiB the word holds the
// symbol's address, and laid where the address needs more than 32 bits
// the laying returns an error wrapping ErrAddress rather than cut it.
func TestLay32BitRelocations(t *testing.T) {
	for _, sm := range []int{80, 90} {
		for _, typ := range []uint32{RCuda32, RCudaAbs32_32} {
			c, err := Parse(editCubin(t, sm).defineDriverFunctions().retype(relocSection(sm), "$str", typ).bytes())
			if err != nil {
				t.Fatal(err)
			}
			low := uint64(0x1000_0000)
			img, err := c.Lay(low)
			if err != nil {
				t.Fatalf("sm_%d %s at %#x: %v", sm, RelocationName(typ), low, err)
			}
			for _, r := range c.Relocations() {
				if r.Symbol != "$str" {
					continue
				}
				at, _ := r.Span()
				if got := le.Uint32(img[at:]); uint64(got) < low || uint64(got) >= low+uint64(c.Size()) {
					t.Errorf("sm_%d %s: %#x, not an address in the image at %#x", sm, RelocationName(typ), got, low)
				}
			}
			if _, err := c.Lay(1 << 32); !errors.Is(err, ErrAddress) {
				t.Errorf("sm_%d %s at 2^32: %v, want ErrAddress", sm, RelocationName(typ), err)
			}
		}
	}
}
