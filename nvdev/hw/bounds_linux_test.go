//go:build linux && !(386 || arm || mips || mipsle)

package hw

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestDecodePast2To32Words decodes a push buffer of more than 2^32 words
// (addresses reserved, only the first page touched): a header near its
// start announces its data words against all the words that follow, not
// their count cut to 32 bits, which would refuse the header.
func TestDecodePast2To32Words(t *testing.T) {
	const n = 1<<32 + 2 // words; 1<<32 + 1 follow the first header
	b, err := syscall.Mmap(-1, 0, 4*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("no 16 GiB of addresses to reserve: %v", err)
	}
	defer func() { _ = syscall.Munmap(b) }()
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	words[0] = Inc(SubCompute, 0x200, 5)
	for i := 1; i <= 5; i++ {
		words[i] = uint32(i)
	}
	words[6] = 7 << 29 // a SEC_OP Decode refuses, which ends it there
	w, err := Decode(words)
	if len(w) != 5 || err == nil || !strings.Contains(err.Error(), "SEC_OP") {
		t.Fatalf("Decode made %d writes and answered %v; want the header's 5 writes, then a refusal of word 6", len(w), err)
	}
	for i, x := range w {
		if x.Method != 0x200+4*uint32(i) || x.Value != uint32(i+1) {
			t.Errorf("write %d: %+v", i, x)
		}
	}
}
