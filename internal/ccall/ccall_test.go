//go:build !windows

// purego opens C libraries (Dlopen) on Unix systems only.

package ccall

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libc opens the C library and resolves name in it.
func libc(t testing.TB, name string) uintptr {
	t.Helper()
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Skipf("no C library: %v", err)
	}
	fn, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// TestCall formats nine values with snprintf, a variadic function of
// twelve arguments here: the first six go in registers, the rest on the
// stack. The frame holds the buffers' addresses as integers, which keep
// nothing alive nor in place: the pinner puts them on the heap and keeps
// them there for the call.
func TestCall(t *testing.T) {
	f := &Frame{Fn: libc(t, "snprintf")}
	buf := make([]byte, 256)
	format := []byte("%lx %lx %lx %lx %lx %lx %lx %lx %lx\x00")
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&buf[0])
	pin.Pin(&format[0])
	// A uintptr holds each value whole on 64-bit platforms, its low 32
	// bits on 32-bit ones, where a C long holds as many.
	var vals []uintptr
	for _, v := range []uint64{1, 0x22, 0x333, 0x4444, 0x55555, 0xdeadbeef, 0x7777777, 0x123456789, 0xfedcba9876543210} {
		vals = append(vals, uintptr(v))
	}
	f.A[0] = uintptr(unsafe.Pointer(&buf[0]))
	f.A[1] = uintptr(len(buf))
	f.A[2] = uintptr(unsafe.Pointer(&format[0]))
	copy(f.A[3:], vals)
	n := f.Call()
	want := fmt.Sprintf("%x %x %x %x %x %x %x %x %x", vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6], vals[7], vals[8])
	got := string(buf[:bytes.IndexByte(buf, 0)])
	if got != want || n != uintptr(len(want)) || f.R != n {
		t.Fatalf("snprintf wrote %q (answer %d), want %q", got, n, want)
	}
}

// TestCallAllocs checks that a call allocates nothing.
func TestCallAllocs(t *testing.T) {
	f := &Frame{Fn: libc(t, "labs")}
	f.A[0] = ^uintptr(41) // -42
	if got := f.Call(); got != 42 {
		t.Fatalf("labs(-42) = %d", got)
	}
	if n := testing.AllocsPerRun(100, func() { f.Call() }); n != 0 {
		t.Fatalf("%v allocations a call", n)
	}
}

// BenchmarkCall is a call of labs through a Frame, and through
// purego.SyscallN beside it.
func BenchmarkCall(b *testing.B) {
	fn := libc(b, "labs")
	b.Run("frame", func(b *testing.B) {
		f := &Frame{Fn: fn}
		for b.Loop() {
			f.Call()
		}
	})
	b.Run("purego", func(b *testing.B) {
		a := new([MaxArgs]uintptr)
		for b.Loop() {
			purego.SyscallN(fn, a[:1]...)
		}
	})
}
