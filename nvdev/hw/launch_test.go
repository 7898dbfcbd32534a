package hw

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	testImage = 0x0000_7f00_0010_0000
	testBank0 = 0x0000_7f00_0020_0300
	testQmd   = 0x0000_00f0_0020_0000
	testBuf   = 0x0000_7f00_1000_0000
)

func launchOf(t testing.TB, sm int, name string) (*Launch, *Cubin) {
	t.Helper()
	var b []byte
	if tt, ok := t.(*testing.T); ok {
		b = editCubin(tt, sm).defineDriverFunctions().bytes()
	} else {
		b = readCubin(t, sm)
	}
	c, err := Inspect(b)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := c.Kernel(name)
	if !ok {
		t.Fatalf("no kernel %s", name)
	}
	g, _ := ForSM(sm)
	l, err := MakeLaunch(g, k, testImage, DefaultWindows)
	if err != nil {
		t.Fatal(err)
	}
	return l, c
}

// bitsOf reads MW(hi:lo) of a descriptor's bytes, as the GPU reads them:
// little-endian 32-bit words, bit 0 first.
func bitsOf(b []byte, hi, lo int) uint64 {
	var v uint64
	for i := hi; i >= lo; i-- {
		v = v<<1 | uint64(b[i/8]>>(i%8)&1)
	}
	return v
}

func qmdBytes(q []uint32) []byte {
	b := make([]byte, 4*len(q))
	for i, w := range q {
		le.PutUint32(b[4*i:], w)
	}
	return b
}

