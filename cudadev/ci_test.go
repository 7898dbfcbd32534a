package cudadev

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/internal/testutil"
)

// Tests that need no GPU and no libcuda: they run in CI.

func TestErrorFormat(t *testing.T) {
	e := &Error{Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Text: "an illegal memory access was encountered"}
	if got, want := e.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !e.Fault() {
		t.Fatal("an illegal address is not a fault")
	}
	if got := (&Error{Code: 2}).Error(); got != "CUDA error 2" {
		t.Fatalf("an error without CUDA's names prints %q", got)
	}
	if (&Error{Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}).Fault() {
		t.Fatal("out of memory is a fault")
	}
	if !errors.Is(e, &Error{Code: 700}) || errors.Is(e, &Error{Code: 716}) {
		t.Fatal("errors.Is does not match by code")
	}
	// Without a library, err still returns the code.
	var nilTable *table
	if got := nilTable.err(errMisalignedAddress).Error(); got != "CUDA error 716" {
		t.Fatalf("err without libcuda = %q", got)
	}
	for _, r := range []result{errIllegalAddress, errMisalignedAddress, errLaunchFailed, errIllegalInstruction, errAssert} {
		if !r.sticky() {
			t.Errorf("CUresult %d is not sticky", r)
		}
	}
	for _, r := range []result{errInvalidValue, errOutOfMemory, errNotReady, errHostAlreadyRegister} {
		if r.sticky() {
			t.Errorf("CUresult %d is sticky", r)
		}
	}
}

func TestParamLimit(t *testing.T) {
	for _, c := range []struct {
		end, major, minor int
		ok                bool
	}{
		{32008, 9, 0, true}, {32764, 7, 0, true}, {32765, 9, 0, false},
		{4096, 6, 1, true}, {4097, 6, 1, false}, {4008, 5, 2, true}, {32008, 6, 0, false},
	} {
		err := checkParams("k", c.end, c.major, c.minor)
		if (err == nil) != c.ok {
			t.Errorf("%d bytes on %d.%d: %v", c.end, c.major, c.minor, err)
		}
		if err != nil && !strings.Contains(err.Error(), "parameter bytes") {
			t.Errorf("the refusal does not say why: %v", err)
		}
	}
	if ParamLimit(7) != 32764 || ParamLimit(6) != 4096 {
		t.Fatal("ParamLimit")
	}
}

// TestStructLayouts checks the structs against cuda.h's layout on 64-bit
// Linux.
func TestStructLayouts(t *testing.T) {
	var c2 memcpy2D
	var c3 memcpy3D
	var ms memsetParams
	var kn kernelNodeParams
	var op batchOp
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof(CUDA_MEMCPY2D)", unsafe.Sizeof(c2), 128},
		{"CUDA_MEMCPY2D.srcMemoryType", unsafe.Offsetof(c2.srcMemoryType), 16},
		{"CUDA_MEMCPY2D.srcDevice", unsafe.Offsetof(c2.srcDevice), 32},
		{"CUDA_MEMCPY2D.srcPitch", unsafe.Offsetof(c2.srcPitch), 48},
		{"CUDA_MEMCPY2D.dstMemoryType", unsafe.Offsetof(c2.dstMemoryType), 72},
		{"CUDA_MEMCPY2D.dstDevice", unsafe.Offsetof(c2.dstDevice), 88},
		{"CUDA_MEMCPY2D.dstPitch", unsafe.Offsetof(c2.dstPitch), 104},
		{"CUDA_MEMCPY2D.WidthInBytes", unsafe.Offsetof(c2.widthInBytes), 112},
		{"sizeof(CUDA_MEMCPY3D)", unsafe.Sizeof(c3), 200},
		{"CUDA_MEMCPY3D.srcMemoryType", unsafe.Offsetof(c3.srcMemoryType), 32},
		{"CUDA_MEMCPY3D.srcDevice", unsafe.Offsetof(c3.srcDevice), 48},
		{"CUDA_MEMCPY3D.srcPitch", unsafe.Offsetof(c3.srcPitch), 72},
		{"CUDA_MEMCPY3D.dstMemoryType", unsafe.Offsetof(c3.dstMemoryType), 120},
		{"CUDA_MEMCPY3D.dstDevice", unsafe.Offsetof(c3.dstDevice), 136},
		{"CUDA_MEMCPY3D.dstPitch", unsafe.Offsetof(c3.dstPitch), 160},
		{"CUDA_MEMCPY3D.WidthInBytes", unsafe.Offsetof(c3.widthInBytes), 176},
		{"CUDA_MEMCPY3D.Depth", unsafe.Offsetof(c3.depth), 192},
		{"sizeof(CUDA_MEMSET_NODE_PARAMS)", unsafe.Sizeof(ms), 40},
		{"CUDA_MEMSET_NODE_PARAMS.value", unsafe.Offsetof(ms.value), 16},
		{"CUDA_MEMSET_NODE_PARAMS.width", unsafe.Offsetof(ms.width), 24},
		{"sizeof(CUDA_KERNEL_NODE_PARAMS_v2)", unsafe.Sizeof(kn), 72},
		{"CUDA_KERNEL_NODE_PARAMS_v2.sharedMemBytes", unsafe.Offsetof(kn.sharedMemBytes), 32},
		{"CUDA_KERNEL_NODE_PARAMS_v2.kernelParams", unsafe.Offsetof(kn.kernelParams), 40},
		{"CUDA_KERNEL_NODE_PARAMS_v2.extra", unsafe.Offsetof(kn.extra), 48},
		{"CUDA_KERNEL_NODE_PARAMS_v2.ctx", unsafe.Offsetof(kn.kernCtx), 64},
		{"sizeof(CUstreamBatchMemOpParams)", unsafe.Sizeof(op), 48},
		{"waitValue.address", unsafe.Offsetof(op.address), 8},
		{"waitValue.value64", unsafe.Offsetof(op.value64), 16},
		{"waitValue.flags", unsafe.Offsetof(op.flags), 24},
		{"waitValue.alias", unsafe.Offsetof(op.alias), 32},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
}

