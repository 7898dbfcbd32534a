package cudadev

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A fatbin entry's header: kind (uint16) at 0, version (uint16) at 2, size
// of the header (uint32) at 4, size of the payload (uint64) at 8, then,
// among others, the architecture (uint32) at 28 and the flags (uint64) at
// 40; the payload follows the header, and the next entry the payload.
const (
	fatEntryMin   = 16     // a header's bytes up to and with its payload's size
	fatEntryArch  = 28     // the offset of the architecture, 90 for sm_90
	fatEntryFlags = 40     // the offset of the flags
	fatKindELF    = 2      // the kind of a cubin (PTX text is 1)
	fatCompressed = 0x2000 // flags: the payload is compressed, in LZ4's format
	fatZstd       = 0x8000 // flags: the payload is compressed by zstd
)

// checkImage returns an error where b, a cubin, a fatbin or PTX text, is
// shorter than its headers say: cuModuleLoadData takes no length, and
// reads as far as the headers say. A cubin passes checkCubin. A fatbin's
// header and the bytes its header counts lie within b, and each of its
// entries, header and payload, lies within those counted bytes; the
// payload of a cubin entry (kind 2) whose flags say it is not compressed
// passes checkCubin. Any other b is PTX text, which CUDA reads up to a NUL: after
// a NUL, b holds only NULs. checkImage allocates nothing where b passes,
// and takes time linear in len(b).
func checkImage(b []byte) error {
	switch {
	case bytes.HasPrefix(b, fatbinMagic):
		return checkFatbin(b)
	case bytes.HasPrefix(b, elfMagic):
		if err := checkCubin(b); err != nil {
			return fmt.Errorf("cudadev: %w", err)
		}
	default:
		// PTX text: CUDA stops at the first NUL; text after it would be
		// dropped without a word.
		if nul := bytes.IndexByte(b, 0); nul >= 0 {
			for i, c := range b[nul:] {
				if c != 0 {
					return fmt.Errorf("cudadev: PTX of %d bytes with a NUL at %d and text after it, at %d, that CUDA would not read", len(b), nul, nul+i)
				}
			}
		}
	}
	return nil
}

// checkFatbin returns an error where the fatbin b is shorter than its
// header counts, where an entry, header or payload, lies past the bytes
// the fatbin's header counts, or where the payload of an uncompressed
// cubin entry, an ELF, fails checkCubin; the error names the entry by its
// index and offset.
func checkFatbin(b []byte) error {
	le := binary.LittleEndian
	const header = 16
	if len(b) < header {
		return fmt.Errorf("cudadev: a fatbin of %d bytes, shorter than its %d-byte header", len(b), header)
	}
	hdr, fat := uint64(le.Uint16(b[6:])), le.Uint64(b[8:])
	if hdr < header || hdr > uint64(len(b)) || fat > uint64(len(b))-hdr {
		return fmt.Errorf("cudadev: a fatbin of %d bytes, whose header counts %d bytes of header and %d of images", len(b), hdr, fat)
	}
	end := hdr + fat
	for off, i := hdr, 0; off < end; i++ {
		if end-off < fatEntryMin {
			return fmt.Errorf("cudadev: a fatbin of %d bytes whose entry %d, at %d, has a header past its %d counted bytes", len(b), i, off, end)
		}
		e := b[off:end]
		size, payload := uint64(le.Uint32(e[4:])), le.Uint64(e[8:])
		if size < fatEntryMin || size > end-off {
			return fmt.Errorf("cudadev: a fatbin of %d bytes whose entry %d, at %d, has a header of %d bytes, not within %d to its %d counted bytes", len(b), i, off, size, fatEntryMin, end)
		}
		if payload > end-off-size {
			return fmt.Errorf("cudadev: a fatbin of %d bytes whose entry %d, at %d, has a payload of %d bytes past its %d counted bytes", len(b), i, off, payload, end)
		}
		if le.Uint16(e) == fatKindELF {
			// CUDA reads a cubin's flags to learn whether to
			// decompress it, and parses an uncompressed one as it
			// parses a cubin loaded alone.
			if size < fatEntryFlags+8 {
				return fmt.Errorf("cudadev: a fatbin of %d bytes whose entry %d, at %d, a cubin, has a header of %d bytes, which ends before its flags at %d", len(b), i, off, size, fatEntryFlags)
			}
			arch, flags := le.Uint32(e[fatEntryArch:]), le.Uint64(e[fatEntryFlags:])
			// A payload that is no ELF is of an encoding these
			// checks do not know (a later compression's): CUDA
			// refuses or decodes it, bounded by its entry.
			if p := e[size : size+payload]; flags&(fatCompressed|fatZstd) == 0 && bytes.HasPrefix(p, elfMagic) {
				if err := checkCubin(p); err != nil {
					return fmt.Errorf("cudadev: a fatbin of %d bytes whose entry %d (at %d, sm_%d, flags %#x) is %w", len(b), i, off, arch, flags, err)
				}
			}
		}
		off += size + payload
	}
	return nil
}