// TestTwiceQmdV04 stamps a launch of twice on Hopper and reads the
// descriptor's fields back from its bytes at the bit ranges clcbc0qmd.h
// publishes, and the constant bank 0 the launch writes.
func TestTwiceQmdV04(t *testing.T) {
	l, c := launchOf(t, 90, "twice")
	k := l.Kernel
	qmd := make([]uint32, Hopper.Qmd.Words)
	bank0 := make([]byte, l.Bank0Bytes)
	params := make([]byte, 16) // 8 bytes too many: left out
	le.PutUint64(params, testBuf)
	le.PutUint64(params[8:], 0xdeadbeefdeadbeef)
	l.Stamp(qmd, bank0, testBank0, [3]uint32{4096, 1, 1}, [3]uint32{256, 1, 1}, 0, params)
	b := qmdBytes(qmd)
	f := func(name string, i int) uint64 {
		p := v04Published[name]
		return bitsOf(b, p.hi(i), p.lo(i))
	}
	var bank3, bank4 uint64
	for _, s := range c.Sections() {
		switch s.Name {
		case ".nv.constant3":
			bank3 = testImage + s.Offset
		case ".nv.constant4":
			bank4 = testImage + s.Offset
		}
	}
	program := uint64(testImage + k.Code)
	for _, tc := range []struct {
		field string
		i     int
		want  uint64
	}{
		{"QMD_MAJOR_VERSION", 0, 4}, {"QMD_MINOR_VERSION", 0, 0}, {"QMD_TYPE", 0, QmdTypeGridCta},
		{"API_VISIBLE_CALL_LIMIT", 0, 1}, {"SAMPLER_INDEX", 0, 0}, {"SASS_VERSION", 0, 0x90},
		{"CWD_MEMBAR_TYPE", 0, 1},
		{"INVALIDATE_TEXTURE_HEADER_CACHE", 0, 1}, {"INVALIDATE_TEXTURE_SAMPLER_CACHE", 0, 1},
		{"INVALIDATE_TEXTURE_DATA_CACHE", 0, 1}, {"INVALIDATE_SHADER_DATA_CACHE", 0, 1},
		{"INVALIDATE_INSTRUCTION_CACHE", 0, 0}, {"INVALIDATE_SHADER_CONSTANT_CACHE", 0, 0},
		{"GRID_WIDTH", 0, 4096}, {"GRID_HEIGHT", 0, 1}, {"GRID_DEPTH", 0, 1},
		{"CTA_THREAD_DIMENSION0", 0, 256}, {"CTA_THREAD_DIMENSION1", 0, 1}, {"CTA_THREAD_DIMENSION2", 0, 1},
		{"REGISTER_COUNT", 0, 8}, {"BARRIER_COUNT", 0, 0},
		{"PROGRAM_ADDRESS_LOWER", 0, program & 0xffffffff}, {"PROGRAM_ADDRESS_UPPER", 0, program >> 32},
		{"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED", 0, program >> 8 & 0xffffffff},
		{"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED", 0, program >> 40}, {"PROGRAM_PREFETCH_SIZE", 0, 2},
		{"SHARED_MEMORY_SIZE", 0, 0x400}, // the system's KiB, which nvcc counts on sm_90
		{"MIN_SM_CONFIG_SHARED_MEM_SIZE", 0, 3}, {"MAX_SM_CONFIG_SHARED_MEM_SIZE", 0, 58},
		{"TARGET_SM_CONFIG_SHARED_MEM_SIZE", 0, 3},
		{"SHADER_LOCAL_MEMORY_LOW_SIZE", 0, 0}, {"SHADER_LOCAL_MEMORY_HIGH_SIZE", 0, 0x240},
		{"CONSTANT_BUFFER_VALID(i)", 0, 1}, {"CONSTANT_BUFFER_INVALIDATE(i)", 0, 1},
		{"CONSTANT_BUFFER_PREFETCH(i)", 0, 1}, {"CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8", 0, 3},
		{"CONSTANT_BUFFER_PREFETCH(i)", 3, 0}, {"CONSTANT_BUFFER_PREFETCH(i)", 4, 0},
		{"CWD_MEMBAR_TASK_CHASING_ENABLE", 0, 0},
		{"CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6(i)", 0, testBank0 >> 6 & 0xffffffff},
		{"CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6(i)", 0, testBank0 >> 38},
		{"CONSTANT_BUFFER_SIZE_SHIFTED4(i)", 0, 0x220 >> 4},
		{"CONSTANT_BUFFER_VALID(i)", 1, 0}, {"CONSTANT_BUFFER_VALID(i)", 2, 0},
		{"CONSTANT_BUFFER_VALID(i)", 3, 1}, {"CONSTANT_BUFFER_INVALIDATE(i)", 3, 0},
		{"CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6(i)", 3, bank3 >> 6 & 0xffffffff},
		{"CONSTANT_BUFFER_SIZE_SHIFTED4(i)", 3, 1024 >> 4},
		{"CONSTANT_BUFFER_VALID(i)", 4, 1},
		{"CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6(i)", 4, bank4 >> 6 & 0xffffffff},
		{"CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6(i)", 4, bank4 >> 38},
		{"CONSTANT_BUFFER_SIZE_SHIFTED4(i)", 4, 64 >> 4},
		{"RELEASE_ENABLE(i)", 0, 0}, {"DEPENDENT_QMD_ENABLE(0)", 0, 0},
	} {
		if got := f(tc.field, tc.i); got != tc.want {
			t.Errorf("%s[%d] = %#x, want %#x", tc.field, tc.i, got, tc.want)
		}
	}

	// Constant bank 0: the driver's words, then the parameters at 0x210.
	for off, want := range map[int]uint32{
		0x0: 256, 0x4: 1, 0x8: 1, 0xc: 4096, 0x10: 1, 0x14: 1,
		0x18: uint32(DefaultWindows.Shared), 0x1c: uint32(DefaultWindows.Shared >> 32),
		0x20: uint32(DefaultWindows.Local), 0x24: uint32(DefaultWindows.Local >> 32),
		0x28: 0xfffdc0, 0x2c: 0, 0x208: 0, 0x20c: 0,
		0x210: uint32(testBuf & 0xffffffff), 0x214: uint32(testBuf >> 32), 0x218: 0, 0x21c: 0,
	} {
		if got := le.Uint32(bank0[off:]); got != want {
			t.Errorf("bank 0 at %#x: %#x, want %#x", off, got, want)
		}
	}
	if l.Bank0Bytes != 0x220 || len(l.Bank0Template()) != 0x220 {
		t.Errorf("bank 0 of %d bytes", l.Bank0Bytes)
	}

	// A release and a chained descriptor, where the driver sets them.
	q := QmdOf(Hopper.Qmd, qmd)
	q.SetRelease(0, 0x0000_7f00_3000_0008, 0x1_0000_0002)
	q.SetDependent(testQmd+0x200, true)
	b = qmdBytes(qmd)
	for _, tc := range []struct {
		field string
		i     int
		want  uint64
	}{
		{"RELEASE_ENABLE(i)", 0, 1}, {"RELEASE_STRUCTURE_SIZE(i)", 0, 1}, {"RELEASE_MEMBAR_TYPE(i)", 0, 1},
		{"RELEASE_PAYLOAD64B(i)", 0, 1}, {"RELEASE_SEMAPHOREi_ADDR_LOWER", 0, 0x30000008},
		{"RELEASE_SEMAPHOREi_ADDR_UPPER", 0, 0x7f00}, {"RELEASE_SEMAPHOREi_PAYLOAD_LOWER", 0, 2},
		{"RELEASE_SEMAPHOREi_PAYLOAD_UPPER", 0, 1}, {"RELEASE_ENABLE(i)", 1, 0},
		{"DEPENDENT_QMD_ENABLE(0)", 0, 1}, {"DEPENDENT_QMD_ACTION(0)", 0, 1}, {"DEPENDENT_QMD_PREFETCH(0)", 0, 1},
		{"DEPENDENT_QMD0_POINTER", 0, (testQmd + 0x200) >> 8},
		{"CWD_MEMBAR_TYPE", 0, CwdMembarL1Membar}, {"CWD_MEMBAR_TASK_CHASING_ENABLE", 0, 1},
	} {
		if got := f(tc.field, tc.i); got != tc.want {
			t.Errorf("%s[%d] = %#x, want %#x", tc.field, tc.i, got, tc.want)
		}
	}
	golden(t, "testdata/twice.sm_90.qmd.golden", hexDump(b))
}

