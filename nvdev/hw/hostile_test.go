package hw

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// The cubins below are written from scratch, in shapes no compiler writes:
// a hostile file must cost the parser memory and work in proportion to
// its size, and be refused with an error that wraps ErrMalformed where it
// asks for more.

// hsec is a section of a cubin made by buildCubin.
type hsec struct {
	name       string
	typ        elf.SectionType
	flags      elf.SectionFlag
	data       []byte
	size       uint64 // the size of a SHT_NOBITS section
	alias      int    // if nonzero, the section whose bytes this one shares
	link, info uint32
	align      uint64
	entsize    uint64
}

// buildCubin writes an sm_90 cubin of secs, after the null section, and a
// section name table after them.
func buildCubin(secs []hsec) []byte {
	var names bytes.Buffer
	names.WriteByte(0)
	nameAt := make([]uint32, len(secs)+1)
	for i, s := range secs {
		nameAt[i] = uint32(names.Len())
		names.WriteString(s.name)
		names.WriteByte(0)
	}
	nameAt[len(secs)] = uint32(names.Len())
	names.WriteString(".shstrtab\x00")
	secs = append(secs, hsec{typ: elf.SHT_STRTAB, data: names.Bytes(), align: 1})
	b := make([]byte, elfHeaderSize)
	at := make([]uint64, len(secs))
	for i, s := range secs {
		if s.alias != 0 {
			at[i] = at[s.alias-1]
			continue
		}
		if s.typ == elf.SHT_NOBITS {
			continue
		}
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		at[i] = uint64(len(b))
		b = append(b, s.data...)
	}
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	shoff := len(b)
	b = append(b, make([]byte, shdrSize*(len(secs)+1))...)
	for i, s := range secs {
		h := b[shoff+shdrSize*(i+1):]
		size := uint64(len(s.data))
		switch {
		case s.alias != 0:
			size = uint64(len(secs[s.alias-1].data))
		case s.typ == elf.SHT_NOBITS:
			size = s.size
		}
		le.PutUint32(h[0:], nameAt[i])
		le.PutUint32(h[4:], uint32(s.typ))
		le.PutUint64(h[8:], uint64(s.flags))
		le.PutUint64(h[24:], at[i])
		le.PutUint64(h[32:], size)
		le.PutUint32(h[40:], s.link)
		le.PutUint32(h[44:], s.info)
		le.PutUint64(h[48:], s.align)
		le.PutUint64(h[56:], s.entsize)
	}
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	b[elf.EI_OSABI], b[elf.EI_ABIVERSION] = 0x41, 8
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], emCUDA)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[40:], uint64(shoff))
	le.PutUint32(b[48:], 90<<8|0x5a)
	le.PutUint16(b[52:], elfHeaderSize)
	le.PutUint16(b[58:], shdrSize)
	le.PutUint16(b[60:], uint16(len(secs)+1))
	le.PutUint16(b[62:], uint16(len(secs)))
	return b
}

// hsym is a symbol table entry.
func hsym(name uint32, typ elf.SymType, other uint8, shndx uint16, value, size uint64) []byte {
	e := make([]byte, symSize)
	le.PutUint32(e, name)
	e[4] = byte(elf.STB_GLOBAL)<<4 | byte(typ)
	e[5] = other
	le.PutUint16(e[6:], shndx)
	le.PutUint64(e[8:], value)
	le.PutUint64(e[16:], size)
	return e
}

// Section indexes of hostileCubin's sections.
const (
	hText   = 1
	hSymtab = 2
	hStrtab = 3
)

// hostileCubin is a cubin of one code section of 256 bytes (index 1), a
// symbol table (2) of syms after the null symbol, their string table (3)
// strs, and then the sections more.
func hostileCubin(syms [][]byte, strs []byte, more ...hsec) []byte {
	symtab := make([]byte, symSize, symSize*(len(syms)+1))
	for _, s := range syms {
		symtab = append(symtab, s...)
	}
	return buildCubin(append([]hsec{
		{name: ".text.k", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, data: make([]byte, 256), align: 128},
		{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab, link: hStrtab, entsize: symSize, align: 8},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: strs, align: 1},
	}, more...))
}

// kernels is n kernel symbols in the code section, named at the offsets
// name(i) of their string table.
func kernels(n int, name func(i int) uint32) [][]byte {
	s := make([][]byte, n)
	for i := range s {
		s[i] = hsym(name(i), elf.STT_FUNC, stoCUDAEntry, hText, 0, 256)
	}
	return s
}

