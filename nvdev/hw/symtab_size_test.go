package hw

import (
	"debug/elf"
	"errors"
	"strings"
	"testing"
)

// TestSymtabSizeNamed: a symbol table whose size is not a whole number of
// its 24-byte entries is refused with an error that names its size, not
// its entries' size, which is right.
func TestSymtabSizeNamed(t *testing.T) {
	syms := append(kernels(1, func(int) uint32 { return 1 })[0], 0, 0, 0, 0, 0) // 5 bytes past the last entry
	b := buildCubin([]hsec{
		{name: ".text.k", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, data: make([]byte, 256), align: 128},
		{name: ".symtab", typ: elf.SHT_SYMTAB, data: append(make([]byte, symSize), syms...), link: hStrtab, entsize: symSize, align: 8},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: []byte("\x00k\x00"), align: 1},
	})
	_, err := Inspect(b)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("a symbol table of %d bytes: %v, want ErrMalformed", 2*symSize+5, err)
	}
	if !strings.Contains(err.Error(), "53") {
		t.Errorf("a symbol table of 53 bytes: %q does not name its size", err)
	}
}