// TestTwiceQmdV03 is TestTwiceQmdV04 on Ada, read back at clc6c0qmd.h's
// bit ranges.
func TestTwiceQmdV03(t *testing.T) {
	l, _ := launchOf(t, 89, "twice")
	qmd := make([]uint32, Ada.Qmd.Words)
	bank0 := make([]byte, l.Bank0Bytes)
	l.Stamp(qmd, bank0, testBank0, [3]uint32{8, 2, 3}, [3]uint32{32, 4, 2}, 4000, le.AppendUint64(nil, testBuf))
	b := qmdBytes(qmd)
	f := func(name string, i int) uint64 {
		p := v03Published[name]
		return bitsOf(b, p.hi(i), p.lo(i))
	}
	program := uint64(testImage + l.Kernel.Code)
	for _, tc := range []struct {
		field string
		i     int
		want  uint64
	}{
		{"QMD_MAJOR_VERSION", 0, 3}, {"QMD_VERSION", 0, 0}, {"SASS_VERSION", 0, 0x89},
		{"CTA_RASTER_WIDTH", 0, 8}, {"CTA_RASTER_HEIGHT", 0, 2}, {"CTA_RASTER_DEPTH", 0, 3},
		{"CTA_THREAD_DIMENSION0", 0, 32}, {"CTA_THREAD_DIMENSION1", 0, 4}, {"CTA_THREAD_DIMENSION2", 0, 2},
		{"REGISTER_COUNT_V", 0, 8}, {"SM_GLOBAL_CACHING_ENABLE", 0, 1},
		{"PROGRAM_ADDRESS_LOWER", 0, program & 0xffffffff}, {"PROGRAM_ADDRESS_UPPER", 0, program >> 32},
		// 1 KiB the driver reserves on sm_8x, and 4,000 dynamic bytes rounded to 4,096.
		{"SHARED_MEMORY_SIZE", 0, 0x1400}, {"MIN_SM_CONFIG_SHARED_MEM_SIZE", 0, 3},
		{"MAX_SM_CONFIG_SHARED_MEM_SIZE", 0, 26}, {"TARGET_SM_CONFIG_SHARED_MEM_SIZE", 0, 26},
		{"SHADER_LOCAL_MEMORY_HIGH_SIZE", 0, 0x240},
		{"CONSTANT_BUFFER_VALID(i)", 0, 1}, {"CONSTANT_BUFFER_INVALIDATE(i)", 0, 1},
		{"CONSTANT_BUFFER_ADDR_LOWER(i)", 0, testBank0 & 0xffffffff}, {"CONSTANT_BUFFER_ADDR_UPPER(i)", 0, testBank0 >> 32},
		{"CONSTANT_BUFFER_SIZE_SHIFTED4(i)", 0, 0x170 >> 4},
		{"CONSTANT_BUFFER_VALID(i)", 3, 1}, {"CONSTANT_BUFFER_VALID(i)", 4, 1}, {"CONSTANT_BUFFER_VALID(i)", 5, 0},
	} {
		if got := f(tc.field, tc.i); got != tc.want {
			t.Errorf("%s[%d] = %#x, want %#x", tc.field, tc.i, got, tc.want)
		}
	}
	if le.Uint64(bank0[0x160:]) != testBuf || le.Uint32(bank0[0xc:]) != 8 || le.Uint32(bank0[0x8:]) != 2 {
		t.Errorf("bank 0: %x", bank0[:0x30])
	}
}

