package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestHostCopyFreedMeanwhile frees a buffer of host memory whose driver
// puts other bytes there at Free (zeros, as nvdev does for its Mapped
// memory) while an Upload or a Download copies to or from it, after the
// copy's looks at the buffer: the copy either ran on the buffer's memory
// or returns an error matching ErrFreed, never nil for bytes that went
// nowhere or came from the bytes the Free left.
func TestHostCopyFreedMeanwhile(t *testing.T) {
	for _, download := range []bool{false, true} {
		f := newFake()
		f.hostMem = true
		d := openFake(t, fmt.Sprintf("host-copy-freed-%v", download), f)
		b, err := d.Alloc(MappedMemory, 64)
		if err != nil {
			t.Fatal(err)
		}
		host := b.Bytes()
		if host == nil {
			t.Fatal("the fake's Mapped memory has no host view")
		}
		want := bytes.Repeat([]byte{7}, 64)
		copy(host, want)
		// The driver's Free leaves zeros where the buffer was.
		zero := func() { clear(host) }
		f.onFree.Store(&zero)
		hook := func() { _ = b.Free() }
		hostCopyHook.Store(&hook)
		got := make([]byte, 64)
		if download {
			err = Download(context.Background(), got, b, 0)
		} else {
			err = Upload(context.Background(), b, 0, want)
		}
		hostCopyHook.Store(nil)
		f.onFree.Store(nil)
		switch {
		case errors.Is(err, ErrFreed):
		case err != nil:
			t.Fatalf("download %v: a copy whose buffer was freed meanwhile returned %v, want nil or ErrFreed", download, err)
		case download && !bytes.Equal(got, want):
			t.Fatalf("a Download whose buffer was freed meanwhile returned nil with %v, want the buffer's bytes", got[:8])
		}
	}
}
