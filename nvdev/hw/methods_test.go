package hw

import (
	"errors"
	"slices"
	"testing"
)

func TestHeadersGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  uint32
		want uint32
	}{
		// tinygrad's nvm(subchannel, method, n) INC header: 0x20000000 | n<<16 | sc<<13 | method>>2.
		{"SET_OBJECT on compute", Inc(SubCompute, 0, 1), 0x20012000},
		{"SET_OBJECT on copy", Inc(SubCopy, 0, 1), 0x20018000},
		{"host semaphore, 5 words", Inc(SubHost, HostSemAddrLo, 5), 0x20050017},
		{"report semaphore, 5 words", Inc(SubCompute, ComputeReportPayloadLower, 5), 0x20052056},
		{"copy semaphore, 4 words", Inc(SubCopy, CopySemaphoreA, 4), 0x20048090},
		{"LAUNCH_DMA", Inc(SubCopy, CopyLaunchDMA, 1), 0x200180c0},
		{"non-incrementing", NonInc(SubCompute, 0x100, 3), 0x60032040},
		{"immediate", Immd(SubCompute, ComputeInvalidateShaderCachesNoWFI, 0x1011), 0x901125a6},
		{"increment-once", OneInc(SubCopy, CopyOffsetInUpper, 2), 0xa0028100},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %#08x, want %#08x", tc.name, tc.got, tc.want)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, op := range []Op{OpInc, OpNonInc, OpImmd, OpOneInc} {
		for sc := Subchannel(0); sc < 8; sc++ {
			for _, m := range []uint32{0, 4, 0x5c, 0x2b4, 0x1698, 0x3ffc} {
				for _, n := range []uint32{0, 1, 5, MaxCount} {
					h := header(op, sc, m, n)
					if d := DecodeHeader(h); d != (Header{op, sc, m, n}) {
						t.Fatalf("%v %v %#x %d: %+v", op, sc, m, n, d)
					}
				}
			}
		}
	}
}