// checkCubin returns an error, which begins "a cubin of" and its length,
// where b is no little-endian 64-bit ELF, or where its header, section and
// program header tables, sections and segments do not lie within b, its
// counts read from section 0 where the header's fields overflow (extended
// numbering), or where its section of section names (e_shstrndx) is none
// of its sections, or where a section's name lies past that section. Its
// section and program headers are ELF64's, 64 and 56 bytes (e_shentsize,
// e_phentsize), as every cubin's are. A section of no bits in the file
// (SHT_NOBITS) may lie anywhere, unless it is the section of section
// names, which is read from the file whatever its type.
func checkCubin(b []byte) error {
	le := binary.LittleEndian
	within := func(off, n uint64) bool { return off <= uint64(len(b)) && n <= uint64(len(b))-off }
	table := func(off, entSize, count uint64) bool {
		return entSize > 0 && count <= uint64(len(b))/entSize && within(off, entSize*count)
	}
	const header = 64
	if !bytes.HasPrefix(b, elfMagic) {
		return fmt.Errorf("a cubin of %d bytes that is no ELF (it begins % x)", len(b), b[:min(len(b), len(elfMagic))])
	}
	if len(b) < header || b[4] != 2 {
		return fmt.Errorf("a cubin of %d bytes that is no 64-bit ELF", len(b))
	}
	if b[5] != 1 {
		return fmt.Errorf("a cubin of %d bytes that is no little-endian ELF (EI_DATA %d)", len(b), b[5])
	}
	phoff, shoff := le.Uint64(b[0x20:]), le.Uint64(b[0x28:])
	phent, phnum := uint64(le.Uint16(b[0x36:])), uint64(le.Uint16(b[0x38:]))
	shent, shnum := uint64(le.Uint16(b[0x3a:])), uint64(le.Uint16(b[0x3c:]))
	names := uint64(le.Uint16(b[0x3e:]))
	// Extended numbering: section 0 holds the count of sections where
	// e_shnum is 0 and e_shoff is set (sh_size), of segments where e_phnum
	// is PN_XNUM, 0xffff (sh_info), and the index of the section names
	// where e_shstrndx is SHN_XINDEX, 0xffff (sh_link).
	const xnum = 0xffff
	switch {
	case shnum > 0 || shoff != 0:
		if shent != 0x40 {
			return fmt.Errorf("a cubin of %d bytes whose section headers are %d bytes, not ELF64's 64", len(b), shent)
		}
		if !table(shoff, shent, 1) {
			return fmt.Errorf("a cubin of %d bytes, shorter than its ELF tables (section 0 at %d)", len(b), shoff)
		}
		sh0 := b[shoff:]
		if shnum == 0 {
			shnum = le.Uint64(sh0[0x20:])
		}
		if phnum == xnum {
			phnum = uint64(le.Uint32(sh0[0x2c:]))
		}
		if names == xnum {
			names = uint64(le.Uint32(sh0[0x28:]))
		}
	case phnum == xnum:
		return fmt.Errorf("a cubin of %d bytes whose segments are counted in section 0 (e_phnum PN_XNUM), with no sections", len(b))
	}
	if phnum > 0 && phent != 0x38 {
		return fmt.Errorf("a cubin of %d bytes whose program headers are %d bytes, not ELF64's 56", len(b), phent)
	}
	if phnum > 0 && !table(phoff, phent, phnum) ||
		shnum > 0 && !table(shoff, shent, shnum) {
		return fmt.Errorf("a cubin of %d bytes, shorter than its ELF tables (%d segments at %d, %d sections at %d)", len(b), phnum, phoff, shnum, shoff)
	}
	if shnum > 0 && names >= shnum {
		return fmt.Errorf("a cubin of %d bytes whose section names are section %d, past its %d sections", len(b), names, shnum)
	}
	for i := range shnum {
		sh := b[shoff+i*shent:]
		const nobits = 8
		// A section of no bits (SHT_NOBITS) has none in the file, but
		// the section names are read from the file whatever its type.
		if (le.Uint32(sh[4:]) != nobits || i == names) && !within(le.Uint64(sh[0x18:]), le.Uint64(sh[0x20:])) {
			return fmt.Errorf("a cubin of %d bytes, shorter than its section %d", len(b), i)
		}
	}
	if shnum > 0 {
		// Every section's name (sh_name) lies within the section names,
		// which end with a NUL, so that each name ends within them.
		nsh := b[shoff+names*shent:]
		namesOff, namesSize := le.Uint64(nsh[0x18:]), le.Uint64(nsh[0x20:])
		if namesSize == 0 || b[namesOff+namesSize-1] != 0 {
			return fmt.Errorf("a cubin of %d bytes whose section names do not end with a NUL", len(b))
		}
		for i := range shnum {
			if n := uint64(le.Uint32(b[shoff+i*shent:])); n >= namesSize {
				return fmt.Errorf("a cubin of %d bytes whose section %d's name lies at %d, past its %d bytes of section names", len(b), i, n, namesSize)
			}
		}
	}
	for i := range phnum {
		ph := b[phoff+i*phent:]
		if !within(le.Uint64(ph[0x08:]), le.Uint64(ph[0x20:])) {
			return fmt.Errorf("a cubin of %d bytes, shorter than its segment %d", len(b), i)
		}
	}
	return nil
}