func hexDump(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 16 {
		fmt.Fprintf(&s, "%04x %s\n", i, hex.EncodeToString(b[i:min(i+16, len(b))]))
	}
	return s.String()
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n%s", path, got)
	}
}

// TestMakeLaunchEveryKernel makes the template of every kernel of every
// test image and checks what the room checks read.
func TestMakeLaunchEveryKernel(t *testing.T) {
	for _, sm := range archs {
		c, err := Parse(editCubin(t, sm).defineDriverFunctions().bytes())
		if err != nil {
			t.Fatal(err)
		}
		g, _ := ForSM(sm)
		for _, k := range c.Kernels() {
			l, err := MakeLaunch(g, k, testImage, DefaultWindows)
			if err != nil {
				t.Errorf("sm_%d %s: %v", sm, k.Name, err)
				continue
			}
			if l.Code != testImage+k.Code || l.MaxThreads != 1024 || l.Bank0Bytes%16 != 0 || l.Bank0Bytes < k.Bank0Bytes ||
				l.Bank0Bytes > MaxBankBytes || l.DynamicShared%128 != 0 || l.Local != (k.Stack()+0x240+15)&^15 {
				t.Errorf("sm_%d %s: %+v", sm, k.Name, *l)
			}
			reserved := 0
			if sm != 90 {
				reserved = 1024
			}
			if l.DynamicShared != (g.MaxShared()-k.Shared-reserved)&^127 {
				t.Errorf("sm_%d %s: %d dynamic bytes", sm, k.Name, l.DynamicShared)
			}
			q := QmdOf(g.Qmd, l.QmdTemplate())
			if q.Registers() != uint32(k.Registers) || q.Barriers() != uint32(k.Barriers) || q.Program() != l.Code {
				t.Errorf("sm_%d %s: descriptor %d registers, %d barriers, program %#x", sm, k.Name, q.Registers(), q.Barriers(), q.Program())
			}
		}
		// CUDA's opt-in maxima of dynamic shared memory: 163, 99, 99 and 227 KiB.
		l, _ := launchOf(t, sm, "empty")
		want := map[int]int{80: 163 << 10, 86: 99 << 10, 89: 99 << 10, 90: 227 << 10}[sm]
		if l.DynamicShared != want {
			t.Errorf("sm_%d: %d dynamic bytes, want %d", sm, l.DynamicShared, want)
		}
	}
}

