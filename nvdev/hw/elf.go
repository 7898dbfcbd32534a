package hw

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
)

// A minimal reader of the ELF64 little-endian files nvcc writes for
// EM_CUDA. It checks every offset and size against the file before it
// reads, so that no input makes it panic; debug/elf serves for its
// constants only.
//
// It also bounds what a file makes it allocate and do by the file's size,
// so that a small hostile file cannot exhaust memory or time: the
// sections that have bytes in the file add up to no more than the file
// (they do not overlap much), the names of the sections, and those of the
// symbols, add up to no more than the file each (names are substrings of
// one copy of their string table, never copied one by one), and every
// lookup of a section or symbol is by index or by a map made once.

const (
	emCUDA        = 190        // EM_CUDA
	shtCUDAInfo   = 0x70000000 // SHT_LOPROC: .nv.info sections
	stoCUDAEntry  = 0x10       // st_other of a kernel (an entry point)
	elfHeaderSize = 64
	shdrSize      = 64
	symSize       = 24
	relSize       = 16
	relaSize      = 24
	shnAbs        = 0xfff1
	shnLoReserve  = 0xff00
)

var le = binary.LittleEndian

type elfSection struct {
	index   int
	name    string
	typ     uint32
	flags   uint64
	offset  uint64
	size    uint64
	link    uint32
	info    uint32
	align   uint64
	entsize uint64
	data    []byte // nil for SHT_NOBITS
}

type elfSymbol struct {
	name  string
	value uint64
	size  uint64
	info  uint8
	other uint8
	shndx uint16
}

func (s *elfSymbol) kind() elf.SymType { return elf.SymType(s.info & 0xf) }

