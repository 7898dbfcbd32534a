package hw

import (
	"debug/elf"
	"fmt"
	"strconv"
)

// Relocations patch the image with the addresses of its symbols where it
// is placed. nvcc 13 writes R_CUDA_64 for the addresses in constant bank 4
// (the image's global data and the driver's functions) for these
// architectures; the loader also applies R_CUDA_32 and the 32-bit halves
// of an instruction's immediate (R_CUDA_ABS32_32, _LO_32, _HI_32), and
// refuses every other type by the name cuobjdump gives it.

// Relocation types the loader applies.
const (
	RCudaNone      = 0x00 // R_CUDA_NONE
	RCuda32        = 0x01 // R_CUDA_32: a 32-bit word
	RCuda64        = 0x02 // R_CUDA_64: a 64-bit word
	RCudaAbs32_32  = 0x37 // R_CUDA_ABS32_32: bits 63:32 of an instruction word
	RCudaAbs32Lo32 = 0x38 // R_CUDA_ABS32_LO_32: the low half of the address, in bits 63:32
	RCudaAbs32Hi32 = 0x39 // R_CUDA_ABS32_HI_32: the high half, in bits 63:32
)

// relocationNames are the names cuobjdump prints for the R_CUDA_* types.
var relocationNames = [...]string{
	"R_CUDA_NONE", "R_CUDA_32", "R_CUDA_64", "R_CUDA_G32", "R_CUDA_G64",
	"R_CUDA_ABS32_26", "R_CUDA_TEX_HEADER_INDEX", "R_CUDA_SAMP_HEADER_INDEX",
	"R_CUDA_SURF_HW_DESC", "R_CUDA_SURF_HW_SW_DESC", "R_CUDA_ABS32_LO_26",
	"R_CUDA_ABS32_HI_26", "R_CUDA_ABS32_23", "R_CUDA_ABS32_LO_23", "R_CUDA_ABS32_HI_23",
	"R_CUDA_ABS24_26", "R_CUDA_ABS24_23", "R_CUDA_ABS16_26", "R_CUDA_ABS16_23",
	"R_CUDA_TEX_SLOT", "R_CUDA_SAMP_SLOT", "R_CUDA_SURF_SLOT",
	"R_CUDA_TEX_BINDLESSOFF13_32", "R_CUDA_TEX_BINDLESSOFF13_47",
	"R_CUDA_CONST_FIELD19_28", "R_CUDA_CONST_FIELD19_23", "R_CUDA_TEX_SLOT9_49",
	"R_CUDA_6_31", "R_CUDA_2_47", "R_CUDA_TEX_BINDLESSOFF13_41",
	"R_CUDA_TEX_BINDLESSOFF13_45", "R_CUDA_FUNC_DESC32_23", "R_CUDA_FUNC_DESC32_LO_23",
	"R_CUDA_FUNC_DESC32_HI_23", "R_CUDA_FUNC_DESC_32", "R_CUDA_FUNC_DESC_64",
	"R_CUDA_CONST_FIELD21_26", "R_CUDA_QUERY_DESC21_37", "R_CUDA_CONST_FIELD19_26",
	"R_CUDA_CONST_FIELD21_23", "R_CUDA_PCREL_IMM24_26", "R_CUDA_PCREL_IMM24_23",
	"R_CUDA_ABS32_20", "R_CUDA_ABS32_LO_20", "R_CUDA_ABS32_HI_20", "R_CUDA_ABS24_20",
	"R_CUDA_ABS16_20", "R_CUDA_FUNC_DESC32_20", "R_CUDA_FUNC_DESC32_LO_20",
	"R_CUDA_FUNC_DESC32_HI_20", "R_CUDA_CONST_FIELD19_20", "R_CUDA_BINDLESSOFF13_36",
	"R_CUDA_SURF_HEADER_INDEX", "R_CUDA_INSTRUCTION64", "R_CUDA_CONST_FIELD21_20",
	"R_CUDA_ABS32_32", "R_CUDA_ABS32_LO_32", "R_CUDA_ABS32_HI_32", "R_CUDA_ABS47_34",
	"R_CUDA_ABS16_32", "R_CUDA_ABS24_32", "R_CUDA_FUNC_DESC32_32",
	"R_CUDA_FUNC_DESC32_LO_32", "R_CUDA_FUNC_DESC32_HI_32", "R_CUDA_CONST_FIELD19_40",
	"R_CUDA_BINDLESSOFF14_40", "R_CUDA_CONST_FIELD21_38", "R_CUDA_INSTRUCTION128",
	"R_CUDA_YIELD_OPCODE9_0", "R_CUDA_YIELD_CLEAR_PRED4_87", "R_CUDA_32_LO",
	"R_CUDA_32_HI", "R_CUDA_UNUSED_CLEAR32", "R_CUDA_UNUSED_CLEAR64", "R_CUDA_ABS24_40",
	"R_CUDA_ABS55_16_34", "R_CUDA_8_0", "R_CUDA_8_8", "R_CUDA_8_16", "R_CUDA_8_24",
	"R_CUDA_8_32", "R_CUDA_8_40", "R_CUDA_8_48", "R_CUDA_8_56", "R_CUDA_G8_0",
	"R_CUDA_G8_8", "R_CUDA_G8_16", "R_CUDA_G8_24", "R_CUDA_G8_32", "R_CUDA_G8_40",
	"R_CUDA_G8_48", "R_CUDA_G8_56", "R_CUDA_FUNC_DESC_8_0", "R_CUDA_FUNC_DESC_8_8",
	"R_CUDA_FUNC_DESC_8_16", "R_CUDA_FUNC_DESC_8_24", "R_CUDA_FUNC_DESC_8_32",
	"R_CUDA_FUNC_DESC_8_40", "R_CUDA_FUNC_DESC_8_48", "R_CUDA_FUNC_DESC_8_56",
	"R_CUDA_ABS20_44", "R_CUDA_SAMP_HEADER_INDEX_0", "R_CUDA_UNIFIED", "R_CUDA_UNIFIED_32",
	"R_CUDA_UNIFIED_8_0", "R_CUDA_UNIFIED_8_8", "R_CUDA_UNIFIED_8_16", "R_CUDA_UNIFIED_8_24",
	"R_CUDA_UNIFIED_8_32", "R_CUDA_UNIFIED_8_40", "R_CUDA_UNIFIED_8_48",
	"R_CUDA_UNIFIED_8_56", "R_CUDA_UNIFIED32_LO_32", "R_CUDA_UNIFIED32_HI_32",
	"R_CUDA_ABS56_16_34", "R_CUDA_CONST_FIELD22_37",
}

