package hw

// GPFIFO entries mirror clc56f.h and clc86f.h (NVC56F_GP_ENTRY*,
// NVC86F_GP_ENTRY*). An entry is two 32-bit words, the first in the low
// half of the 64-bit entry:
//
//	ENTRY0  31:2  GET, bits 31:2 of the segment's address, in place
//	         0:0  FETCH (0: unconditional)
//	ENTRY1   7:0  GET_HI, bits 39:32 of the address; or OPCODE
//	         9:9  LEVEL (0: main, 1: subroutine)
//	       30:10  LENGTH, in words (0 makes a control entry)
//	        31:31 SYNC (1: wait for the engines before fetching)
//
// A control entry (LENGTH 0) of OPCODE SET_PB_SEGMENT_EXTENDED_BASE (C86F
// only) sets bits 56:40 of the later segments' addresses from its ENTRY0
// bits 24:8.

// Entry is one 64-bit GPFIFO entry.
type Entry uint64

// Level says whether a segment runs as the channel's main push buffer or
// as a subroutine that returns to it.
type Level uint8

// The levels (GP_ENTRY1_LEVEL).
const (
	Main       Level = 0
	Subroutine Level = 1
)

// GPFIFO limits and opcodes.
const (
	// MaxSegmentWords is the longest segment one entry names (LENGTH is
	// 21 bits).
	MaxSegmentWords = 1<<21 - 1
	// EntryOpNop, EntryOpExtendedBase are control entries' OPCODEs.
	EntryOpNop          = 0
	EntryOpExtendedBase = 4 // SET_PB_SEGMENT_EXTENDED_BASE
	// EntryBytes is the size of an entry.
	EntryBytes = 8
)

// Segment is the entry that runs the words words at addr, which is
// 4-aligned: the address in place (masked, not shifted) in its low 40
// bits, the length in words, the level, and sync. Bits of addr at 2^40 and
// above are left to an ExtendedBase entry before it. It does not check its
// arguments: AppendSegment does.
func Segment(addr uint64, words uint32, level Level, sync bool) Entry {
	e0 := uint32(addr) &^ 3
	e1 := uint32(addr>>32)&0xff | uint32(level&1)<<9 | (words&MaxSegmentWords)<<10
	if sync {
		e1 |= 1 << 31
	}
	return Entry(uint64(e1)<<32 | uint64(e0))
}

// ExtendedBase is the control entry that makes bits 56:40 of the later
// segments' addresses those of addr (SET_PB_SEGMENT_EXTENDED_BASE).
func ExtendedBase(addr uint64) Entry {
	e0 := uint32(addr>>40&0x1ffff) << 8
	return Entry(uint64(EntryOpExtendedBase)<<32 | uint64(e0))
}

// Words is the entry's two words, ENTRY0 then ENTRY1.
func (e Entry) Words() (entry0, entry1 uint32) { return uint32(e), uint32(e >> 32) }

// EntryOf is the entry of the two words ENTRY0 and ENTRY1.
func EntryOf(entry0, entry1 uint32) Entry { return Entry(uint64(entry1)<<32 | uint64(entry0)) }

// Address is the segment's address below 2^40.
func (e Entry) Address() uint64 { return uint64(e>>32&0xff)<<32 | uint64(uint32(e)&^3) }

// Length is the segment's length in words; 0 for a control entry.
func (e Entry) Length() uint32 { return uint32(e>>42) & MaxSegmentWords }

// Level is the segment's level.
func (e Entry) Level() Level { return Level(e >> 41 & 1) }

// Sync reports whether the channel waits for its engines before it fetches
// the segment.
func (e Entry) Sync() bool { return e>>63 != 0 }

// Control reports whether e is a control entry, and its opcode.
func (e Entry) Control() (opcode uint32, ok bool) {
	if e.Length() != 0 {
		return 0, false
	}
	return uint32(e>>32) & 0xff, true
}

// Base is an extended-base entry's bits 56:40, as an address.
func (e Entry) Base() uint64 { return uint64(uint32(e)>>8&0x1ffff) << 40 }

// AppendSegment appends the entries that run the words words at addr: an
// ExtendedBase entry first where bits 56:40 of addr differ from *base (the
// base that the ring's earlier entries left, 0 at the ring's start), which
// it updates, then the segment. It refuses an unaligned address, an
// address the generation's entries cannot reach, and an empty or too long
// segment, appending nothing.
func AppendSegment(ring []Entry, g *Generation, base *uint64, addr uint64, words uint32, level Level, sync bool) ([]Entry, error) {
	switch {
	case addr&3 != 0 || addr >= 1<<57:
		return ring, ErrAddress
	case words == 0 || words > MaxSegmentWords:
		return ring, ErrLength
	}
	if hi := addr &^ (1<<40 - 1); hi != *base {
		if !g.ExtendedBase {
			return ring, ErrAddress
		}
		ring = append(ring, ExtendedBase(addr))
		*base = hi
	}
	return append(ring, Segment(addr, words, level, sync)), nil
}

// WordsEntries is the number of ring entries a part of words, raw ring
// entries two words each, holds, or ErrOddWords.
func WordsEntries(words []uint32) (int, error) {
	if len(words)%2 != 0 {
		return 0, ErrOddWords
	}
	return len(words) / 2, nil
}