// geq is CU_STREAM_WAIT_VALUE_GEQ on a 64-bit word as cuda.h states it:
// "(int64_t)(*addr - value) >= 0 ... a cyclic comparison which ignores
// wraparound".
func geq(word, value uint64) bool { return int64(word-value) >= 0 }

// TestWaitCircular checks that the waits the driver encodes compare in
// circular order (device.AtLeast), across the wrap of 64-bit values.
func TestWaitCircular(t *testing.T) {
	const top = ^uint64(0)
	for _, c := range [][2]uint64{
		{5, 3}, {3, 5}, {0, top}, {top, 0}, {2, top - 1}, {top - 1, 2},
		{1 << 63, 0}, {0, 1 << 63}, {1<<63 - 1, 0}, {7, 7},
	} {
		if geq(c[0], c[1]) != device.AtLeast(c[0], c[1]) {
			t.Errorf("word %#x, value %#x: GEQ %v, AtLeast %v", c[0], c[1], geq(c[0], c[1]), device.AtLeast(c[0], c[1]))
		}
	}
	var op batchOp
	op.alias = 99
	op.setWait(0x1000, 42)
	if op.operation != memOpWaitValue64 || op.flags != waitValueGEQ || op.address != 0x1000 || op.value64 != 42 || op.alias != 0 {
		t.Fatalf("setWait made %+v", op)
	}
}

func TestOpenerNames(t *testing.T) {
	if n := GPU(0).Name; n != "CUDA" {
		t.Errorf("GPU(0) is named %q", n)
	}
	if n := GPU(3).Name; n != "CUDA:3" {
		t.Errorf("GPU(3) is named %q", n)
	}
	for _, c := range []struct {
		i, k int
		want string
	}{
		{0, 0, "CUDA"}, {0, 1, "CUDA/1"}, {3, 0, "CUDA:3"}, {3, 2, "CUDA:3/2"},
	} {
		if n := Timeline(c.i, c.k).Name; n != c.want {
			t.Errorf("Timeline(%d, %d) is named %q, want %q", c.i, c.k, n, c.want)
		}
	}
	for _, f := range []func(){func() { GPU(-1) }, func() { Timeline(0, -1) }, func() { Timeline(-1, 0) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a negative GPU or timeline did not panic")
				}
			}()
			f()
		}()
	}
}

func TestBusOrder(t *testing.T) {
	if got := normalBus("00000000:41:00.0"); got != "0000:41:00.0" {
		t.Errorf("normalBus = %q", got)
	}
	if got := normalBus("0000:C1:00.0"); got != "0000:c1:00.0" {
		t.Errorf("normalBus = %q", got)
	}
	// A domain past ffff (Intel's VMD numbers its domains from 10000)
	// keeps its digits, as /sys/bus/pci/devices names it, and sorts
	// after the four-digit domains.
	for in, want := range map[string]string{
		"00010000:01:00.0": "10000:01:00.0",
		"10000:01:00.0":    "10000:01:00.0",
		"0000A000:01:00.0": "a000:01:00.0",
		"00000001:01:00.0": "0001:01:00.0",
	} {
		if got := normalBus(in); got != want {
			t.Errorf("normalBus(%q) = %q, want %q", in, got, want)
		}
	}
	l := []*gpuInfo{{ordinal: 0, bus: "0000:c1:00.0"}, {ordinal: 1, bus: "0000:41:00.0"}, {ordinal: 2, bus: "0000:81:00.0"},
		{ordinal: 3, bus: "10000:01:00.0"}, {ordinal: 4, bus: "a000:01:00.0"}}
	sortByBus(l)
	for i, want := range []int{1, 2, 0, 4, 3} {
		if l[i].ordinal != want {
			t.Fatalf("GPU %d is CUDA's %d, want %d", i, l[i].ordinal, want)
		}
	}
	if !busAddress.MatchString("0000:41:00.0") || busAddress.MatchString("41:00.0") || busAddress.MatchString("zz") {
		t.Fatal("busAddress")
	}
}