func TestDecode(t *testing.T) {
	b := []uint32{
		Inc(SubCompute, 0x100, 2), 1, 2,
		NonInc(SubCopy, 0x200, 2), 3, 4,
		OneInc(SubHost, 0x10, 3), 5, 6, 7,
		Immd(SubCompute, 0x298, 9), 0,
	}
	got, err := Decode(b)
	want := []Write{
		{SubCompute, 0x100, 1}, {SubCompute, 0x104, 2},
		{SubCopy, 0x200, 3}, {SubCopy, 0x200, 4},
		{SubHost, 0x10, 5}, {SubHost, 0x14, 6}, {SubHost, 0x14, 7},
		{SubCompute, 0x298, 9},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := Decode([]uint32{Inc(0, 0, 3), 1}); err == nil {
		t.Error("a truncated push buffer decoded")
	}
	if _, err := Decode([]uint32{0x7 << 29}); err == nil {
		t.Error("END_PB_SEGMENT decoded")
	}
}

func decode(t *testing.T, b []uint32) []Write {
	t.Helper()
	w, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestSemaphoresGolden(t *testing.T) {
	const addr, v = 0x0000_0123_4567_89a8, 0x1122_3344_5566_7788
	for _, tc := range []struct {
		name string
		got  []uint32
		want []uint32
	}{
		{"acquire on Hopper", Acquire(nil, Hopper, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x123, 0x55667788, 0x11223344, 0x01000003}},
		{"release on Hopper", Release(nil, Hopper, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x123, 0x55667788, 0x11223344, 0x01100001}},
		{"release with timestamp", ReleaseStamp(nil, Hopper, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x123, 0x55667788, 0x11223344, 0x03100001}},
		{"acquire on Ampere: an 8-bit SEM_ADDR_HI", Acquire(nil, Ampere, addr, v),
			[]uint32{0x20050017, 0x456789a8, 0x23, 0x55667788, 0x11223344, 0x01000003}},
		{"compute release on Hopper", ComputeRelease(nil, Hopper, addr, v),
			[]uint32{0x20052056, 0x55667788, 0x11223344, 0x456789a8, 0x123, 0x1008}},
		{"compute release on GA100: the host's", ComputeRelease(nil, Ampere, addr, v),
			Release(nil, Ampere, addr, v)},
		{"copy release on Hopper", CopyRelease(nil, Hopper, addr, v),
			[]uint32{0x20048090, 0x123, 0x456789a8, 0x55667788, 0x11223344, 0x200180c0, 0x0800000c}},
		{"copy release on GA100: the host's", CopyRelease(nil, Ampere, addr, v),
			Release(nil, Ampere, addr, v)},
		{"SET_OBJECT", SetObject(nil, SubCompute, HopperComputeA), []uint32{0x20012000, 0xcbc0}},
		{"PCAS", SendPcas(nil, Hopper, 0x0000_00ab_cdef_0100), []uint32{0x200120ad, 0xabcdef01, 0x800a20b0}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n got %#08x\nwant %#08x", tc.name, tc.got, tc.want)
		}
	}
	for _, g := range Generations() {
		for name, n := range map[string]int{
			"acquire": len(Acquire(nil, g, addr, v)), "release": len(Release(nil, g, addr, v)),
			"compute": len(ComputeRelease(nil, g, addr, v)), "copy": len(CopyRelease(nil, g, addr, v)),
		} {
			max := map[string]int{"acquire": AcquireWords, "release": ReleaseWords, "compute": ComputeReleaseWords, "copy": CopyReleaseWords}[name]
			if n > max {
				t.Errorf("%s %s: %d words, more than %d", g.Arch, name, n, max)
			}
		}
	}
}

// TestSemaphoresDecode reads back what the semaphore builders write.
func TestSemaphoresDecode(t *testing.T) {
	const addr, v = 0x0000_00ff_0000_1230, 0xffff_0000_8000_0001
	w := decode(t, Release(nil, Hopper, addr, v))
	m := map[uint32]uint32{}
	for _, x := range w {
		m[x.Method] = x.Value
	}
	if uint64(m[HostSemAddrHi])<<32|uint64(m[HostSemAddrLo]) != addr ||
		uint64(m[HostSemPayloadHi])<<32|uint64(m[HostSemPayloadLo]) != v ||
		m[HostSemExecute]&7 != SemRelease || m[HostSemExecute]&SemReleaseWFI == 0 || m[HostSemExecute]&SemPayload64 == 0 {
		t.Errorf("%+v", w)
	}
}

func TestComputeMethods(t *testing.T) {
	w := decode(t, SetWindows(nil, DefaultWindows))
	want := []Write{
		{SubCompute, ComputeSharedWindowA, 0xfe}, {SubCompute, ComputeSharedWindowB, 0},
		{SubCompute, ComputeLocalWindowA, 0xff}, {SubCompute, ComputeLocalWindowB, 0},
	}
	if !slices.Equal(w, want) {
		t.Errorf("windows %+v", w)
	}
	w = decode(t, LocalMemory(nil, Hopper, 0x0001_2345_6780_0000, 0x1_0024_0000, 0xff))
	want = []Write{
		{SubCompute, ComputeLocalMemoryA, 0x12345}, {SubCompute, ComputeLocalMemoryB, 0x67800000},
		{SubCompute, ComputeLocalNonThrottledA, 1}, {SubCompute, ComputeLocalNonThrottledB, 0x00240000},
		{SubCompute, ComputeLocalNonThrottledC, 0xff},
	}
	if !slices.Equal(w, want) {
		t.Errorf("local memory %+v", w)
	}
	w = decode(t, InvalidateShaderCaches(nil, InvalidateInstruction|InvalidateGlobalData|InvalidateConstant))
	if !slices.Equal(w, []Write{{SubCompute, ComputeInvalidateShaderCachesNoWFI, 0x1011}}) {
		t.Errorf("invalidate %+v", w)
	}
	w = decode(t, InvalidateTextureCaches(InvalidateSkedCaches(nil)))
	if len(w) != 4 || w[0].Method != ComputeInvalidateSkedCaches {
		t.Errorf("invalidate %+v", w)
	}
	if n := len(SetWindows(nil, DefaultWindows)); n != WindowWords {
		t.Errorf("windows: %d words", n)
	}
	if n := len(LocalMemory(nil, Ampere, 0, 0, 0)); n != LocalMemoryWords {
		t.Errorf("local memory: %d words", n)
	}
	if n := len(SendPcas(nil, Ada, 0)); n != LaunchWords {
		t.Errorf("PCAS: %d words", n)
	}
	w = decode(t, NonStallInterrupt(WaitForIdle(nil)))
	if !slices.Equal(w, []Write{{SubHost, HostWFI, 1}, {SubHost, HostNonStallInterrupt, 0}}) {
		t.Errorf("%+v", w)
	}
}

// copyEngine replays copy-engine writes: its registers, and each
// LAUNCH_DMA's effect on a sparse memory.
type copyEngine struct {
	reg      map[uint32]uint32
	launches []map[uint32]uint32
	mem      map[uint64]byte
}

func runCopy(t *testing.T, b []uint32) *copyEngine {
	t.Helper()
	e := &copyEngine{reg: map[uint32]uint32{}, mem: map[uint64]byte{}}
	for _, w := range decode(t, b) {
		if w.Subchannel != SubCopy {
			t.Fatalf("write on subchannel %d", w.Subchannel)
		}
		e.reg[w.Method] = w.Value
		if w.Method != CopyLaunchDMA {
			continue
		}
		l := map[uint32]uint32{}
		for k, v := range e.reg {
			l[k] = v
		}
		e.launches = append(e.launches, l)
		if l[CopyLineLengthIn] > 1<<20 || (l[CopyLaunchDMA]&DMAMultiLine != 0 && l[CopyLineCount] > 1<<10) {
			continue // only the launches' parameters are checked
		}
		src := uint64(l[CopyOffsetInUpper])<<32 | uint64(l[CopyOffsetInUpper+4])
		dst := uint64(l[CopyOffsetOutUpper])<<32 | uint64(l[CopyOffsetOutUpper+4])
		lines := uint32(1)
		if l[CopyLaunchDMA]&DMAMultiLine != 0 {
			lines = l[CopyLineCount]
		}
		for line := range uint64(lines) {
			s, d := src+line*uint64(l[0x410]), dst+line*uint64(l[0x414])
			if l[CopyLaunchDMA]&DMARemap != 0 {
				size := uint64(1)
				if l[CopyRemapComponent]>>16&3 == 3 {
					size = 4
				}
				for i := range uint64(l[CopyLineLengthIn]) * size {
					e.mem[d+i] = byte(l[CopyRemapConstA] >> (8 * (i % size)))
				}
				continue
			}
			for i := range uint64(l[CopyLineLengthIn]) {
				e.mem[d+i] = byte(s + i) // the source's bytes are their addresses' low bytes
			}
		}
	}
	return e
}

func TestCopyRows(t *testing.T) {
	// Rows of 100 bytes, 256 and 512 apart: one multi-line launch.
	r := Rows{Src: 0x1000, Dst: 0x10_0000, SrcPitch: 256, DstPitch: 512, RowBytes: 100, Rows: 7}
	e := runCopy(t, CopyRows(nil, Hopper, r))
	if n, err := r.Launches(); len(e.launches) != 1 || n != 1 || err != nil || e.launches[0][CopyLineCount] != 7 {
		t.Fatalf("%d launches", len(e.launches))
	}
	for row := range uint64(7) {
		for i := range uint64(512) {
			got, ok := e.mem[r.Dst+row*512+i]
			if want := byte(r.Src + row*256 + i); (i < 100) != ok || (ok && got != want) {
				t.Fatalf("row %d byte %d: %v %d", row, i, ok, got)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		r        Rows
		launches int
		check    func(l []map[uint32]uint32) bool
	}{
		{"nothing", Rows{RowBytes: 0, Rows: 5}, 0, nil},
		{"one row of 5 GiB: three lines", Rows{Src: 0, Dst: 1 << 40, RowBytes: 5 << 30, Rows: 1}, 3,
			func(l []map[uint32]uint32) bool {
				return l[0][CopyLineLengthIn] == 1<<31 && l[2][CopyLineLengthIn] == 1<<30 &&
					l[2][CopyOffsetInUpper+4] == 0 && l[2][CopyOffsetInUpper] == 1 && l[2][CopyOffsetOutUpper] == 1<<8+1 &&
					l[0][CopyLaunchDMA]&DMAMultiLine == 0
			}},
		{"rows 2^32 apart: a launch per row", Rows{SrcPitch: 1 << 32, DstPitch: 64, RowBytes: 16, Rows: 3}, 3,
			func(l []map[uint32]uint32) bool {
				return l[2][CopyOffsetInUpper] == 2 && l[2][CopyOffsetOutUpper+4] == 128
			}},
		{"rows of more than 2 GiB", Rows{SrcPitch: 3 << 30, DstPitch: 3 << 30, RowBytes: 3 << 30, Rows: 2}, 4, nil},
		{"2^32 + 5 rows: two launches", Rows{Src: 0x100, SrcPitch: 16, DstPitch: 16, RowBytes: 16, Rows: 1<<32 + 5}, 2,
			func(l []map[uint32]uint32) bool {
				next := uint64(0x100) + (1<<32-1)*16
				return l[0][CopyLineCount] == 1<<32-1 && l[1][CopyLineCount] == 6 &&
					uint64(l[1][CopyOffsetInUpper])<<32|uint64(l[1][CopyOffsetInUpper+4]) == next &&
					l[1][CopyLaunchDMA]&DMAMultiLine != 0
			}},
	} {
		b := CopyRows(nil, Hopper, tc.r)
		e := runCopy(t, b)
		if n, err := tc.r.Launches(); len(e.launches) != tc.launches || n != uint64(tc.launches) || err != nil || len(b) != tc.launches*CopyLaunchWords {
			t.Errorf("%s: %d launches, Launches %d (%v), %d words", tc.name, len(e.launches), n, err, len(b))
			continue
		}
		if tc.check != nil && !tc.check(e.launches) {
			t.Errorf("%s: %v", tc.name, e.launches)
		}
		for _, l := range e.launches {
			if l[CopyLaunchDMA]&3 != DMATransferNonPipelined || l[CopyLaunchDMA]&(DMASrcPitch|DMADstPitch) != DMASrcPitch|DMADstPitch {
				t.Errorf("%s: LAUNCH_DMA %#x", tc.name, l[CopyLaunchDMA])
			}
		}
	}
	// Addresses past the copy engine's reach lose their high bits.
	l := runCopy(t, CopyRows(nil, Ampere, Rows{Src: 1 << 50, RowBytes: 1, Rows: 1})).launches[0]
	if l[CopyOffsetInUpper] != 0 {
		t.Errorf("OFFSET_IN_UPPER %#x on a 49-bit engine", l[CopyOffsetInUpper])
	}
}

// TestCopyPast2To64 checks that the launch counts neither wrap nor take a
// copy or a fill past 2^64 bytes of addresses, and that the builders
// append nothing for what the counts refuse.
func TestCopyPast2To64(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        Rows
		launches uint64
		refused  bool
	}{
		{"2^64-1 rows of 4 bytes, 0 apart", Rows{Rows: 1<<64 - 1, RowBytes: 4}, 1<<32 + 1, false},
		{"a row of 2^64-1 bytes", Rows{Rows: 1, RowBytes: 1<<64 - 1}, 1 << 33, false},
		{"a row past 2^64", Rows{Src: 1<<64 - 8, Rows: 1, RowBytes: 16}, 0, true},
		{"rows past 2^64", Rows{Dst: 1 << 40, DstPitch: 1 << 40, Rows: 1<<24 + 1, RowBytes: 16}, 0, true},
		{"2^64 launches", Rows{Rows: 1 << 63, RowBytes: 1 << 32}, 0, true},
		{"launches whose words pass 2^64", Rows{Rows: 1 << 62, RowBytes: 1<<31 + 1}, 0, true},
		{"the last row ends at 2^64-1", Rows{Dst: 1<<64 - 33, DstPitch: 16, Rows: 2, RowBytes: 16}, 1, false},
	} {
		n, err := tc.r.Launches()
		if n != tc.launches || (err != nil) != tc.refused || (err != nil && !errors.Is(err, ErrAddress)) {
			t.Errorf("%s: Launches %d, %v; want %d, refused %v", tc.name, n, err, tc.launches, tc.refused)
			continue
		}
		if tc.refused {
			if b := CopyRows(nil, Hopper, tc.r); len(b) != 0 {
				t.Errorf("%s: CopyRows appended %d words", tc.name, len(b))
			}
		}
	}
	for _, tc := range []struct {
		dst, n           uint64
		launches, remaps uint64
		refused          bool
	}{
		{1<<64 - 3, 1, 1, 1, false},
		{1<<64 - 3, 2, 1, 1, false},
		{1<<64 - 6, 5, 1, 1, false},
		{1<<64 - 11, 10, 3, 3, false},
		{1<<64 - 8, 7, 2, 2, false},
		{1<<64 - 8, 8, 0, 0, true},
		{1<<64 - 8, 16, 0, 0, true},
		{1 << 63, 1 << 63, 0, 0, true},
	} {
		launches, remaps, err := FillLaunches(tc.dst, tc.n)
		if launches != tc.launches || remaps != tc.remaps || (err != nil) != tc.refused || (err != nil && !errors.Is(err, ErrAddress)) {
			t.Errorf("fill of %d bytes at %#x: %d launches, %d remaps, %v; want %d, %d, refused %v",
				tc.n, tc.dst, launches, remaps, err, tc.launches, tc.remaps, tc.refused)
			continue
		}
		if b := Fill(nil, Hopper, tc.dst, tc.n, 0xa5); uint64(len(b)) != launches*CopyLaunchWords+remaps*FillRemapWords {
			t.Errorf("fill of %d bytes at %#x: %d words", tc.n, tc.dst, len(b))
		}
	}
}

func TestFill(t *testing.T) {
	for _, tc := range []struct{ dst, n uint64 }{
		{0x1001, 10}, {0x1000, 8}, {0x1003, 1}, {0x1001, 2}, {0x1000, 3}, {0x1002, 6}, {0x1004, 0}, {0x1001, 4096},
	} {
		b := Fill(nil, Hopper, tc.dst, tc.n, 0xa5)
		e := runCopy(t, b)
		launches, remaps, err := FillLaunches(tc.dst, tc.n)
		if err != nil || uint64(len(e.launches)) != launches || uint64(len(b)) != launches*CopyLaunchWords+remaps*FillRemapWords {
			t.Errorf("%+v: %d launches in %d words, FillLaunches %d, %d", tc, len(e.launches), len(b), launches, remaps)
		}
		for a := tc.dst - 8; a < tc.dst+tc.n+8; a++ {
			v, ok := e.mem[a]
			in := a >= tc.dst && a < tc.dst+tc.n
			if in != ok || (ok && v != 0xa5) {
				t.Errorf("%+v: byte %#x: written %v, %#x", tc, a, ok, v)
			}
		}
		for _, l := range e.launches {
			if l[CopyLaunchDMA]&DMARemap == 0 || l[CopyRemapComponent]&7 != RemapDstXConstA {
				t.Errorf("%+v: LAUNCH_DMA %#x, remap %#x", tc, l[CopyLaunchDMA], l[CopyRemapComponent])
			}
		}
	}
	// 5 GiB: the body splits at 2 GiB.
	head, body, tail := fillPieces(2, 5<<30)
	e := runCopy(t, Fill(nil, Hopper, 2, 5<<30, 1))
	if head != 2 || tail != 2 || body != (5<<30-4)/4 || len(e.launches) != 5 {
		t.Errorf("5 GiB: %d %d %d, %d launches", head, body, tail, len(e.launches))
	}
	if e.launches[1][CopyLineLengthIn] != 1<<29 || e.launches[1][CopyRemapConstA] != 0x01010101 {
		t.Errorf("5 GiB: %v", e.launches[1])
	}
}

func TestFillRows(t *testing.T) {
	for _, tc := range []struct {
		name             string
		f                FillRows
		launches, remaps uint64
	}{
		{"a head, a body and a tail a row", FillRows{Dst: 0x1001, Pitch: 16, RowBytes: 10, Rows: 5}, 3, 3},
		{"bodies only", FillRows{Dst: 0x1000, Pitch: 16, RowBytes: 8, Rows: 5}, 1, 1},
		{"a head and a body", FillRows{Dst: 0x1002, Pitch: 12, RowBytes: 6, Rows: 4}, 2, 2},
		{"a body and a tail", FillRows{Dst: 0x1000, Pitch: 12, RowBytes: 7, Rows: 4}, 2, 2},
		{"a byte a row", FillRows{Dst: 0x1003, Pitch: 8, RowBytes: 1, Rows: 9}, 1, 1},
		{"an odd pitch", FillRows{Dst: 0x1001, Pitch: 13, RowBytes: 9, Rows: 6}, 1, 1},
		{"no gap", FillRows{Dst: 0x1001, Pitch: 10, RowBytes: 10, Rows: 3}, 3, 3},
		{"one row", FillRows{Dst: 0x1000, Pitch: 100, RowBytes: 8, Rows: 1}, 1, 1},
		{"rows 2^32 bytes apart", FillRows{Dst: 0x1000, Pitch: 1 << 32, RowBytes: 8, Rows: 3}, 3, 3},
		{"rows 2^32 + 1 bytes apart", FillRows{Dst: 0x1000, Pitch: 1<<32 + 1, RowBytes: 9, Rows: 6}, 15, 15},
		{"no rows", FillRows{Dst: 0x1000, Pitch: 16, RowBytes: 8}, 0, 0},
		{"empty rows", FillRows{Dst: 0x1000, Pitch: 16, Rows: 8}, 0, 0},
	} {
		launches, remaps, err := tc.f.Launches()
		if err != nil || launches != tc.launches || remaps != tc.remaps {
			t.Errorf("%s: Launches %d, %d, %v; want %d, %d", tc.name, launches, remaps, err, tc.launches, tc.remaps)
			continue
		}
		b := tc.f.Append(nil, Hopper, 0x5a)
		words, _ := tc.f.Words()
		e := runCopy(t, b)
		if uint64(len(e.launches)) != launches || uint64(len(b)) != words {
			t.Errorf("%s: %d launches in %d words; Words %d", tc.name, len(e.launches), len(b), words)
		}
		// Every byte of the rows set, and none between them.
		want := map[uint64]bool{}
		for r := range tc.f.Rows {
			for i := range tc.f.RowBytes {
				want[tc.f.Dst+r*tc.f.Pitch+i] = true
			}
		}
		for a, v := range e.mem {
			if !want[a] || v != 0x5a {
				t.Errorf("%s: byte %#x set to %#x", tc.name, a, v)
			}
		}
		for a := range want {
			if _, ok := e.mem[a]; !ok {
				t.Errorf("%s: byte %#x not set", tc.name, a)
			}
		}
	}
	// 2^32 + 4 rows: two launches a column.
	f := FillRows{Dst: 0x1001, Pitch: 16, RowBytes: 10, Rows: MaxLines + 5}
	e := runCopy(t, f.Append(nil, Hopper, 1))
	if l, m, err := f.Launches(); err != nil || l != 6 || m != 3 || len(e.launches) != 6 {
		t.Fatalf("%+v: Launches %d, %d, %v; %d launches", f, l, m, err, len(e.launches))
	}
	for i, want := range []uint32{MaxLines, 5, MaxLines, 5, MaxLines, 5} {
		l := e.launches[i]
		if l[CopyLineCount] != want || l[CopyLaunchDMA]&DMAMultiLine == 0 || l[0x414] != 16 {
			t.Errorf("launch %d: %d lines, LAUNCH_DMA %#x, pitch %d", i, l[CopyLineCount], l[CopyLaunchDMA], l[0x414])
		}
	}
	if got := uint64(e.launches[1][CopyOffsetOutUpper])<<32 | uint64(e.launches[1][CopyOffsetOutUpper+4]); got != 0x1001+MaxLines*16 {
		t.Errorf("the second launch of the heads starts at %#x", got)
	}
	for _, f := range []FillRows{
		{Dst: 1<<64 - 100, Pitch: 64, RowBytes: 8, Rows: 3},
		{Dst: 0, Pitch: 1 << 63, RowBytes: 1, Rows: 3},
	} {
		if _, _, err := f.Launches(); !errors.Is(err, ErrAddress) {
			t.Errorf("%+v: Launches %v", f, err)
		}
		if b := f.Append(nil, Hopper, 1); len(b) != 0 {
			t.Errorf("%+v: %d words", f, len(b))
		}
	}
}

func TestFillRowsWords(t *testing.T) {
	const w = 0x11223344
	for _, tc := range []struct {
		name string
		f    FillRows
		none bool // AppendWords appends nothing
	}{
		{"rows with gaps", FillRows{Dst: 0x1000, Pitch: 16, RowBytes: 8, Rows: 5}, false},
		{"rows that touch", FillRows{Dst: 0x1004, Pitch: 12, RowBytes: 12, Rows: 3}, false},
		{"one row", FillRows{Dst: 0x1008, Pitch: 3, RowBytes: 20, Rows: 1}, false},
		{"rows 2^32 bytes apart", FillRows{Dst: 0x1000, Pitch: 1 << 32, RowBytes: 8, Rows: 3}, false},
		{"an odd start", FillRows{Dst: 0x1001, Pitch: 16, RowBytes: 8, Rows: 2}, true},
		{"an odd row", FillRows{Dst: 0x1000, Pitch: 16, RowBytes: 7, Rows: 2}, true},
		{"an odd pitch", FillRows{Dst: 0x1000, Pitch: 18, RowBytes: 8, Rows: 2}, true},
	} {
		b := tc.f.AppendWords(nil, Hopper, w)
		if tc.none {
			if len(b) != 0 {
				t.Errorf("%s: %d words", tc.name, len(b))
			}
			continue
		}
		words, err := tc.f.Words()
		if err != nil || uint64(len(b)) != words {
			t.Errorf("%s: %d words, Words %d (%v)", tc.name, len(b), words, err)
		}
		e := runCopy(t, b)
		want := map[uint64]byte{}
		for r := range tc.f.Rows {
			for i := range tc.f.RowBytes {
				want[tc.f.Dst+r*tc.f.Pitch+i] = byte(uint32(w) >> (8 * (i % 4)))
			}
		}
		if len(e.mem) != len(want) {
			t.Errorf("%s: %d bytes written, want %d", tc.name, len(e.mem), len(want))
		}
		for a, v := range want {
			if got, ok := e.mem[a]; !ok || got != v {
				t.Errorf("%s: byte %#x reads %#x (written %v), want %#x", tc.name, a, got, ok, v)
			}
		}
		for _, l := range e.launches {
			if l[CopyRemapComponent]>>16&3 != 3 {
				t.Errorf("%s: a launch of one-byte components", tc.name)
			}
		}
	}
}
