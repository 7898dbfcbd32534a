package nvdev

import (
	"embed"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// The driver's own kernels (kernels/copy.cu, built by kernels/build.sh):
// rig_copy, rig_fill, rig_copy_rows and rig_fill_rows move 16-byte vectors
// in a grid-stride loop. A copy or a fill of one row (or of rows without
// gaps) of at least 256 KiB within the device's own Device memory, or of
// rows of 1 KiB or more with gaps between them, 256 KiB in all (a copy
// whose rows read and written lie apart), runs as one of them on the
// compute channel instead of the copy engine, where the device runs them:
// by default on sm_80, sm_86 and sm_89, and on sm_90, where 64 MiB took
// 35 µs by the kernel and 712 µs by the copy engine on the H200
// (docs/nvdev.md); on any GPU a cubin runs on with
// Config.CopyKernels > 0, and nowhere with Config.CopyKernels < 0. A part of COPY:0 so routed
// runs on the compute channel in its queue's order: the part before it on
// COPY:0, if on the copy channel, releases a mark the kernel's channel
// acquires, and so does the kernel for the COPY:0 part after it.

//go:embed kernels/copy.sm_80.cubin kernels/copy.sm_86.cubin kernels/copy.sm_89.cubin kernels/copy.sm_90.cubin
var kernelFS embed.FS

// kernelMin is the least bytes a copy or fill needs to run as a kernel.
const kernelMin = 256 << 10

// kernelThreads is the threads of a group of the copy kernels, and
// kernelMaxGroups the most groups of a launch (gridDim.x). A launch has a
// thread for each 16 bytes up to that: on the H200 that grid copied 64 MiB
// and 1 GiB at 1.00x and 1.01x cuMemcpyDtoDAsync's rate, where 8 groups a
// multiprocessor, in a grid-stride loop, reached 0.94x and 0.92x
// (kernels/tune, one run).
const (
	kernelThreads   = 256
	kernelMaxGroups = 1<<31 - 1
)

// copyKernels is the loaded rig_copy, rig_fill, rig_copy_rows and
// rig_fill_rows.
type copyKernels struct {
	img                            *image
	copy, fill, copyRows, fillRows *device.Entry
}

// kernelSMs is the cubins kernels/ holds.
var kernelSMs = []int{90, 89, 86, 80}

// gpuSM is the GPU's architecture as a cubin names it, such as 90.
func gpuSM(v uint32) int { return int(v>>8)*10 + int(v&0xff) }

// loadCopyKernels loads the copy kernels, where the configuration and the
// GPU run them; nil otherwise.
func (d *gpu) loadCopyKernels() (*copyKernels, error) {
	sm := gpuSM(d.rec.SMVersion)
	switch {
	case d.cfg.CopyKernels < 0:
		return nil, nil
	case d.cfg.CopyKernels == 0 && sm != 80 && sm != 86 && sm != 89 && sm != 90:
		return nil, nil
	}
	for _, k := range kernelSMs {
		if k/10 != sm/10 || k%10 > sm%10 {
			continue
		}
		b, err := kernelFS.ReadFile(fmt.Sprintf("kernels/copy.sm_%d.cubin", k))
		if err != nil {
			return nil, err
		}
		c, err := hw.Parse(b)
		if err != nil {
			return nil, err
		}
		im, err := d.layOwn(c)
		if err != nil {
			return nil, err
		}
		ks := &copyKernels{img: im.(*image)}
		if ks.copy, err = d.Entry(im, "rig_copy"); err == nil {
			if ks.fill, err = d.Entry(im, "rig_fill"); err == nil {
				if ks.copyRows, err = d.Entry(im, "rig_copy_rows"); err == nil {
					ks.fillRows, err = d.Entry(im, "rig_fill_rows")
				}
			}
		}
		if err != nil {
			_ = d.Unload(im)
			return nil, err
		}
		return ks, nil
	}
	return nil, nil
}

// ownDevice reports whether r is Device memory this device allocated.
func ownDevice(r device.Region) (*nvidia.Memory, bool) {
	m, ok := r.(*nvidia.Memory)
	return m, ok && m != nil && m.Kind == device.DeviceMemory && !m.Borrowed
}

// rowsKernelMin is the least bytes a row of a copy or fill of rows with
// gaps between them needs to run as rig_copy_rows or rig_fill_rows:
// narrower rows are the copy engine's, whose multi-line launch moves them
// about as fast.
const rowsKernelMin = 1 << 10

// asKernel reports whether copy part p runs as a copy kernel, and its
// bytes.
func (d *gpu) asKernel(p *device.Part) (uint64, bool) {
	if d.copyK == nil || p.Kind != device.CopyRows || p.Rows == 0 || p.RowBytes == 0 {
		return 0, false
	}
	hi, n := bits.Mul64(p.Rows, p.RowBytes)
	if hi != 0 || n < kernelMin {
		return 0, false
	}
	if gapped(p) && (p.RowBytes < rowsKernelMin || !p.Filling && overlap(p)) {
		return 0, false
	}
	if _, ok := ownDevice(p.Dst); !ok {
		return 0, false
	}
	if !p.Filling {
		if _, ok := ownDevice(p.Src); !ok {
			return 0, false
		}
	}
	return n, true
}

// overlap reports whether copy p's source and destination may share
// bytes: one region, the two spans of its rows meeting. The rows of a
// kernel's copy move in no order.
func overlap(p *device.Part) bool {
	if p.Src != p.Dst {
		return false
	}
	s, _ := rowsEnd(p.SrcOffset, p.Rows, p.SrcPitch, p.RowBytes)
	d, _ := rowsEnd(p.DstOffset, p.Rows, p.DstPitch, p.RowBytes)
	return p.SrcOffset < d && p.DstOffset < s
}

// gapped reports whether copy p's rows have gaps between them on either
// side.
func gapped(p *device.Part) bool {
	return p.Rows > 1 && (p.DstPitch != p.RowBytes || (!p.Filling && p.SrcPitch != p.RowBytes))
}

// kernelPart makes the launch of a copy kernel for p, of n bytes, in the
// device's scratch part.
func (w *walk) kernelPart(p *device.Part, n uint64) *device.Part {
	d, k := w.d, w.d.copyK
	kp := &d.kpart
	if gapped(p) {
		return w.rowsPart(p)
	}
	groups := min((n/16+kernelThreads-1)/kernelThreads, kernelMaxGroups)
	*kp = device.Part{Kind: device.Launch, Queue: qCompute, Groups: [3]uint32{uint32(max(groups, 1)), 1, 1},
		Threads: [3]uint32{kernelThreads, 1, 1}, Params: d.kparams[:24]}
	dst := p.Dst.(*nvidia.Memory).Address + p.DstOffset
	binary.LittleEndian.PutUint64(d.kparams[0:], dst)
	if p.Filling {
		kp.Entry = k.fill
		binary.LittleEndian.PutUint64(d.kparams[8:], uint64(fillWord(p)))
	} else {
		kp.Entry = k.copy
		binary.LittleEndian.PutUint64(d.kparams[8:], p.Src.(*nvidia.Memory).Address+p.SrcOffset)
	}
	binary.LittleEndian.PutUint64(d.kparams[16:], n)
	return kp
}

// fillWord is fill p's four bytes as they lie from a multiple of 4, as the
// fill kernels take them: a byte four times, or a fill of words' own,
// whose rows start at a multiple of 4 (checkCopy).
func fillWord(p *device.Part) uint32 {
	if p.Fill32 {
		return p.Value
	}
	return uint32(p.Byte) * 0x01010101
}

// maxGridY is the most groups a launch has along y (gridDim.y).
const maxGridY = 1<<16 - 1

// rowsPart makes the launch of rig_copy_rows or rig_fill_rows for copy
// p, whose rows have gaps between them, in the device's scratch part: a
// thread for each 16 bytes of a row along x, as kernelPart's, and a group
// row for each row along y, up to maxGridY, beyond which each strides
// over the rows.
func (w *walk) rowsPart(p *device.Part) *device.Part {
	d := w.d
	kp := &d.kpart
	groups := min((p.RowBytes/16+kernelThreads-1)/kernelThreads, kernelMaxGroups)
	*kp = device.Part{Kind: device.Launch, Queue: qCompute,
		Groups:  [3]uint32{uint32(max(groups, 1)), uint32(min(p.Rows, maxGridY)), 1},
		Threads: [3]uint32{kernelThreads, 1, 1}}
	u := func(i int, v uint64) { binary.LittleEndian.PutUint64(d.kparams[8*i:], v) }
	u(0, p.Dst.(*nvidia.Memory).Address+p.DstOffset)
	if p.Filling {
		kp.Entry, kp.Params = d.copyK.fillRows, d.kparams[:40]
		u(1, uint64(fillWord(p)))
		u(2, p.RowBytes)
		u(3, p.Rows)
		u(4, p.DstPitch)
		return kp
	}
	kp.Entry, kp.Params = d.copyK.copyRows, d.kparams[:48]
	u(1, p.Src.(*nvidia.Memory).Address+p.SrcOffset)
	u(2, p.RowBytes)
	u(3, p.Rows)
	u(4, p.DstPitch)
	u(5, p.SrcPitch)
	return kp
}