// TestNoLibrary runs where no libcuda is: Count returns an error, not a
// panic, and tries to load the library again at the next call.
func TestNoLibrary(t *testing.T) {
	if testutil.GPU() {
		t.Skip("RIG_GPU set: the library is there")
	}
	libMu.Lock()
	have := lib != nil
	before := loads
	libMu.Unlock()
	if have {
		t.Skip("libcuda is loaded")
	}
	n, err := Count()
	if err == nil {
		t.Skipf("libcuda loaded here and sees %d GPUs", n)
	}
	if !strings.Contains(err.Error(), "CUDA") {
		t.Errorf("the error does not name CUDA: %v", err)
	}
	if _, err := Buses(); err == nil {
		t.Fatal("Buses answered no error")
	}
	if _, err := GPU(0).Make(new(uint64)); err == nil {
		t.Fatal("make answered no error")
	}
	libMu.Lock()
	after := loads
	libMu.Unlock()
	if after-before != 3 {
		t.Fatalf("%d loads for three calls: a failed load is not tried again", after-before)
	}
	t.Log(err)
}

// fakeGPU is a device with an H200's limits and no CUDA, for Room.
func fakeGPU() *gpu {
	return &gpu{maxBlock: [3]uint32{1024, 1024, 64}, maxGrid: [3]uint32{1<<31 - 1, 65535, 65535}, maxThreads: 1024}
}

