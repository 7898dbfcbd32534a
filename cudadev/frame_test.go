package cudadev

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestFrameZeros checks that a frame's call passes zeros past its
// arguments, as purego.SyscallN does: snprintf of "%lx" called with three
// arguments reads a fourth, which must be 0 whatever the call before left.
func TestFrameZeros(t *testing.T) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("no C library: %v", err)
	}
	snprintf, err := purego.Dlsym(h, "snprintf")
	if err != nil {
		t.Fatal(err)
	}
	f := getFrame()
	defer putFrame(f)
	buf := make([]byte, 64)
	format := []byte("%lx\x00")
	f.c.A[3] = 0xdead
	if n := f.c3(snprintf, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(unsafe.Pointer(&format[0]))); n != 1 {
		t.Fatalf("snprintf answered %d", n)
	}
	if got := string(buf[:bytes.IndexByte(buf, 0)]); got != "0" {
		t.Fatalf("the fourth argument read %q, want 0", got)
	}
}
