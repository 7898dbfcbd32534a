package hw

import (
	"errors"
	"strings"
)

var (
	// ErrArch is a refusal of an architecture this package does not
	// encode for.
	ErrArch = errors.New("unsupported GPU architecture")
	// ErrMalformed is a refusal of a binary that is not a well-formed
	// cubin; the error that wraps it says where.
	ErrMalformed = errors.New("malformed cubin")
	// ErrOddWords refuses ring entries of an odd number of words: each
	// GPFIFO entry is two.
	ErrOddWords = errors.New("ring entries of an odd number of words")
	// ErrAddress refuses an address that a field cannot hold or that is not
	// aligned as the field requires.
	ErrAddress = errors.New("address out of the field's reach")
	// ErrLength refuses a segment of more words than an entry holds.
	ErrLength = errors.New("segment longer than an entry holds")
)

// UndefinedError refuses an image that refers to symbols it does not
// define, such as vprintf and __assertfail, which CUDA's driver supplies
// and an RM device does not.
type UndefinedError struct {
	// Symbols names them, sorted.
	Symbols []string
}

// Error names the symbols the cubin refers to and does not define.
func (e *UndefinedError) Error() string {
	return "cubin refers to symbols it does not define: " + strings.Join(e.Symbols, ", ") +
		" (CUDA's driver supplies them; a device without libcuda runs no such image)"
}

// RelocationError refuses a relocation this loader does not apply, naming
// its type as cuobjdump does.
type RelocationError struct {
	Type    uint32
	Section string
	Symbol  string
}

// Error names the relocation's type, its symbol and its section.
func (e *RelocationError) Error() string {
	return "cubin: relocation " + RelocationName(e.Type) + " of " + e.Symbol + " in " +
		e.Section + " is not supported"
}