func TestRoomRefusals(t *testing.T) {
	d := fakeGPU()
	k := &kernel{fn: 1, threads: 256, shared: 1000, params: 8}
	e := &device.Entry{Name: "k", Params: 8, Threads: 256, Shared: 1000, Data: k}
	launch := func(mod func(p *device.Part)) device.Part {
		p := device.Part{Kind: device.Launch, Entry: e, Groups: [3]uint32{1, 1, 1}, Threads: [3]uint32{32, 1, 1}, Params: make([]byte, 8)}
		if mod != nil {
			mod(&p)
		}
		return p
	}
	dst := &region{kind: devMem, size: 100}
	for _, c := range []struct {
		name string
		p    device.Part
		why  string // "" for ok
	}{
		{"ok", launch(nil), ""},
		{"queue 1", launch(func(p *device.Part) { p.Queue = 1 }), "COPY:0"},
		{"0 groups", launch(func(p *device.Part) { p.Groups[1] = 0 }), "0 groups along axis y"},
		{"0 threads", launch(func(p *device.Part) { p.Threads[2] = 0 }), "0 threads along axis z"},
		{"grid", launch(func(p *device.Part) { p.Groups[1] = 65536 }), "MAX_GRID_DIM_Y"},
		{"block", launch(func(p *device.Part) { p.Threads[0] = 2048 }), "MAX_BLOCK_DIM_X"},
		{"threads", launch(func(p *device.Part) { p.Threads = [3]uint32{32, 16, 1} }), "512 threads per group, more than the 256"},
		{"shared", launch(func(p *device.Part) { p.Shared = 1001 }), "1001 bytes of dynamic shared memory"},
		{"params", launch(func(p *device.Part) { p.Params = p.Params[:4] }), "4 parameter bytes"},
		{"foreign", launch(func(p *device.Part) { p.Entry = &device.Entry{Name: "x"} }), "no CUDA device loaded"},
		{"words", device.Part{Kind: device.Words}, "not words parts"},
		{"fill", device.Part{Kind: device.Fill, FillFn: "f"}, "C function pointer"},
		{"null fill", device.Part{Kind: device.Fill, FillFn: uintptr(0)}, "null function"},
		{"queue 2", device.Part{Kind: device.Fill, Queue: 2, FillFn: uintptr(1)}, "no queue 2"},
		{"copy past end", device.Part{Kind: device.CopyRows, Dst: dst, Filling: true, RowBytes: 60, Rows: 2, DstPitch: 60}, "up to 120"},
		{"copy pitch", device.Part{Kind: device.CopyRows, Dst: dst, Filling: true, RowBytes: 30, Rows: 2, DstPitch: 20}, "pitch of 20"},
		{"copy ok", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Src: dst, RowBytes: 30, Rows: 2, DstPitch: 40, SrcPitch: 50}, ""},
		{"copy foreign", device.Part{Kind: device.CopyRows, Dst: "x", RowBytes: 1, Rows: 1}, "region of no CUDA device"},
		// Ends that wrap past 2^64 to a byte inside the region.
		{"fill offset wraps", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Filling: true, DstOffset: 1<<64 - 8, RowBytes: 16, Rows: 1, DstPitch: 16}, "past 2^64"},
		{"fill pitch wraps", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Filling: true, RowBytes: 8, Rows: 3, DstPitch: 1 << 63}, "past 2^64"},
		{"fill rows wrap", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Filling: true, RowBytes: 8, Rows: 1<<61 + 1, DstPitch: 8}, "past 2^64"},
		{"copy source wraps", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Src: dst, SrcOffset: 1<<64 - 4, RowBytes: 8, Rows: 1, DstPitch: 8, SrcPitch: 8}, "of its source: past 2^64"},
		{"copy source pitch wraps", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Src: dst, RowBytes: 8, Rows: 2, DstPitch: 8, SrcPitch: 1<<64 - 4}, "of its source: past 2^64"},
		{"copy ending at the region's end", device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, Src: dst, DstOffset: 80, SrcOffset: 0, RowBytes: 10, Rows: 2, DstPitch: 10, SrcPitch: 90}, ""},
		// Kernels that require clusters of groups (__cluster_dims__).
		{"clusters of 2 along x, 4 groups", launch(func(p *device.Part) {
			p.Entry = &device.Entry{Name: "c", Params: 8, Threads: 256, Data: &kernel{fn: 2, threads: 256, params: 8, cluster: [3]uint32{2, 1, 1}}}
			p.Groups = [3]uint32{4, 3, 1}
		}), ""},
		{"clusters of 2 along x, 3 groups", launch(func(p *device.Part) {
			p.Entry = &device.Entry{Name: "c", Params: 8, Threads: 256, Data: &kernel{fn: 2, threads: 256, params: 8, cluster: [3]uint32{2, 1, 1}}}
			p.Groups = [3]uint32{3, 1, 1}
		}), `3 groups along axis x, not a multiple of the 2 of the clusters "c" requires`},
		{"clusters of 2 along z, 1 group", launch(func(p *device.Part) {
			p.Entry = &device.Entry{Name: "c", Params: 8, Threads: 256, Data: &kernel{fn: 2, threads: 256, params: 8, cluster: [3]uint32{1, 1, 2}}}
		}), "1 groups along axis z"},
		{"a cluster size at launch", launch(func(p *device.Part) {
			p.Entry = &device.Entry{Name: "c", Params: 8, Threads: 256, Data: &kernel{fn: 2, threads: 256, params: 8, clusterAtLaunch: true}}
		}), "cluster size set at its launch"},
	} {
		s := device.Submission{Value: 1, Parts: []device.Part{launch(nil), c.p}}
		a := d.Room(&s)
		if c.why == "" {
			if a.Kind != device.RoomOK {
				t.Errorf("%s: refused: %s", c.name, a.Reason)
			}
			continue
		}
		if a.Kind != device.RoomNever || a.Part != 1 || !strings.Contains(a.Reason, c.why) {
			t.Errorf("%s: answered %+v, want a refusal of part 1 naming %q", c.name, a, c.why)
		}
	}
	after := device.Submission{Parts: []device.Part{launch(func(p *device.Part) { p.After = 1 })}}
	if a := d.Room(&after); a.Kind != device.RoomNever || a.Part != 0 {
		t.Errorf("a part after itself: %+v", a)
	}
	w := uint64(0)
	waits := device.Submission{Waits: []device.Wait{{Word: &w, Value: 1}}}
	if a := d.Room(&waits); a.Kind != device.RoomNever || a.Part != -1 {
		t.Errorf("a wait on a word the GPU does not map: %+v", a)
	}
}

// TestRoomAllocs checks that Room allocates nothing on parts it accepts.
func TestRoomAllocs(t *testing.T) {
	d := fakeGPU()
	k := &kernel{fn: 1, threads: 256, shared: 1000, params: 8}
	e := &device.Entry{Name: "k", Params: 8, Threads: 256, Data: k}
	s := device.Submission{Value: 1, Parts: []device.Part{
		{Kind: device.Launch, Entry: e, Groups: [3]uint32{4, 1, 1}, Threads: [3]uint32{32, 1, 1}, Params: make([]byte, 8)},
		{Kind: device.Fill, Queue: 1, FillFn: uintptr(5)},
	}}
	if n := testing.AllocsPerRun(100, func() { d.Room(&s) }); n != 0 {
		t.Fatalf("Room allocates %v times", n)
	}
}

