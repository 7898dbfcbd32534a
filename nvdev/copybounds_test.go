package nvdev

import (
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestRoomNeverCopyBounds refuses copies and fills that pass the end of a
// region, whose rows' bytes wrap 64 bits, or whose destination rows
// overlap, on either queue and as the driver's kernels, naming the part:
// the copy engine's launches of such a copy are counted wrongly (Room
// admitted a copy of 2^64 - 1 bytes whose Submit never ended), and the
// GPU would write past the region. Copies that end at a region's last
// byte still run.
func TestRoomNeverCopyBounds(t *testing.T) {
	r := openRaw(t, Config{})
	p := r.alloc(device.PinnedMemory, 4096)
	dm := r.alloc(device.DeviceMemory, 1<<20)
	rows := func(q int, src, dst *nvidia.Memory, so, do, n, rows, sp, dp uint64) device.Part {
		return device.Part{Kind: device.CopyRows, Queue: q, Src: src, Dst: dst, SrcOffset: so, DstOffset: do,
			RowBytes: n, Rows: rows, SrcPitch: sp, DstPitch: dp}
	}
	fill := func(dst *nvidia.Memory, do, n, rows, dp uint64) device.Part {
		return device.Part{Kind: device.CopyRows, Queue: qCopy, Dst: dst, DstOffset: do, RowBytes: n, Rows: rows,
			DstPitch: dp, Filling: true, Byte: 7}
	}
	for _, c := range []struct {
		name string
		part device.Part
		why  string
	}{
		{"a row of 2^64 - 1 bytes", rows(qCopy, p, p, 0, 0, 1<<64-1, 1, 0, 0), "past the region's 4096 bytes"},
		{"a byte past the destination", copyPart(qCopy, p, p, 0, 1, 4096), "of its destination: past"},
		{"a byte past the source", copyPart(qCompute, p, p, 1, 0, 4096), "of its source: past"},
		{"an offset that wraps", copyPart(qCopy, p, p, 0, 1<<64-8, 16), "of its destination: past"},
		{"rows past the destination", rows(qCopy, p, p, 0, 0, 8, 3, 8, 2045), "of its destination: past"},
		{"rows whose bytes wrap", fill(p, 0, 1<<31, 1<<33, 1<<31), "of its destination: past"},
		{"overlapping rows", rows(qCopy, p, p, 0, 0, 8, 2, 8, 4), "destination pitch of 4 bytes"},
		{"overlapping rows read", rows(qCopy, p, p, 0, 64, 8, 2, 4, 8), "source pitch of 4 bytes"},
		{"rows read from one place", rows(qCompute, p, p, 0, 64, 8, 3, 0, 8), "source pitch of 0 bytes"},
		{"rows of one place", fill(p, 0, 8, 1<<40, 0), "destination pitch of 0 bytes"},
		{"a kernel's copy past its destination", rows(qCopy, dm, dm, 0, 768<<10, 512<<10, 1, 0, 0), "of its destination: past the region's 1048576 bytes"},
		{"a kernel's fill past its destination", fill(dm, 1, 1<<20, 1, 0), "of its destination: past"},
		{"a nil destination", copyPart(qCopy, p, (*nvidia.Memory)(nil), 0, 0, 8), "to a region this device did not make"},
		{"a nil source", copyPart(qCopy, (*nvidia.Memory)(nil), p, 0, 0, 8), "from a region this device did not make"},
	} {
		s := device.Submission{Parts: []device.Part{fillPart(qCopy, p, 0, 8, 1), c.part}}
		a := r.room(&s)
		if a.Kind != device.RoomNever || a.Part != 1 || !strings.Contains(a.Reason, c.why) {
			t.Errorf("%s: %+v", c.name, a)
		}
	}
	// Copies that end at the last byte run.
	src := hostOf(p)
	for i := range src {
		src[i] = byte(i)
	}
	v := r.submit(nil, copyPart(qCopy, p, dm, 0, 1<<20-4096, 4096), after(rows(qCompute, dm, p, 1<<20-4096, 0, 8, 2, 4088, 4088), 0))
	r.wait(v)
	got := hostOf(p)
	for i := range 8 {
		if got[i] != byte(i) || got[4088+i] != byte(4088+i) {
			t.Fatalf("the rows read %v and %v", got[:8], got[4088:])
		}
	}
	// A fill of the whole region, as the driver's kernel, is admitted (the
	// fake runs no kernel), and a fill to the last byte runs.
	r.wait(r.submit(nil, fill(dm, 0, 1<<20, 1, 0), fill(p, 4095, 1, 1, 0)))
	if got[4095] != 7 {
		t.Errorf("the fill to the last byte left %d", got[4095])
	}
}
