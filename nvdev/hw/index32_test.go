package hw

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The indexes and types a cubin states in 32-bit words past 2^31, which an
// int of 32 bits holds as negative numbers, are refused as past their
// tables on every processor (CI runs these tests for GOARCH 386), and
// never index the tables.

// noPanic runs f, and fails t naming what where f panics.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic %v", what, r)
		}
	}()
	f()
}

// externCubin is a cubin of one kernel k whose EIATTR_EXTERNS names the
// symbol of index sym.
func externCubin(sym uint32) []byte {
	ext := make([]byte, 4)
	le.PutUint32(ext, sym)
	info := append([]byte{eifmtSVAL, AttrExterns, byte(len(ext)), 0}, ext...)
	return hostileCubin(kernels(1, func(int) uint32 { return 1 }), []byte("\x00k\x00"),
		hsec{name: ".nv.info.k", typ: shtCUDAInfo, data: info, align: 4})
}

// TestExternIndexPastInt: a symbol index of EIATTR_EXTERNS is a 32-bit
// word, which past 2^31 an int of 32 bits holds as a negative number; such
// an index lies past the symbol table on every processor, and the cubin is
// refused as malformed rather than read out of range.
func TestExternIndexPastInt(t *testing.T) {
	for _, sym := range []uint32{2, 1<<31 - 1, 1 << 31, 1<<32 - 1} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("an extern of symbol %#x: panic %v", sym, r)
				}
			}()
			if _, err := Inspect(externCubin(sym)); !errors.Is(err, ErrMalformed) {
				t.Errorf("an extern of symbol %#x: %v", sym, err)
			}
		}()
	}
	if _, err := Inspect(externCubin(1)); err != nil {
		t.Fatalf("an extern of the kernel's own symbol: %v", err)
	}
}

// regCountCubin is a cubin of one kernel k whose image's EIATTR_REGCOUNT
// (.nv.info) names the symbol of index sym.
func regCountCubin(sym uint32) []byte {
	data := make([]byte, 8)
	le.PutUint32(data, sym)
	le.PutUint32(data[4:], 32)
	info := append([]byte{eifmtSVAL, AttrRegCount, byte(len(data)), 0}, data...)
	return hostileCubin(kernels(1, func(int) uint32 { return 1 }), []byte("\x00k\x00"),
		hsec{name: ".nv.info", typ: shtCUDAInfo, data: info, align: 4})
}

// TestImageAttrIndexPastInt: a symbol index of the image's attributes past
// 2^31 is refused as malformed on every processor, as past the symbol
// table, where an int of 32 bits took it for a negative index in the table.
func TestImageAttrIndexPastInt(t *testing.T) {
	for _, sym := range []uint32{2, 1 << 31, 1<<32 - 1} {
		if _, err := Inspect(regCountCubin(sym)); !errors.Is(err, ErrMalformed) {
			t.Errorf("EIATTR_REGCOUNT of symbol %#x: %v", sym, err)
		}
	}
	c, err := Inspect(regCountCubin(1))
	if err != nil {
		t.Fatalf("EIATTR_REGCOUNT of the kernel's own symbol: %v", err)
	}
	if k, _ := c.Kernel("k"); k.Registers != 32 {
		t.Fatalf("%d registers, want 32", k.Registers)
	}
}

// linkedSymtab is hostileCubin's cubin of one kernel with its symbol
// table's string table at section link.
func linkedSymtab(link uint32) []byte {
	b := hostileCubin(kernels(1, func(int) uint32 { return 1 }), []byte("\x00k\x00"))
	shoff := le.Uint64(b[40:])
	le.PutUint32(b[shoff+shdrSize*hSymtab+40:], link)
	return b
}

// TestSymtabLinkPastInt: a symbol table whose string table's index (its
// sh_link) lies past the sections is refused.
func TestSymtabLinkPastInt(t *testing.T) {
	for _, link := range []uint32{5, 1 << 31, 1<<32 - 1} {
		noPanic(t, fmt.Sprintf("a symbol table linked to section %#x", link), func() {
			if _, err := Inspect(linkedSymtab(link)); !errors.Is(err, ErrMalformed) {
				t.Errorf("a symbol table linked to section %#x: %v", link, err)
			}
		})
	}
	if _, err := Inspect(linkedSymtab(hStrtab)); err != nil {
		t.Fatalf("a symbol table linked to its string table: %v", err)
	}
}

// relocCubin is a cubin of one kernel and a section of relocations (RELA)
// of section target, one of type typ at offset 0 of the kernel's symbol.
func relocCubin(target, typ uint32) []byte {
	rela := make([]byte, relaSize)
	le.PutUint64(rela[8:], 1<<32|uint64(typ))
	return hostileCubin(kernels(1, func(int) uint32 { return 1 }), []byte("\x00k\x00"),
		hsec{name: ".rela.text.k", typ: elf.SHT_RELA, data: rela, link: hSymtab, info: target, entsize: relaSize, align: 8})
}

// TestRelocTargetPastInt: a relocation section whose target section (its
// sh_info) lies past the sections is refused.
func TestRelocTargetPastInt(t *testing.T) {
	for _, target := range []uint32{6, 1 << 31, 1<<32 - 1} {
		noPanic(t, fmt.Sprintf("relocations of section %#x", target), func() {
			if _, err := Inspect(relocCubin(target, RCuda64)); !errors.Is(err, ErrMalformed) {
				t.Errorf("relocations of section %#x: %v", target, err)
			}
		})
	}
	if _, err := Inspect(relocCubin(hText, RCuda64)); err != nil {
		t.Fatalf("relocations of the code: %v", err)
	}
}

// TestRelocationNamePastInt: a relocation of a type past 2^31 is refused
// with a RelocationError that names it as unknown.
func TestRelocationNamePastInt(t *testing.T) {
	for _, typ := range []uint32{0x7b, 1 << 31, 1<<32 - 1} {
		noPanic(t, fmt.Sprintf("a relocation of type %#x", typ), func() {
			_, err := Inspect(relocCubin(hText, typ))
			var re *RelocationError
			if !errors.As(err, &re) || re.Type != typ {
				t.Fatalf("a relocation of type %#x: %v", typ, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "(unknown)") {
				t.Errorf("a relocation of type %#x: %q", typ, msg)
			}
		})
	}
}