// TestCheckImage: the images the tests load pass, and a cubin or fatbin
// cut short of what its headers count is refused before CUDA reads it.
func TestCheckImage(t *testing.T) {
	fat := testkernels.Fatbin()
	cubin, ok := testkernels.Cubin("sm_90")
	if !ok {
		t.Fatal("no sm_90 cubin")
	}
	for _, c := range []imageCase{
		{"fatbin", fat, ""},
		{"cubin", cubin, ""},
		{"ptx", testkernels.PTX(), ""},
		{"portable ptx", testkernels.Portable(), ""},
		{"fatbin magic alone", fat[:4], "shorter than its 16-byte header"},
		{"fatbin header alone", fat[:16], "whose header counts"},
		{"fatbin less a byte", fat[:len(fat)-1], "whose header counts"},
		{"cubin magic alone", cubin[:4], "no 64-bit ELF"},
		{"cubin header alone", cubin[:64], "shorter than its ELF tables"},
		{"cubin less a byte", cubin[:len(cubin)-1], "shorter than its ELF tables"},
		{"cubin half", cubin[:len(cubin)/2], "shorter than its ELF tables"},
		{"32-bit ELF", append(append([]byte(nil), cubin[:4]...), append([]byte{1}, make([]byte, 59)...)...), "no 64-bit ELF"},
	} {
		c.check(t)
	}
	// A cubin whose section lies past its end, with its tables in place.
	short := append([]byte(nil), cubin...)
	shoff := binary.LittleEndian.Uint64(short[0x28:])
	shent := uint64(binary.LittleEndian.Uint16(short[0x3a:]))
	for i := uint64(1); i < uint64(binary.LittleEndian.Uint16(short[0x3c:])); i++ {
		if sh := short[shoff+i*shent:]; binary.LittleEndian.Uint32(sh[4:]) != 8 {
			binary.LittleEndian.PutUint64(sh[0x20:], uint64(len(short)))
			break
		}
	}
	if err := checkImage(short); err == nil || !strings.Contains(err.Error(), "shorter than its section") {
		t.Errorf("a section past the end: %v", err)
	}
	// A cubin whose section names are a section past its table, whose
	// header lies past the cubin's end (e_shstrndx).
	for _, names := range []uint16{binary.LittleEndian.Uint16(cubin[0x3c:]), 0x7fff} {
		bad := append([]byte(nil), cubin...)
		binary.LittleEndian.PutUint16(bad[0x3e:], names)
		if err := checkImage(bad); err == nil || !strings.Contains(err.Error(), "section names") {
			t.Errorf("section names in section %d: %v", names, err)
		}
	}
}

// TestCheckImageELF: a cubin that is no little-endian ELF is refused, and
// one that keeps its counts in section 0 (extended numbering) is checked
// against those counts.
func TestCheckImageELF(t *testing.T) {
	cubin, ok := testkernels.Cubin("sm_90")
	if !ok {
		t.Fatal("no sm_90 cubin")
	}
	le := binary.LittleEndian
	shoff := le.Uint64(cubin[0x28:])
	phnum, shnum := le.Uint16(cubin[0x38:]), le.Uint16(cubin[0x3c:])
	// edit returns a copy of cubin with f applied, f given the copy and
	// its section 0.
	edit := func(f func(b, sh0 []byte)) []byte {
		b := append([]byte(nil), cubin...)
		f(b, b[shoff:])
		return b
	}
	for _, c := range []imageCase{
		{"big-endian", edit(func(b, _ []byte) { b[5] = 2 }), "no little-endian ELF"},
		{"no EI_DATA", edit(func(b, _ []byte) { b[5] = 0 }), "no little-endian ELF"},
		{"sections counted in section 0", edit(func(b, sh0 []byte) {
			le.PutUint16(b[0x3c:], 0)
			le.PutUint64(sh0[0x20:], uint64(shnum))
		}), ""},
		{"section 0 counts sections past the end", edit(func(b, sh0 []byte) {
			le.PutUint16(b[0x3c:], 0)
			le.PutUint64(sh0[0x20:], uint64(shnum)+1000)
		}), "shorter than its ELF tables"},
		{"section 0 counts 2^62 sections", edit(func(b, sh0 []byte) {
			le.PutUint16(b[0x3c:], 0)
			le.PutUint64(sh0[0x20:], 1<<62)
		}), "shorter than its ELF tables"},
		{"sections counted in section 0, past the end", edit(func(b, _ []byte) {
			le.PutUint16(b[0x3c:], 0)
			le.PutUint64(b[0x28:], uint64(len(b))-0x20)
		}), "shorter than its ELF tables (section 0"},
		{"section names in section 0", edit(func(b, sh0 []byte) {
			le.PutUint32(sh0[0x28:], uint32(le.Uint16(b[0x3e:])))
			le.PutUint16(b[0x3e:], 0xffff)
		}), ""},
		{"section names in section 0, past the sections", edit(func(b, sh0 []byte) {
			le.PutUint16(b[0x3c:], 0)
			le.PutUint64(sh0[0x20:], uint64(shnum))
			le.PutUint32(sh0[0x28:], uint32(shnum))
			le.PutUint16(b[0x3e:], 0xffff)
		}), "section names are section"},
		{"segments counted in section 0", edit(func(b, sh0 []byte) {
			le.PutUint16(b[0x38:], 0xffff)
			le.PutUint32(sh0[0x2c:], uint32(phnum))
		}), ""},
		{"section 0 counts segments past the end", edit(func(b, sh0 []byte) {
			le.PutUint16(b[0x38:], 0xffff)
			le.PutUint32(sh0[0x2c:], uint32(phnum)+100000)
		}), "shorter than its ELF tables"},
		{"section names of no bits, past the end", edit(func(b, _ []byte) {
			sh := b[shoff+uint64(le.Uint16(b[0x3e:]))*uint64(le.Uint16(b[0x3a:])):]
			le.PutUint32(sh[4:], 8) // SHT_NOBITS
			le.PutUint64(sh[0x18:], uint64(len(b)))
		}), "shorter than its section"},
		{"section headers of 72 bytes", edit(func(b, _ []byte) { le.PutUint16(b[0x3a:], 72) }), "section headers are 72 bytes"},
		{"section headers of 32 bytes", edit(func(b, _ []byte) { le.PutUint16(b[0x3a:], 32) }), "section headers are 32 bytes"},
		{"program headers of 64 bytes", edit(func(b, _ []byte) { le.PutUint16(b[0x36:], 64) }), "program headers are 64 bytes"},
		{"a section's name past the section names", edit(func(b, _ []byte) {
			sh := b[shoff+uint64(shnum-1)*0x40:]
			le.PutUint32(sh, 1<<30)
		}), "past its"},
		{"section names of 0 bytes at the end, every name at 0", edit(func(b, _ []byte) {
			nsh := b[shoff+uint64(le.Uint16(b[0x3e:]))*0x40:]
			le.PutUint64(nsh[0x18:], uint64(len(b)))
			le.PutUint64(nsh[0x20:], 0)
			for i := range uint64(shnum) {
				le.PutUint32(b[shoff+i*0x40:], 0)
			}
		}), "do not end with a NUL"},
		{"section names with no NUL at their end", edit(func(b, _ []byte) {
			nsh := b[shoff+uint64(le.Uint16(b[0x3e:]))*0x40:]
			b[le.Uint64(nsh[0x18:])+le.Uint64(nsh[0x20:])-1] = 'x'
		}), "do not end with a NUL"},
		{"segments counted in section 0, with no sections", edit(func(b, _ []byte) {
			le.PutUint16(b[0x38:], 0xffff)
			le.PutUint16(b[0x3c:], 0)
			le.PutUint64(b[0x28:], 0)
		}), "with no sections"},
	} {
		c.check(t)
	}
}

