package rig_test

import (
	"context"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestUnusedBufferIndex: a buffer given to Submit at an index that no
// part's ref names is no buffer of the work, as one given past the last
// index is: a nil or freed buffer there is no error, and the work records
// no use of it, so that its Free and an Upload to it wait for nothing.
func TestUnusedBufferIndex(t *testing.T) {
	ctx := context.Background()
	d := host(t, hostdev.Config{})
	twice := fn(t, d, "twice")
	freed := alloc(t, d, device.PinnedMemory, 64)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		parts []rig.Part
		// unused is the buffer given at index 1, which no ref names;
		// nil gives a nil buffer.
		unused func() *rig.Buffer
	}{
		{"a buffer", []rig.Part{rig.Copy(0, 0, 2, 0, 64)}, func() *rig.Buffer { return alloc(t, d, device.PinnedMemory, 64) }},
		{"nil", []rig.Part{rig.Copy(0, 0, 2, 0, 64)}, func() *rig.Buffer { return nil }},
		{"a freed buffer", []rig.Part{rig.Copy(0, 0, 2, 0, 64)}, func() *rig.Buffer { return freed }},
		{"a buffer, two queues", []rig.Part{rig.Copy(0, 0, 2, 0, 64), rig.Launch(twice, 8, rig.ReadWrite(2, 0))}, func() *rig.Buffer { return alloc(t, d, device.PinnedMemory, 64) }},
		{"nil, two queues", []rig.Part{rig.Copy(0, 0, 2, 0, 64), rig.Launch(twice, 8, rig.ReadWrite(2, 0))}, func() *rig.Buffer { return nil }},
		{"a freed buffer, two queues", []rig.Part{rig.Copy(0, 0, 2, 0, 64), rig.Launch(twice, 8, rig.ReadWrite(2, 0))}, func() *rig.Buffer { return freed }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := alloc(t, d, device.PinnedMemory, 64)
			y := alloc(t, d, device.PinnedMemory, 64)
			for i := range x.Bytes() {
				x.Bytes()[i] = byte(i)
			}
			u := c.unused()
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked: %v", p)
					}
				}()
				if _, err := sub(t, d, c.parts...).Take().Do(ctx, x, u, y); err != nil {
					t.Fatalf("a submission given %s at an index no ref names: %v", c.name, err)
				}
			}()
			if y.Bytes()[5] != 5 {
				t.Fatalf("the copy did not run: byte 5 is %d", y.Bytes()[5])
			}
			if u != nil && u.LastUse().Device() != nil {
				t.Fatalf("the work recorded a use, at %d, of a buffer no part uses", u.LastUse().Value())
			}
		})
	}
	stillWorks(t, d)
}