type elfFile struct {
	typ      uint16
	osabi    uint8
	abiVer   uint8
	flags    uint32
	sections []*elfSection
	symbols  []elfSymbol
	symtab   int            // index of the symbol table, 0 if none
	strtabs  map[int]string // the string tables read, by section
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// names reads the names of a string table: substrings of one copy of
// the table, which add up to no more than total bytes.
type names struct {
	s           string
	left, total uint64
}

// names is a reader of the names of the string table in section i, whose
// names add up to no more than total bytes. The table is copied once,
// whatever the readers of it.
func (f *elfFile) names(i int, total uint64) *names {
	s, ok := f.strtabs[i]
	if !ok {
		if f.strtabs == nil {
			f.strtabs = map[int]string{}
		}
		s = string(f.sections[i].data)
		f.strtabs[i] = s
	}
	return &names{s: s, left: total, total: total}
}

// name reads the NUL-terminated string at off, and takes its length from
// what the names may still add up to: it reads no further than that.
func (t *names) name(off uint64) (string, error) {
	if off >= uint64(len(t.s)) {
		if off == 0 && len(t.s) == 0 {
			return "", nil
		}
		return "", malformed("string offset %#x past its table of %d bytes", off, len(t.s))
	}
	rest := t.s[off:]
	if uint64(len(rest)) > t.left {
		rest = rest[:t.left+1]
	}
	n := strings.IndexByte(rest, 0)
	if n < 0 {
		if uint64(len(t.s))-off <= t.left {
			return "", malformed("string at %#x not terminated", off)
		}
		return "", malformed("names of more than %d bytes in all, the size of the file", t.total)
	}
	t.left -= uint64(n)
	return rest[:n], nil
}

// span is b[off:off+n], checked.
func span(b []byte, off, n uint64) ([]byte, bool) {
	if off > uint64(len(b)) || n > uint64(len(b))-off {
		return nil, false
	}
	return b[off : off+n], true
}

func readELF(b []byte) (*elfFile, error) {
	if len(b) < elfHeaderSize || string(b[:4]) != elf.ELFMAG {
		return nil, malformed("not an ELF file")
	}
	if elf.Class(b[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(b[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, malformed("not a 64-bit little-endian ELF file")
	}
	f := &elfFile{
		typ:    le.Uint16(b[16:]),
		osabi:  b[elf.EI_OSABI],
		abiVer: b[elf.EI_ABIVERSION],
		flags:  le.Uint32(b[48:]),
	}
	if m := le.Uint16(b[18:]); m != emCUDA {
		return nil, malformed("machine %d, not EM_CUDA (%d)", m, emCUDA)
	}
	shoff := le.Uint64(b[40:])
	shentsize, shnum, shstrndx := le.Uint16(b[58:]), le.Uint16(b[60:]), le.Uint16(b[62:])
	if shnum == 0 {
		return nil, malformed("no section headers")
	}
	if shentsize != shdrSize {
		return nil, malformed("section header size %d", shentsize)
	}
	hdrs, ok := span(b, shoff, uint64(shnum)*shdrSize)
	if !ok {
		return nil, malformed("section headers past the end of the file")
	}
	if shstrndx >= shnum {
		return nil, malformed("section name table %d of %d sections", shstrndx, shnum)
	}
	if t := elf.SectionType(le.Uint32(hdrs[4:])); t != elf.SHT_NULL {
		return nil, malformed("section 0 of type %v, not SHT_NULL", t)
	}
	f.sections = make([]*elfSection, shnum)
	var held uint64 // the bytes of the sections read so far
	for i := range f.sections {
		h := hdrs[i*shdrSize:]
		s := &elfSection{
			index:   i,
			typ:     le.Uint32(h[4:]),
			flags:   le.Uint64(h[8:]),
			offset:  le.Uint64(h[24:]),
			size:    le.Uint64(h[32:]),
			link:    le.Uint32(h[40:]),
			info:    le.Uint32(h[44:]),
			align:   le.Uint64(h[48:]),
			entsize: le.Uint64(h[56:]),
		}
		if i > 0 && elf.SectionType(s.typ) != elf.SHT_NOBITS && elf.SectionType(s.typ) != elf.SHT_NULL {
			if s.data, ok = span(b, s.offset, s.size); !ok {
				return nil, malformed("section %d: %d bytes at %#x past the end of the file", i, s.size, s.offset)
			}
			if held += s.size; held > uint64(len(b)) {
				return nil, malformed("sections of more than the file's %d bytes: they overlap", len(b))
			}
		}
		f.sections[i] = s
	}
	if elf.SectionType(f.sections[shstrndx].typ) != elf.SHT_STRTAB {
		return nil, malformed("section name table is not a string table")
	}
	names := f.names(int(shstrndx), uint64(len(b)))
	for i, s := range f.sections {
		var err error
		if s.name, err = names.name(uint64(le.Uint32(hdrs[i*shdrSize:]))); err != nil {
			return nil, fmt.Errorf("section %d name: %w", i, err)
		}
	}
	for i, s := range f.sections {
		if elf.SectionType(s.typ) != elf.SHT_SYMTAB {
			continue
		}
		if f.symtab != 0 {
			return nil, malformed("two symbol tables")
		}
		f.symtab = i
		if err := f.readSymbols(s, uint64(len(b))); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// readSymbols reads the symbol table s, whose names add up to no more
// than total bytes.
func (f *elfFile) readSymbols(s *elfSection, total uint64) error {
	if s.entsize != symSize {
		return malformed("symbol table entries of %d bytes, not %d", s.entsize, symSize)
	}
	if s.size%symSize != 0 {
		return malformed("symbol table of %d bytes, not a whole number of its %d-byte entries", s.size, symSize)
	}
	if uint64(s.link) >= uint64(len(f.sections)) || elf.SectionType(f.sections[s.link].typ) != elf.SHT_STRTAB {
		return malformed("symbol table's string table %d", s.link)
	}
	strs := f.names(int(s.link), total)
	n := s.size / symSize
	f.symbols = make([]elfSymbol, n)
	for i := range f.symbols {
		e := s.data[uint64(i)*symSize:]
		name, err := strs.name(uint64(le.Uint32(e)))
		if err != nil {
			return fmt.Errorf("symbol %d name: %w", i, err)
		}
		f.symbols[i] = elfSymbol{
			name: name, info: e[4], other: e[5], shndx: le.Uint16(e[6:]),
			value: le.Uint64(e[8:]), size: le.Uint64(e[16:]),
		}
	}
	return nil
}

// sm is the architecture the file's code is for, major*10 + minor: bits
// 15:8 of e_flags from the CUDA ABI version 8 on, bits 7:0 before.
func (f *elfFile) sm() int {
	if f.abiVer >= 8 {
		return int(f.flags >> 8 & 0xff)
	}
	return int(f.flags & 0xff)
}

// section is the section of index i, or nil. The index is compared as a
// 64-bit number: an int of 32 bits holds one past 2^31 as a negative
// number.
func (f *elfFile) section(i uint32) *elfSection {
	if i == 0 || uint64(i) >= uint64(len(f.sections)) {
		return nil
	}
	return f.sections[i]
}