// TestCheckImageFatbin: a fatbin whose entry, header or payload, lies past
// the bytes its header counts is refused, though the slice holds it.
func TestCheckImageFatbin(t *testing.T) {
	fat := testkernels.Fatbin()
	le := binary.LittleEndian
	hdr := uint64(le.Uint16(fat[6:]))
	end := hdr + le.Uint64(fat[8:])
	// The entries' offsets: the first, the second and the last.
	var at []uint64
	for off := hdr; off < end; off += uint64(le.Uint32(fat[off+4:])) + le.Uint64(fat[off+8:]) {
		at = append(at, off)
	}
	if len(at) < 3 {
		t.Fatalf("a fatbin of %d entries, want 3 or more", len(at))
	}
	first, second, last := at[0], at[1], at[len(at)-1]
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), fat...)
		f(b)
		return b
	}
	for _, c := range []imageCase{
		{"fatbin", fat, ""},
		{"fatbin and bytes after it", append(append([]byte(nil), fat...), make([]byte, 100)...), ""},
		{"payload a byte longer", edit(func(b []byte) {
			le.PutUint64(b[last+8:], le.Uint64(b[last+8:])+1)
		}), "has a payload of"},
		{"payload of 2^64-1 bytes", edit(func(b []byte) {
			le.PutUint64(b[first+8:], 1<<64-1)
		}), "has a payload of"},
		{"payload past the counted bytes, within the slice", append(edit(func(b []byte) {
			le.PutUint64(b[last+8:], le.Uint64(b[last+8:])+64)
		}), make([]byte, 64)...), "past its"},
		{"header past the counted bytes", edit(func(b []byte) {
			le.PutUint64(b[first+8:], end-first-uint64(le.Uint32(b[first+4:]))-8)
		}), "has a header past"},
		{"header of no bytes", edit(func(b []byte) {
			le.PutUint32(b[second+4:], 0)
		}), "has a header of 0 bytes"},
		{"header past the counted bytes, its size", edit(func(b []byte) {
			le.PutUint32(b[second+4:], uint32(end-second)+1)
		}), "has a header of"},
		{"counted bytes end within an entry", edit(func(b []byte) {
			le.PutUint64(b[8:], le.Uint64(b[8:])-1)
		}), "past its"},
	} {
		c.check(t)
	}
}