func TestMakeLaunchRefusals(t *testing.T) {
	_, c := launchOf(t, 90, "twice")
	k, _ := c.Kernel("twice")
	for name, tc := range map[string]struct {
		g     *Generation
		edit  func(*Kernel)
		image uint64
	}{
		"sm_90 code on Ada":     {Ada, func(*Kernel) {}, testImage},
		"unaligned image":       {Hopper, func(*Kernel) {}, testImage + 64},
		"bank 0 past 64 KiB":    {Hopper, func(k *Kernel) { k.Bank0Bytes = 64<<10 + 1 }, testImage},
		"bank 8":                {Hopper, func(k *Kernel) { k.Banks = []Bank{{Index: 8, Size: 16}} }, testImage},
		"clusters":              {Hopper, func(k *Kernel) { k.ClusterDims = [3]int{2, 1, 1} }, testImage},
		"256 registers":         {Hopper, func(k *Kernel) { k.Registers = 256 }, testImage},
		"229 KiB shared":        {Hopper, func(k *Kernel) { k.Shared = 229 << 10 }, testImage},
		"sm_80 code of 100 KiB": {AmpereB, func(k *Kernel) { k.SM = 80; k.Shared = 100 << 10 }, testImage},
		"17 barriers":           {Hopper, func(k *Kernel) { k.Barriers = 17 }, testImage},
		"32 barriers":           {Hopper, func(k *Kernel) { k.Barriers = 32 }, testImage},
		"negative registers":    {Hopper, func(k *Kernel) { k.Registers = -1 }, testImage},
		"negative shared":       {Hopper, func(k *Kernel) { k.Shared = -1 << 20 }, testImage},
		"stack of 16 MiB":       {Hopper, func(k *Kernel) { k.MaxStack = 16 << 20 }, testImage},
		"stack of 4 GiB":        {Hopper, func(k *Kernel) { k.MinStack = min(1<<32-1, math.MaxInt) }, testImage},
		"negative stack":        {Hopper, func(k *Kernel) { k.FrameSize, k.MinStack, k.MaxStack = -1<<20, -1<<20, -1<<20 }, testImage},
	} {
		kk := *k
		tc.edit(&kk)
		if _, err := MakeLaunch(tc.g, &kk, tc.image, DefaultWindows); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestMakeLaunchParamsPastBank0: a kernel whose parameters do not lie
// within its constant bank 0 is refused with an error naming them, rather
// than stamped with its parameters cut off, or past the bank's bytes.
func TestMakeLaunchParamsPastBank0(t *testing.T) {
	_, c := launchOf(t, 90, "twice")
	k := *must(c.Kernel("twice"))
	for _, tc := range []struct {
		name       string
		off, bytes int
		ok         bool
	}{
		{"within", k.ParamOffset, k.ParamBytes, true},
		{"to the bank's end", k.Bank0Bytes - 8, 8, true},
		{"none at the bank's end", k.Bank0Bytes, 0, true},
		{"past the end", k.Bank0Bytes - 8, 16, false},
		{"after the end", k.Bank0Bytes + 256, 8, false},
		{"negative offset", -8, 8, false},
		{"negative size", k.ParamOffset, -8, false},
	} {
		kk := k
		kk.ParamOffset, kk.ParamBytes = tc.off, tc.bytes
		l, err := MakeLaunch(Hopper, &kk, testImage, DefaultWindows)
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			qmd, bank0 := make([]uint32, MaxQmdWords), make([]byte, l.Bank0Bytes)
			l.Stamp(qmd, bank0, testBank0, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, make([]byte, max(tc.bytes, 0)))
			continue
		}
		want := fmt.Sprintf("parameters at %#x of %d bytes", tc.off, tc.bytes)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, want)
		}
	}
}

