package nvdev

import (
	"encoding/binary"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
)

// copyKernelsOn runs the driver's copy kernels on the fake, and counts
// them.
func (r *raw) copyKernelsOn(n *int) {
	k := r.d.copyK
	po := k.copy.Data.(*kfunc).l.Kernel.ParamOffset
	fo := k.fill.Data.(*kfunc).l.Kernel.ParamOffset
	ro := k.fillRows.Data.(*kfunc).l.Kernel.ParamOffset
	co := k.copyRows.Data.(*kfunc).l.Kernel.ParamOffset
	r.f.onLaunch = func(q hw.Qmd, bank []byte) {
		switch q.Program() {
		case k.copy.Code:
			dst, src, m := binary.LittleEndian.Uint64(bank[po:]), binary.LittleEndian.Uint64(bank[po+8:]), binary.LittleEndian.Uint64(bank[po+16:])
			copy(r.f.mem(dst, m), r.f.mem(src, m))
		case k.fill.Code:
			// The byte at address a is byte a % 4 of the word.
			dst, w, m := binary.LittleEndian.Uint64(bank[fo:]), binary.LittleEndian.Uint32(bank[fo+8:]), binary.LittleEndian.Uint64(bank[fo+16:])
			for i, d := 0, r.f.mem(dst, m); i < len(d); i++ {
				d[i] = byte(w >> (8 * ((dst + uint64(i)) % 4)))
			}
		case k.copyRows.Code:
			u := func(i int) uint64 { return binary.LittleEndian.Uint64(bank[co+8*i:]) }
			dst, src, m, rows, dp, sp := u(0), u(1), u(2), u(3), u(4), u(5)
			for row := range rows {
				copy(r.f.mem(dst+row*dp, m), r.f.mem(src+row*sp, m))
			}
		case k.fillRows.Code:
			u := func(i int) uint64 { return binary.LittleEndian.Uint64(bank[ro+8*i:]) }
			dst, w, m, rows, pitch := u(0), uint32(u(1)), u(2), u(3), u(4)
			for row := range rows {
				at := dst + row*pitch
				for i, d := 0, r.f.mem(at, m); i < len(d); i++ {
					d[i] = byte(w >> (8 * ((at + uint64(i)) % 4)))
				}
			}
		default:
			return
		}
		*n++
	}
}

// TestCopyKernels routes copies and fills of one row of 256 KiB or more
// within Device memory to the driver's kernels on the compute channel, in
// their queue's order, and leaves the others to the copy engine.
func TestCopyKernels(t *testing.T) {
	// The kernels by default on sm_90, and not with CopyKernels < 0.
	if r := openRaw(t, Config{CopyKernels: -1}); r.d.copyK != nil {
		t.Error("copy kernels with CopyKernels -1")
	}
	r := openRaw(t, Config{})
	if r.d.copyK == nil {
		t.Fatal("no copy kernels")
	}
	kernels := 0
	r.copyKernelsOn(&kernels)
	const n = 512 << 10
	host := r.alloc(device.PinnedMemory, n)
	a := r.alloc(device.DeviceMemory, n)
	b := r.alloc(device.DeviceMemory, n)
	src := hostOf(host)
	for i := range src {
		src[i] = byte(i * 7)
	}
	// Up by the copy engine, across by a kernel, a fill by a kernel of
	// half, down by the copy engine: four parts of COPY:0.
	r.wait(r.submit(nil,
		copyPart(qCopy, host, a, 0, 0, n),
		copyPart(qCopy, a, b, 0, 0, n),
		fillPart(qCopy, b, 0, 256<<10, 9),
		copyPart(qCopy, b, host, 0, 0, n)))
	if kernels != 2 {
		t.Errorf("%d kernels ran, want 2", kernels)
	}
	for i, x := range hostOf(host) {
		want := byte(i * 7)
		if i < 256<<10 {
			want = 9
		}
		if x != want {
			t.Fatalf("byte %d is %d, want %d", i, x, want)
		}
	}
	// A fill of four-byte words by a kernel, from byte 4 of b.
	fw := fillPart(qCopy, b, 4, 256<<10, 0)
	fw.Fill32, fw.Value = true, 0xa1b2c3d4
	r.wait(r.submit(nil, fw, copyPart(qCopy, b, host, 0, 0, n)))
	if kernels != 3 {
		t.Errorf("%d kernels ran, want 3", kernels)
	}
	for i, x := range hostOf(host)[:4+256<<10+4] {
		want := [4]byte{0xd4, 0xc3, 0xb2, 0xa1}[i%4]
		switch {
		case i < 4:
			want = 9
		case i >= 4+256<<10:
			want = byte(i * 7)
		}
		if x != want {
			t.Fatalf("byte %d of the fill of words is %#x, want %#x", i, x, want)
		}
	}
	// A fill of rows of 1 KiB or more with gaps between them, 256 KiB in
	// all, by rig_fill_rows; of narrower rows, by the copy engine.
	clear(hostOf(host))
	gap := fillPart(qCopy, a, 3, 4099, 0x5c)
	gap.Rows, gap.DstPitch = 64, 8192
	narrow := fillPart(qCopy, a, 7, 1000, 0x6d)
	narrow.Rows, narrow.DstPitch = 300, 1024
	r.wait(r.submit(nil, copyPart(qCopy, host, a, 0, 0, n), gap, copyPart(qCopy, a, b, 0, 0, n), narrow, copyPart(qCopy, a, host, 0, 0, n)))
	if kernels != 5 {
		t.Errorf("%d kernels ran, want 5 (the fill of wide rows and the copy across)", kernels)
	}
	for i, x := range hostOf(host) {
		want := byte(0)
		if k := (i - 3) % 8192; i >= 3 && i < 3+64*8192 && k < 4099 {
			want = 0x5c
		}
		if k := (i - 7) % 1024; i >= 7 && i < 7+300*1024 && k < 1000 {
			want = 0x6d
		}
		if x != want {
			t.Fatalf("byte %d after the fills of rows is %#x, want %#x", i, x, want)
		}
	}
	// Below 256 KiB, or with Pinned memory, the copy engine.
	r.wait(r.submit(nil, copyPart(qCopy, a, b, 0, 0, 256<<10-1), copyPart(qCompute, host, a, 0, 0, n)))
	if kernels != 5 {
		t.Errorf("%d kernels ran, want 5", kernels)
	}
	// A value of COMPUTE:0 whose last part is a kernel's copy has it
	// release the value.
	own := r.f.ownReleases
	r.wait(r.submit(nil, copyPart(qCompute, a, b, 0, 0, n)))
	want := own
	if ownRelease.on {
		want++
	}
	if kernels != 6 || r.f.ownReleases != want {
		t.Errorf("%d kernels, %d own releases", kernels, r.f.ownReleases-own)
	}
}