// TestCheckImageFatbinCubin: a fatbin whose uncompressed cubin entry fails
// the checks of a cubin loaded alone is refused, the error naming the
// entry, though the bytes its tables count lie within the fatbin; a
// compressed entry and a PTX entry are not read as cubins.
func TestCheckImageFatbinCubin(t *testing.T) {
	fat := testkernels.Fatbin()
	le := binary.LittleEndian
	hdr := uint64(le.Uint16(fat[6:]))
	end := hdr + le.Uint64(fat[8:])
	// The offsets of the cubin entries and of the PTX entries.
	var cubins, ptx []uint64
	for off := hdr; off < end; off += uint64(le.Uint32(fat[off+4:])) + le.Uint64(fat[off+8:]) {
		switch le.Uint16(fat[off:]) {
		case fatKindELF:
			cubins = append(cubins, off)
		case 1: // PTX
			ptx = append(ptx, off)
		}
	}
	if len(cubins) < 2 || len(ptx) < 1 {
		t.Fatalf("a fatbin of %d cubins and %d PTX entries, want 2 and 1 or more", len(cubins), len(ptx))
	}
	first, last := cubins[0], cubins[len(cubins)-1]
	// payload returns the offset and the size of the payload of the entry
	// at off.
	payload := func(off uint64) (uint64, uint64) {
		return off + uint64(le.Uint32(fat[off+4:])), le.Uint64(fat[off+8:])
	}
	// edit returns a copy of fat with f applied, f given the copy and the
	// payload of the entry at off.
	edit := func(off uint64, f func(b, p []byte)) []byte {
		b := append([]byte(nil), fat...)
		at, n := payload(off)
		f(b, b[at:at+n])
		return b
	}
	// entry is the words that name the entry at off, the i-th of fat.
	entry := func(off uint64) string {
		i := 0
		for o := hdr; o < off; o += uint64(le.Uint32(fat[o+4:])) + le.Uint64(fat[o+8:]) {
			i++
		}
		return fmt.Sprintf("entry %d (at %d, sm_%d", i, off, le.Uint32(fat[off+28:]))
	}
	if at, n := payload(first); !bytes.HasPrefix(fat[at:at+n], elfMagic) {
		t.Fatalf("the entry at %d holds no ELF", first)
	}
	for _, c := range []imageCase{
		{"fatbin", fat, ""},
		{"section table past the payload, within the fatbin", edit(first, func(_, p []byte) {
			le.PutUint64(p[0x28:], uint64(len(p))-0x40)
		}), entry(first) + ", flags 0x11) is a cubin of"},
		{"section table past the payload, the last entry's", edit(last, func(_, p []byte) {
			le.PutUint64(p[0x28:], uint64(len(p))-0x40)
		}), "shorter than its ELF tables"},
		{"section past the payload, the last entry's", edit(last, func(_, p []byte) {
			shoff, shent := le.Uint64(p[0x28:]), uint64(le.Uint16(p[0x3a:]))
			for i := uint64(1); i < uint64(le.Uint16(p[0x3c:])); i++ {
				if sh := p[shoff+i*shent:]; le.Uint32(sh[4:]) != 8 {
					le.PutUint64(sh[0x20:], uint64(len(p)))
					break
				}
			}
		}), "shorter than its section"},
		{"segment table past the payload", edit(last, func(_, p []byte) {
			le.PutUint64(p[0x20:], uint64(len(p))-0x38)
		}), entry(last)},
		{"e_shstrndx past the section table", edit(first, func(_, p []byte) {
			le.PutUint16(p[0x3e:], le.Uint16(p[0x3c:]))
		}), "section names are section"},
		{"e_shstrndx past the section table, named", edit(last, func(_, p []byte) {
			le.PutUint16(p[0x3e:], 0x7fff)
		}), entry(last)},
		{"big-endian", edit(first, func(_, p []byte) { p[5] = 2 }), "no little-endian ELF (EI_DATA 2)"},
		{"big-endian, named", edit(last, func(_, p []byte) { p[5] = 2 }), entry(last)},
		{"32-bit", edit(first, func(_, p []byte) { p[4] = 1 }), "no 64-bit ELF"},
		{"no ELF, an encoding the checks do not know, left to CUDA", edit(first, func(_, p []byte) { p[1] = 'X' }), ""},
		{"a cubin's header that ends before its flags", edit(first, func(b, _ []byte) {
			le.PutUint32(b[first+4:], fatEntryFlags)
		}), "ends before its flags"},
		{"compressed (0x2000), not read as a cubin", edit(first, func(b, p []byte) {
			le.PutUint64(b[first+fatEntryFlags:], le.Uint64(b[first+fatEntryFlags:])|fatCompressed)
			p[5] = 2
		}), ""},
		{"compressed by zstd (0x8000), not read as a cubin", edit(first, func(b, p []byte) {
			le.PutUint64(b[first+fatEntryFlags:], le.Uint64(b[first+fatEntryFlags:])|fatZstd)
			copy(p, "\x28\xb5\x2f\xfd")
		}), ""},
		{"PTX, not read as a cubin", edit(ptx[0], func(b, _ []byte) {
			le.PutUint64(b[ptx[0]+fatEntryFlags:], le.Uint64(b[ptx[0]+fatEntryFlags:])&^(fatCompressed|fatZstd))
		}), ""},
	} {
		c.check(t)
	}
}