// TestMakeLaunchAddressReach: the descriptor holds the addresses of code
// and constant banks below 2^49 on QMD V03_00 and below 2^57 on V04_00;
// MakeLaunch refuses a kernel whose code or banks lie past that, rather
// than cut their addresses.
func TestMakeLaunchAddressReach(t *testing.T) {
	_, c := launchOf(t, 86, "twice")
	k86, _ := c.Kernel("twice")
	_, c = launchOf(t, 90, "twice")
	k90, _ := c.Kernel("twice")
	for _, tc := range []struct {
		name  string
		g     *Generation
		k     *Kernel
		edit  func(*Kernel)
		image uint64
		ok    bool
	}{
		{"V03 image below 2^49", AmpereB, k86, func(*Kernel) {}, 1<<49 - 1<<20, true},
		{"V03 image at 2^49", AmpereB, k86, func(*Kernel) {}, 1 << 49, false},
		{"V03 image at 2^50", AmpereB, k86, func(*Kernel) {}, 1 << 50, false},
		{"V03 code at 2^49", AmpereB, k86, func(k *Kernel) { k.Code = 256 }, 1<<49 - 256, false},
		{"V03 bank at 2^49", AmpereB, k86, func(k *Kernel) { k.Banks = []Bank{{Index: 3, Offset: 1 << 20, Size: 16}} }, 1<<49 - 1<<20, false},
		{"V04 image at 2^50", Hopper, k90, func(*Kernel) {}, 1 << 50, true},
		{"V04 image at 2^57", Hopper, k90, func(*Kernel) {}, 1 << 57, false},
		{"V04 bank at 2^57", Hopper, k90, func(k *Kernel) { k.Banks = []Bank{{Index: 3, Offset: 1 << 20, Size: 16}} }, 1<<57 - 1<<20, false},
	} {
		k := *tc.k
		tc.edit(&k)
		l, err := MakeLaunch(tc.g, &k, tc.image, DefaultWindows)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.ok:
			if q := QmdOf(tc.g.Qmd, l.QmdTemplate()); q.Program() != tc.image+k.Code {
				t.Errorf("%s: program %#x, want %#x", tc.name, q.Program(), tc.image+k.Code)
			}
		case !errors.Is(err, ErrAddress):
			t.Errorf("%s: %v, want ErrAddress", tc.name, err)
		}
	}
}

// TestMakeLaunchLimits: the most barriers and the largest stack a thread's
// local window holds are encoded as they are.
func TestMakeLaunchLimits(t *testing.T) {
	_, c := launchOf(t, 90, "twice")
	k := *must(c.Kernel("twice"))
	k.Barriers, k.MaxStack = MaxBarriers, 0xfffdb0
	l, err := MakeLaunch(Hopper, &k, testImage, DefaultWindows)
	if err != nil {
		t.Fatal(err)
	}
	q := QmdOf(Hopper.Qmd, l.QmdTemplate())
	if _, high := q.Local(); q.Barriers() != MaxBarriers || high != 0xfffff0 || l.Local != 0xfffff0 {
		t.Errorf("%d barriers, local memory %#x (%#x)", q.Barriers(), high, l.Local)
	}
}

func must(k *Kernel, ok bool) *Kernel {
	if !ok {
		panic("no such kernel")
	}
	return k
}