// RelocationName is the name of relocation type t, as cuobjdump prints it.
func RelocationName(t uint32) string {
	if uint64(t) < uint64(len(relocationNames)) {
		return relocationNames[t]
	}
	return "R_CUDA_" + strconv.FormatUint(uint64(t), 16) + "h (unknown)"
}

// Reloc is one relocation the image's laying applies.
type Reloc struct {
	Type uint32
	// Section is the section it patches, and Offset where the image holds
	// the bytes it patches (the word of R_CUDA_32 and R_CUDA_64, the
	// instruction word of the ABS32 types).
	Section string
	Offset  uint64
	// Symbol is the symbol whose address it writes, and Addend what it
	// adds to it.
	Symbol string
	Addend int64

	target    uint64 // the symbol's offset in the image, or its value
	absolute  bool
	undefined bool
}

// Span is the bytes of the image the relocation writes: n bytes from
// offset at.
func (r Reloc) Span() (at uint64, n int) {
	switch r.Type {
	case RCuda32:
		return r.Offset, 4
	case RCuda64:
		return r.Offset, 8
	case RCudaAbs32_32, RCudaAbs32Lo32, RCudaAbs32Hi32:
		return r.Offset + 4, 4
	}
	return r.Offset, 0
}

// width is the bytes a relocation of type t needs from its offset.
func width(t uint32) (uint64, bool) {
	switch t {
	case RCudaNone:
		return 0, true
	case RCuda32:
		return 4, true
	case RCuda64, RCudaAbs32_32, RCudaAbs32Lo32, RCudaAbs32Hi32:
		return 8, true
	}
	return 0, false
}