// TestCopyRowsKernel copies rows of 1 KiB or more with gaps between them,
// 256 KiB in all, by rig_copy_rows: between two regions, and within one
// where the spans of the rows read and written do not meet; where they
// meet, the copy engine copies them.
func TestCopyRowsKernel(t *testing.T) {
	r := openRaw(t, Config{})
	kernels := 0
	r.copyKernelsOn(&kernels)
	const n = 1 << 20
	host := r.alloc(device.PinnedMemory, n)
	a := r.alloc(device.DeviceMemory, n)
	b := r.alloc(device.DeviceMemory, n)
	src := hostOf(host)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	want := append([]byte(nil), src...)
	src = append([]byte(nil), src...) // a's bytes
	r.wait(r.submit(nil, copyPart(qCopy, host, a, 0, 0, n), copyPart(qCopy, host, b, 0, 0, n)))
	before := kernels
	rows := func(src, dst device.Region, so, do, rowBytes, rows, sp, dp uint64) device.Part {
		return device.Part{Kind: device.CopyRows, Queue: qCopy, Src: src, Dst: dst, SrcOffset: so, DstOffset: do,
			RowBytes: rowBytes, Rows: rows, SrcPitch: sp, DstPitch: dp}
	}
	// apply copies the rows in want, b's bytes, from from (a's, or b's
	// as they were): no row read is one written.
	apply := func(from []byte, so, do, rowBytes, nrows, sp, dp uint64) {
		from = append([]byte(nil), from...)
		for i := range nrows {
			copy(want[do+i*dp:do+i*dp+rowBytes], from[so+i*sp:so+i*sp+rowBytes])
		}
	}
	// a to b; then within b, rows from its first half to its second.
	r.wait(r.submit(nil, rows(a, b, 5, 3, 4100, 64, 4200, 8192), rows(b, b, 0, n/2, 2048, 128, 4096, 4000)))
	if kernels-before != 2 {
		t.Errorf("%d kernels ran, want 2", kernels-before)
	}
	apply(src, 5, 3, 4100, 64, 4200, 8192)
	apply(want, 0, n/2, 2048, 128, 4096, 4000)
	// Within b, rows whose spans meet: the copy engine.
	r.wait(r.submit(nil, rows(b, b, 0, 4096, 2048, 128, 8192, 8192)))
	if kernels-before != 2 {
		t.Errorf("%d kernels ran, want 2: rows whose spans meet went to a kernel", kernels-before)
	}
	apply(want, 0, 4096, 2048, 128, 8192, 8192)
	r.wait(r.submit(nil, copyPart(qCopy, b, host, 0, 0, n)))
	for i, x := range hostOf(host) {
		if x != want[i] {
			t.Fatalf("byte %d is %#x, want %#x", i, x, want[i])
		}
	}
}