func TestMaxThreadsByRegisters(t *testing.T) {
	for regs, want := range map[int]int{0: 1024, 32: 1024, 64: 1024, 72: 896, 128: 512, 255: 256} {
		if got := maxThreads(Hopper, &Kernel{Registers: regs}); got != want {
			t.Errorf("%d registers: %d threads, want %d", regs, got, want)
		}
	}
	if got := maxThreads(Hopper, &Kernel{Registers: 8, MaxThreadsAttr: [3]int{128, 1, 1}}); got != 128 {
		t.Errorf("launch bounds: %d", got)
	}
	// Launch bounds whose product overflows an int bound nothing.
	for _, bounds := range [][3]int{{1 << 22, 1 << 22, 1 << 20}, {min(1<<32-1, math.MaxInt), min(1<<32-1, math.MaxInt), 1}, {min(1<<32, math.MaxInt), min(1<<32, math.MaxInt), min(1<<32, math.MaxInt)}} {
		if got := maxThreads(Hopper, &Kernel{Registers: 8, MaxThreadsAttr: bounds}); got != 1024 {
			t.Errorf("launch bounds %v: %d threads, want 1024", bounds, got)
		}
	}
}

func TestLaunchCheck(t *testing.T) {
	l, _ := launchOf(t, 90, "twice")
	ok := [3]uint32{1, 1, 1}
	for _, tc := range []struct {
		grid, block [3]uint32
		dyn         uint32
		bad         bool
	}{
		{ok, [3]uint32{1024, 1, 1}, 0, false}, {ok, ok, 227 << 10, false}, {ok, ok, 227<<10 + 1, true},
		{ok, [3]uint32{1025, 1, 1}, 0, true}, {[3]uint32{0, 1, 1}, ok, 0, true},
	} {
		if why := l.Check(tc.grid, tc.block, tc.dyn); (why != "") != tc.bad {
			t.Errorf("%v %v %d: %q", tc.grid, tc.block, tc.dyn, why)
		}
	}
	if a := testing.AllocsPerRun(100, func() { _ = l.Check(ok, [3]uint32{2048, 1, 1}, 1<<20) }); a != 0 {
		t.Errorf("Check allocates %v", a)
	}
}

func TestStampAllocatesNothing(t *testing.T) {
	for _, sm := range archs {
		l, _ := launchOf(t, sm, "twice")
		qmd := make([]uint32, MaxQmdWords)
		bank0 := make([]byte, l.Bank0Bytes)
		params := le.AppendUint64(nil, testBuf)
		a := testing.AllocsPerRun(1000, func() {
			l.Stamp(qmd, bank0, testBank0, [3]uint32{4096, 1, 1}, [3]uint32{256, 1, 1}, 0, params)
		})
		if a != 0 {
			t.Errorf("sm_%d: Stamp allocates %v times", sm, a)
		}
	}
	b := make([]uint32, 0, 256)
	a := testing.AllocsPerRun(1000, func() {
		b = b[:0]
		b = Acquire(b, Hopper, testBuf, 1)
		b = SendPcas(b, Hopper, testQmd)
		b = ComputeRelease(b, Hopper, testBuf, 2)
		b = CopyRows(b, Hopper, Rows{Src: testBuf, Dst: testImage, RowBytes: 64, Rows: 4, SrcPitch: 64, DstPitch: 64})
		b = Fill(b, Hopper, testBuf+1, 100, 7)
		b = CopyRelease(b, Hopper, testBuf, 3)
		b = ReleaseStamp(b, Hopper, testBuf, 4)
	})
	if a != 0 {
		t.Errorf("the method builders allocate %v times", a)
	}
}

// BenchmarkStampTwice stamps a launch of twice on Hopper: its descriptor
// and its constant bank 0.
func BenchmarkStampTwice(b *testing.B) {
	l, _ := launchOf(b, 90, "twice")
	qmd := make([]uint32, MaxQmdWords)
	bank0 := make([]byte, l.Bank0Bytes)
	params := le.AppendUint64(nil, testBuf)
	b.ReportAllocs()
	for b.Loop() {
		l.Stamp(qmd, bank0, testBank0, [3]uint32{4096, 1, 1}, [3]uint32{256, 1, 1}, 0, params)
	}
}