func (c *Cubin) readRelocations(f *elfFile) error {
	for _, rs := range f.sections {
		t := elf.SectionType(rs.typ)
		if t != elf.SHT_REL && t != elf.SHT_RELA {
			continue
		}
		target := f.section(rs.info)
		if target == nil {
			return malformed("relocation section %s of section %d", rs.name, rs.info)
		}
		if !c.sections[target.index].Laid {
			if bank, kernel := bankOf(target.name); bank == 0 && rs.size > 0 {
				return malformed("%s relocates constant bank 0 of %s, which each launch stamps anew: not supported", rs.name, kernel)
			}
			continue // debugging information, which the image does not hold
		}
		if target.data == nil {
			return malformed("%s relocates %s, which has no bytes", rs.name, target.name)
		}
		if int(rs.link) != f.symtab || f.symtab == 0 {
			return malformed("%s of symbol table %d", rs.name, rs.link)
		}
		entry := uint64(relSize)
		if t == elf.SHT_RELA {
			entry = relaSize
		}
		if rs.size%entry != 0 {
			return malformed("%s of %d bytes", rs.name, rs.size)
		}
		for off := uint64(0); off < rs.size; off += entry {
			e := rs.data[off:]
			r := Reloc{Section: target.name, Type: uint32(le.Uint64(e[8:]))}
			at, sym := le.Uint64(e), le.Uint64(e[8:])>>32
			if t == elf.SHT_RELA {
				r.Addend = int64(le.Uint64(e[16:]))
			}
			if sym >= uint64(len(f.symbols)) {
				return malformed("%s: symbol %d of %d", rs.name, sym, len(f.symbols))
			}
			s := &f.symbols[sym]
			r.Symbol = s.name
			w, ok := width(r.Type)
			switch {
			case sym != 0 && s.shndx == 0:
				c.undefSyms[sym] = true
				r.undefined = true
			case !ok:
				return &RelocationError{Type: r.Type, Section: target.name, Symbol: s.name}
			case s.shndx == shnAbs || sym == 0:
				r.target, r.absolute = s.value, true
			case s.shndx >= shnLoReserve:
				return malformed("%s: symbol %s in reserved section %#x", rs.name, s.name, s.shndx)
			default:
				def := f.section(uint32(s.shndx))
				if def == nil || !c.sections[def.index].Laid {
					return malformed("%s: symbol %s lies in a section the image does not hold", rs.name, s.name)
				}
				r.target = c.sections[def.index].Offset + s.value
			}
			if at > target.size || w > target.size-at {
				return malformed("%s: relocation at %#x past %s of %d bytes", rs.name, at, target.name, target.size)
			}
			if t == elf.SHT_REL {
				switch r.Type { // the addend is in place
				case RCuda32:
					r.Addend = int64(le.Uint32(target.data[at:]))
				case RCuda64:
					r.Addend = int64(le.Uint64(target.data[at:]))
				}
			}
			if r.Type == RCudaNone {
				continue
			}
			r.Offset = c.sections[target.index].Offset + at
			c.relocs = append(c.relocs, r)
		}
	}
	return nil
}

// Relocations lists the relocations laying applies, in file order.
func (c *Cubin) Relocations() []Reloc { return append([]Reloc(nil), c.relocs...) }

// Lay is the image relocated for the address addr, Size() bytes.
func (c *Cubin) Lay(addr uint64) ([]byte, error) {
	b := make([]byte, c.size)
	if err := c.LayInto(b, addr); err != nil {
		return nil, err
	}
	return b, nil
}

// LayInto writes into dst, which holds at least Size() bytes, the image
// relocated for the address addr, which is aligned to Align() and lies with
// the image below 2^57. It refuses an image that refers to symbols it does
// not define, and returns an error wrapping ErrAddress where a 32-bit
// relocation (R_CUDA_32, R_CUDA_ABS32_32) would write a value of 2^32 or
// more, which its word cannot hold; dst's contents are then undefined.
func (c *Cubin) LayInto(dst []byte, addr uint64) error {
	if err := c.checkDefined(); err != nil {
		return err
	}
	if addr%c.align != 0 || addr >= 1<<57 || c.size > 1<<57-addr {
		return fmt.Errorf("%w: image at %#x, aligned to %d", ErrAddress, addr, c.align)
	}
	if uint64(len(dst)) < c.size {
		return fmt.Errorf("cubin: laying %d bytes into %d", c.size, len(dst))
	}
	dst = dst[:c.size]
	clear(dst)
	for _, s := range c.laid {
		if s.data != nil {
			copy(dst[c.sections[s.index].Offset:], s.data)
		}
	}
	for _, r := range c.relocs {
		v := r.target + uint64(r.Addend)
		if !r.absolute {
			v += addr
		}
		if (r.Type == RCuda32 || r.Type == RCudaAbs32_32) && v > 1<<32-1 {
			return fmt.Errorf("%w: %s of %s at %#x in %s: %#x does not fit 32 bits",
				ErrAddress, RelocationName(r.Type), r.Symbol, r.Offset, r.Section, v)
		}
		switch r.Type {
		case RCuda32:
			le.PutUint32(dst[r.Offset:], uint32(v))
		case RCuda64:
			le.PutUint64(dst[r.Offset:], v)
		case RCudaAbs32_32, RCudaAbs32Lo32:
			le.PutUint32(dst[r.Offset+4:], uint32(v))
		case RCudaAbs32Hi32:
			le.PutUint32(dst[r.Offset+4:], uint32(v>>32))
		}
	}
	return nil
}