// TestCheckImagePTX: PTX text with text after a NUL, which CUDA would cut
// short without a word, is refused; NULs alone after the text pass.
func TestCheckImagePTX(t *testing.T) {
	ptx := testkernels.PTX()
	for _, c := range []imageCase{
		{"ptx", ptx, ""},
		{"ptx and a NUL", append(append([]byte(nil), ptx...), 0), ""},
		{"ptx and NULs", append(append([]byte(nil), ptx...), 0, 0, 0), ""},
		{"ptx, a NUL and text", append(append([]byte(nil), ptx...), 0, '/', '/'), "text after it"},
		{"ptx cut by a NUL", append(append(append([]byte(nil), ptx[:len(ptx)/2]...), 0), ptx[len(ptx)/2:]...), "text after it"},
		{"a NUL and ptx", append([]byte{0}, ptx...), "text after it"},
	} {
		c.check(t)
	}
}

// TestCheckImageAllocs: checkImage allocates nothing on the images it
// passes.
func TestCheckImageAllocs(t *testing.T) {
	cubin, _ := testkernels.Cubin("sm_90")
	for _, b := range [][]byte{testkernels.Fatbin(), cubin, testkernels.PTX()} {
		if n := testing.AllocsPerRun(10, func() { _ = checkImage(b) }); n != 0 {
			t.Errorf("checkImage of %d bytes: %v allocations", len(b), n)
		}
	}
}

// FuzzCheckImage: checkImage never panics, whatever the bytes; an image it
// passes it passes without an allocation, and a cubin it passes that
// debug/elf reads has its sections and segments within its bytes. The
// real cubins whole, the real fatbin, and its first entry alone with its
// cubin cut to 0x400 bytes, lead the fuzzer to the cubins within fatbins.
func FuzzCheckImage(f *testing.F) {
	for _, arch := range testkernels.Archs {
		b, _ := testkernels.Cubin(arch)
		f.Add(b)
	}
	for _, arch := range testkernels.NVArchs {
		b, _ := testkernels.NVCubin(arch)
		f.Add(b)
	}
	cubin, _ := testkernels.Cubin("sm_90")
	fat := testkernels.Fatbin()
	f.Add(cubin[:0x400])
	f.Add(fat[:0x200])
	f.Add(fat)
	le := binary.LittleEndian
	hdr := uint64(le.Uint16(fat[6:]))
	size := uint64(le.Uint32(fat[hdr+4:]))
	one := append([]byte(nil), fat[:hdr+size+0x400]...)
	le.PutUint64(one[8:], size+0x400)
	le.PutUint64(one[hdr+8:], 0x400)
	f.Add(one)
	f.Add([]byte(".version 8.0\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkImage(b) != nil {
			return
		}
		if n := testing.AllocsPerRun(4, func() { _ = checkImage(b) }); n != 0 {
			t.Fatalf("checkImage of a passing image of %d bytes: %v allocations", len(b), n)
		}
		if bytes.HasPrefix(b, elfMagic) {
			if err := elfWithin(b); err != nil {
				t.Fatalf("checkImage passed a cubin of %d bytes: %v", len(b), err)
			}
		}
	})
}

// elfWithin returns an error where debug/elf reads b and finds a section
// (other than SHT_NOBITS) or a segment past b's end. It returns nil where
// debug/elf refuses b, and leaves out the segments where e_phnum is
// PN_XNUM, whose count debug/elf does not read from section 0.
func elfWithin(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	n := uint64(len(b))
	for i, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && (s.Offset > n || s.FileSize > n-s.Offset) {
			return fmt.Errorf("section %d, %d bytes at %d, lies past its end", i, s.FileSize, s.Offset)
		}
	}
	if binary.LittleEndian.Uint16(b[0x38:]) == 0xffff {
		return nil
	}
	for i, p := range f.Progs {
		if p.Off > n || p.Filesz > n-p.Off {
			return fmt.Errorf("segment %d, %d bytes at %d, lies past its end", i, p.Filesz, p.Off)
		}
	}
	return nil
}

// imageCase is a case of checkImage: an image, and the words its refusal
// names ("" where it passes).
type imageCase struct {
	name string
	b    []byte
	why  string
}

// check runs checkImage on the case's image and reports where its answer
// is not the case's.
func (c imageCase) check(t *testing.T) {
	t.Helper()
	err := checkImage(c.b)
	switch {
	case c.why == "" && err != nil:
		t.Errorf("%s: %v", c.name, err)
	case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
		t.Errorf("%s: %v, want an error naming %q", c.name, err, c.why)
	}
}