// allocated is the bytes and the allocations f makes.
func allocated(f func()) (bytes, allocs uint64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc, m1.Mallocs - m0.Mallocs
}

// TestBuildCubin checks the builder against the parser: a well-formed
// cubin of it parses, with its kernels.
func TestBuildCubin(t *testing.T) {
	strs := []byte("\x00k0\x00k1\x00shared\x00")
	syms := append(kernels(2, func(i int) uint32 { return uint32(1 + 3*i) }),
		hsym(7, elf.STT_OBJECT, 0, hText, 0, 0), hsym(7, elf.STT_OBJECT, 0, hText, 0, 0))
	c, err := Parse(hostileCubin(syms, strs,
		hsec{name: ".nv.constant3", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: make([]byte, 64), align: 4},
		hsec{name: ".nv.constant3.k1", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: make([]byte, 32), align: 4},
		hsec{name: ".nv.global", typ: elf.SHT_NOBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, size: 1 << 20, align: 8}))
	if err != nil {
		t.Fatal(err)
	}
	k0, ok0 := c.Kernel("k0")
	k1, ok1 := c.Kernel("k1")
	if !ok0 || !ok1 || len(c.Kernels()) != 2 || len(k0.Banks) != 1 || k0.Banks[0].Size != 64 ||
		len(k1.Banks) != 1 || k1.Banks[0].Size != 32 {
		t.Fatalf("kernels %v, banks of k0 %v, of k1 %v", c.Kernels(), k0.Banks, k1.Banks)
	}
	if s := c.Symbols(); s[3].Name != "shared" || s[4].Name != "shared" {
		t.Errorf("symbols %v", s)
	}
	if c.Size() < 1<<20 {
		t.Errorf("an image of %d bytes holds a .nv.global of 1 MiB", c.Size())
	}
}

// TestHostileNames: symbols that name one long string, or its suffixes,
// are refused before the parser copies or scans more names than the file
// holds.
func TestHostileNames(t *testing.T) {
	const long = 256 << 10
	strs := append(append([]byte{0}, bytes.Repeat([]byte{'k'}, long)...), 0)
	cases := map[string][][]byte{
		"one name":    kernels(1000, func(int) uint32 { return 1 }),
		"suffixes":    kernels(1000, func(i int) uint32 { return uint32(1 + i) }),
		"non-kernels": append(kernels(1, func(int) uint32 { return 1 }), bytes.Repeat(hsym(1, elf.STT_OBJECT, 0, hText, 0, 0), 1000)),
	}
	for name, syms := range cases {
		b := hostileCubin(syms, strs)
		var err error
		n, _ := allocated(func() { _, err = Inspect(b) })
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
		if n > 4*uint64(len(b))+1<<20 {
			t.Errorf("%s: a file of %d bytes made the parser allocate %d", name, len(b), n)
		}
	}
}

// TestSectionsTimesKernels: a cubin of many sections and many kernels
// costs work in proportion to their sum, not their product.
func TestSectionsTimesKernels(t *testing.T) {
	const n = 400
	var strs bytes.Buffer
	strs.WriteByte(0)
	at := make([]uint32, n)
	var more []hsec
	for i := range n {
		at[i] = uint32(strs.Len())
		name := "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		strs.WriteString(name + "\x00")
		more = append(more,
			hsec{name: ".nv.constantx" + name, typ: elf.SHT_PROGBITS},
			hsec{name: ".nv.info." + name, typ: shtCUDAInfo},
		)
	}
	b := hostileCubin(kernels(n, func(i int) uint32 { return at[i] }), strs.Bytes(), more...)
	var c *Cubin
	var err error
	_, allocs := allocated(func() { c, err = Parse(b) })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Kernels()) != n {
		t.Fatalf("%d kernels, want %d", len(c.Kernels()), n)
	}
	if limit := uint64(40 * (n + len(more))); allocs > limit {
		t.Errorf("%d kernels and %d sections: %d allocations, more than %d", n, len(more), allocs, limit)
	}
}

// TestHostileSizes: sections that ask the image for more than their file
// holds, or for more zeroes than MaxZeroed, are refused, where laying the
// image would take that much memory of the host.
func TestHostileSizes(t *testing.T) {
	strs := []byte("\x00k\x00")
	syms := kernels(1, func(int) uint32 { return 1 })
	global := func(size uint64) hsec {
		return hsec{name: ".nv.global", typ: elf.SHT_NOBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, size: size, align: 8}
	}
	data := hsec{name: ".nv.global.init", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, data: make([]byte, 64<<10), align: 8}
	var aliases, padded []hsec
	aliases = append(aliases, data)
	for range 1000 {
		alias := data
		alias.alias = hStrtab + 1
		aliases = append(aliases, alias)
	}
	for range 5000 {
		padded = append(padded, hsec{name: ".nv.global.init", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: []byte{1}, align: 1 << 16})
	}
	for _, tc := range []struct {
		name string
		more []hsec
		ok   bool
	}{
		{"zeroes of 64 GiB", []hsec{global(MaxImage - 1<<12)}, false},
		{"zeroes of 2^64-1 bytes", []hsec{global(1<<64 - 1)}, false},
		{"zeroes past MaxZeroed", []hsec{global(MaxZeroed - 1<<10), global(2 << 10)}, false},
		{"zeroes of MaxZeroed/2", []hsec{global(MaxZeroed / 2)}, true},
		{"sections that share their bytes", aliases, false},
		{"padding past MaxZeroed", padded, false},
	} {
		b := hostileCubin(syms, strs, tc.more...)
		c, err := Parse(b)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.ok && c.Size() > MaxZeroed+len(b):
			t.Errorf("%s: an image of %d bytes", tc.name, c.Size())
		case !tc.ok && !errors.Is(err, ErrMalformed):
			t.Errorf("%s: %v, want ErrMalformed", tc.name, err)
		}
	}
}

// manyKernels is a cubin of n kernels, each with the sections nvcc gives
// a kernel: its own code, constant bank 0, shared memory and attributes.
func manyKernels(n int) []byte {
	strs := []byte{0}
	at := make([]uint32, n)
	var more []hsec
	for i := range n {
		at[i] = uint32(len(strs))
		name := fmt.Sprintf("kernel_%06d", i)
		strs = append(append(strs, name...), 0)
		more = append(more,
			hsec{name: ".nv.info." + name, typ: shtCUDAInfo, data: []byte{eifmtHVAL, AttrMaxRegCount, 32, 0}, align: 4},
			hsec{name: ".nv.constant0." + name, typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: make([]byte, 0x210), align: 4},
			hsec{name: ".nv.shared." + name, typ: elf.SHT_NOBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, size: 1024, align: 16},
			hsec{name: ".text." + name, typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, data: make([]byte, 128), align: 128})
	}
	syms := make([][]byte, n)
	for i := range syms {
		syms[i] = hsym(at[i], elf.STT_FUNC, stoCUDAEntry, uint16(hStrtab+4*i+4), 0, 128)
	}
	return hostileCubin(syms, strs, more...)
}

// nullSectionAs is a cubin whose section 0, which ELF keeps null, is a
// section of type typ of one entry: a symbol table linked to the string
// table, or relocations of the code against the symbol table.
func nullSectionAs(typ elf.SectionType) []byte {
	b := hostileCubin(kernels(1, func(int) uint32 { return 1 }), []byte("\x00k\x00"))
	h := b[le.Uint64(b[40:]):]
	le.PutUint32(h[4:], uint32(typ))
	switch typ {
	case elf.SHT_SYMTAB:
		le.PutUint64(h[32:], symSize)
		le.PutUint64(h[56:], symSize)
		le.PutUint32(h[40:], hStrtab)
	case elf.SHT_REL:
		le.PutUint64(h[32:], relSize)
		le.PutUint32(h[40:], hSymtab)
		le.PutUint32(h[44:], hText)
	}
	return b
}

// TestNullSection: section 0, which holds no bytes, is refused as
// anything but SHT_NULL, rather than read as a symbol table or as
// relocations.
func TestNullSection(t *testing.T) {
	for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_REL, elf.SHT_RELA, elf.SHT_PROGBITS} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("section 0 of type %v: panic %v", typ, r)
				}
			}()
			if _, err := Inspect(nullSectionAs(typ)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "section 0") {
				t.Errorf("section 0 of type %v: %v, want ErrMalformed", typ, err)
			}
		}()
	}
	if _, err := Parse(nullSectionAs(elf.SHT_NULL)); err != nil {
		t.Errorf("section 0 of type SHT_NULL: %v", err)
	}
}

// BenchmarkParseManyKernels parses a cubin of 4000 kernels and 16,000
// sections.
func BenchmarkParseManyKernels(b *testing.B) {
	c := manyKernels(4000)
	b.SetBytes(int64(len(c)))
	for b.Loop() {
		if _, err := Parse(c); err != nil {
			b.Fatal(err)
		}
	}
}
