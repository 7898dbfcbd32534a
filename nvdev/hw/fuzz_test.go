package hw

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// FuzzParse feeds the cubin parser arbitrary bytes, starting from the real
// cubins and corruptions of them: it must never panic, must refuse with an
// error what it does not accept, and what it accepts must lay and launch
// without panicking.
func FuzzParse(f *testing.F) {
	for _, sm := range archs {
		b := readCubin(f, sm)
		f.Add(b)
		f.Add(b[:len(b)/3])
		f.Add(b[:0x40])
		for _, at := range []int{0x28, 0x3c, 0x12c8, 0x21dc, 0x2488, 0x2a58, len(b) - 64} {
			c := append([]byte(nil), b...)
			for i := 0; i < 8 && at+i < len(c); i++ {
				c[at+i] ^= 0xff
			}
			f.Add(c)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x7fELF"))
	for _, b := range hostileInputs() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte) (*Cubin, error){Parse, Inspect} {
			c, err := parse(b)
			if err != nil {
				if c != nil {
					t.Fatal("a cubin and an error")
				}
				continue
			}
			if c.Size() <= 0 || c.Size()%128 != 0 || c.Align()%256 != 0 {
				t.Fatalf("size %d, align %d", c.Size(), c.Align())
			}
			for _, k := range c.Kernels() {
				if k.Code+k.CodeBytes > uint64(c.Size()) || k.ParamOffset+k.ParamBytes > max(k.Bank0Bytes, 0) {
					t.Fatalf("kernel %+v in an image of %d bytes", *k, c.Size())
				}
				for _, g := range generations {
					if l, err := MakeLaunch(g, k, 1<<32, DefaultWindows); err == nil {
						q := QmdOf(g.Qmd, l.QmdTemplate())
						if _, high := q.Local(); q.Registers() != uint32(k.Registers) || q.Barriers() != uint32(k.Barriers) ||
							high != uint32(l.Local) || q.Program() != l.Code {
							t.Fatalf("%s on %s: descriptor of %d registers, %d barriers, %d local bytes, code at %#x; want %d, %d, %d, %#x",
								k.Name, g.Arch, q.Registers(), q.Barriers(), high, q.Program(), k.Registers, k.Barriers, l.Local, l.Code)
						}
						qmd := make([]uint32, MaxQmdWords)
						l.Stamp(qmd, make([]byte, l.Bank0Bytes), 1<<33, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, b)
					}
				}
			}
			for _, r := range c.Relocations() {
				if at, n := r.Span(); at+uint64(n) > uint64(c.Size()) {
					t.Fatalf("relocation %+v past an image of %d bytes", r, c.Size())
				}
			}
			if c.Size() <= 1<<24 {
				_, err := c.Lay(uint64(c.Align()) * 3)
				var u *UndefinedError
				if err != nil && !errors.As(err, &u) {
					t.Fatalf("Lay: %v", err)
				}
			}
		}
	})
}

// FuzzDecode reads arbitrary words as a push buffer: Decode must never
// panic, makes no more writes than the buffer has words, and reads the
// writes it returns back the same from a buffer of one Inc header and
// data word each. A buffer it reads whole, twice over, makes its writes
// twice over.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	for _, words := range [][]uint32{
		Acquire(nil, Hopper, 0x1000, 1), CopyRows(nil, Ampere, Rows{Src: 0x1000, Dst: 0x2000, RowBytes: 64, Rows: 1}),
		Fill(nil, Hopper, 0x1001, 10, 7), {Inc(SubCopy, 0x400, MaxCount)}, {OneInc(SubCompute, 0x3ffc, 3), 1, 2, 3},
	} {
		b := make([]byte, 4*len(words))
		for i, w := range words {
			le.PutUint32(b[4*i:], w)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		words := make([]uint32, len(b)/4)
		for i := range words {
			words[i] = le.Uint32(b[4*i:])
		}
		w, err := Decode(words)
		if len(w) > len(words) {
			t.Fatalf("%d words make %d writes", len(words), len(w))
		}
		var one []uint32
		for _, x := range w {
			if x.Method&^0x3ffc != 0 || x.Subchannel > 7 {
				t.Fatalf("write %+v", x)
			}
			one = append(one, Inc(x.Subchannel, x.Method, 1), x.Value)
		}
		if back, err := Decode(one); err != nil || !slices.Equal(back, w) {
			t.Fatalf("writes %+v, one a header, read back as %+v (%v)", w, back, err)
		}
		if err == nil {
			twice, err := Decode(append(slices.Clone(words), words...))
			if err != nil || !slices.Equal(twice, append(slices.Clone(w), w...)) {
				t.Fatalf("%#x twice over: %+v (%v), want %+v twice", words, twice, err, w)
			}
		}
	})
}

// FuzzHeader round-trips method headers.
func FuzzHeader(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint32(0x2b4), uint32(1))
	f.Add(uint8(4), uint8(4), uint32(0x1698), uint32(0x1011))
	f.Fuzz(func(t *testing.T, op, sc uint8, method, n uint32) {
		o := []Op{OpInc, OpNonInc, OpImmd, OpOneInc}[op%4]
		s, m, c := Subchannel(sc%8), method&0x3ffc, n&MaxCount
		var h uint32
		switch o {
		case OpInc:
			h = Inc(s, m, int(c))
		case OpNonInc:
			h = NonInc(s, m, int(c))
		case OpImmd:
			h = Immd(s, m, c)
		case OpOneInc:
			h = OneInc(s, m, int(c))
		}
		if d := DecodeHeader(h); d != (Header{o, s, m, c}) {
			t.Fatalf("%v %d %#x %d: %+v", o, s, m, c, d)
		}
	})
}

// FuzzMethods decodes what the builders encode and reads their arguments
// back.
func FuzzMethods(f *testing.F) {
	f.Add(uint8(3), uint64(0x7f0012345678), uint64(1), uint64(0x10000), uint64(4096), uint64(64), uint8(7))
	f.Add(uint8(3), uint64(1<<64-8), uint64(1), uint64(1<<64-3), uint64(1), uint64(1), uint8(7))
	f.Fuzz(func(t *testing.T, gen uint8, addr, value, dst, n, rows uint64, v byte) {
		g := generations[int(gen)%len(generations)]
		addr &^= 7
		check := func(name string, b []uint32, want map[uint32]uint32) {
			w, err := Decode(b)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := map[uint32]uint32{}
			for _, x := range w {
				got[x.Method] = x.Value
			}
			for m, v := range want {
				if got[m] != v {
					t.Fatalf("%s on %s: method %#x = %#x, want %#x", name, g.Arch, m, got[m], v)
				}
			}
		}
		hostHi := uint32(addr>>32) & (1<<(g.HostSemaphoreBits-32) - 1)
		check("acquire", Acquire(nil, g, addr, value), map[uint32]uint32{
			HostSemAddrLo: uint32(addr), HostSemAddrHi: hostHi, HostSemPayloadLo: uint32(value),
			HostSemPayloadHi: uint32(value >> 32), HostSemExecute: SemAcqCircGEQ | SemPayload64})
		check("release", ReleaseStamp(nil, g, addr, value), map[uint32]uint32{
			HostSemAddrLo: uint32(addr), HostSemAddrHi: hostHi, HostSemPayloadLo: uint32(value),
			HostSemPayloadHi: uint32(value >> 32), HostSemExecute: SemRelease | SemReleaseWFI | SemPayload64 | SemReleaseTimeStmp})
		if g.CopyRelease64 {
			check("copy release", CopyRelease(nil, g, addr, value), map[uint32]uint32{
				CopySemaphoreA: uint32(addr>>32) & (1<<(g.CopyAddressBits-32) - 1), CopySemaphoreB: uint32(addr),
				CopySemaphorePayload: uint32(value), CopySemaphorePayloadUpper: uint32(value >> 32)})
		}
		if g.ComputeRelease64 {
			check("compute release", ComputeRelease(nil, g, addr, value), map[uint32]uint32{
				ComputeReportAddressLower: uint32(addr), ComputeReportAddressUpper: uint32(addr>>32) & (1<<(g.ReportSemaphoreBits-32) - 1),
				ComputeReportPayloadLower: uint32(value),
				ComputeReportPayloadUpper: uint32(value >> 32)})
		}
		n %= 1 << 16
		r := Rows{Src: addr, Dst: dst, SrcPitch: n, DstPitch: n, RowBytes: n, Rows: rows % 64}
		launches, err := r.Launches()
		if b := CopyRows(nil, g, r); uint64(len(b)) != launches*CopyLaunchWords {
			t.Fatalf("%+v: %d words, %d launches (%v)", r, len(b), launches, err)
		} else if _, err := Decode(b); err != nil {
			t.Fatal(err)
		}
		if fits := rowsFit(addr, r.Rows, n, n) && rowsFit(dst, r.Rows, n, n); (err == nil) != (fits || r.Rows == 0 || n == 0) {
			t.Fatalf("%+v: Launches %v", r, err)
		}
		b := Fill(nil, g, dst, n, v)
		launches, remaps, err := FillLaunches(dst, n)
		if uint64(len(b)) != launches*CopyLaunchWords+remaps*FillRemapWords || (err == nil) != (dst <= math.MaxUint64-n) {
			t.Fatalf("fill %#x+%d: %d words, %d launches, %d remaps (%v)", dst, n, len(b), launches, remaps, err)
		}
		if _, err := Decode(b); err != nil {
			t.Fatal(err)
		}
		// Rows of the fill's bytes, value bytes apart.
		fr := FillRows{Dst: dst, Pitch: value, RowBytes: n, Rows: rows % 64}
		words, err := fr.Words()
		if b := fr.Append(nil, g, v); err != nil && len(b) != 0 || err == nil && uint64(len(b)) != words {
			t.Fatalf("%+v: %d words, Words %d (%v)", fr, len(b), words, err)
		} else if _, err := Decode(b); err != nil {
			t.Fatal(err)
		}
		if fits := fr.Rows == 0 || n == 0 || rowsFit(dst, fr.Rows, value, n); (err == nil) != fits {
			t.Fatalf("%+v: Words %v", fr, err)
		}
		aligned := dst%4 == 0 && n%4 == 0 && (fr.Rows <= 1 || value%4 == 0)
		if b := fr.AppendWords(nil, g, uint32(addr)); aligned && err == nil && uint64(len(b)) != words || (!aligned || err != nil) && len(b) != 0 {
			t.Fatalf("%+v: %d words of four-byte words, Words %d (%v)", fr, len(b), words, err)
		}
		var base uint64
		ring, err := AppendSegment(nil, g, &base, addr, uint32(n)+1, Level(v&1), v&2 != 0)
		if err == nil {
			e := ring[len(ring)-1]
			if e.Address() != addr&(1<<40-1) || e.Length() != uint32(n)+1 || e.Level() != Level(v&1) || e.Sync() != (v&2 != 0) {
				t.Fatalf("segment %#x: %#x", addr, e)
			}
			if addr >= 1<<40 && (len(ring) != 2 || ring[0].Base() != addr&^(1<<40-1)) {
				t.Fatalf("segment %#x: %x", addr, ring)
			}
		} else if addr < 1<<40 || g.ExtendedBase && addr < 1<<57 {
			t.Fatalf("segment %#x on %s: %v", addr, g.Arch, err)
		}
	})
}

// FuzzQmd sets one field of a descriptor and checks that it reads back and
// that no other field moved.
func FuzzQmd(f *testing.F) {
	f.Add(false, uint16(3), uint64(0xffffffff), uint64(0x1234))
	f.Fuzz(func(t *testing.T, v04 bool, which uint16, value, fill uint64) {
		l := QmdV03
		if v04 {
			l = QmdV04
		}
		_, fields := allFields(l)
		w := make([]uint32, l.Words)
		for i, fl := range fields {
			fl.Set(w, fill*uint64(i+1))
		}
		target := fields[int(which)%len(fields)]
		target.Set(w, value)
		if got := target.Get(w); got != value&target.Max() {
			t.Fatalf("MW(%d:%d) reads %#x, set %#x", target.Hi(), target.Lo, got, value)
		}
		for i, fl := range fields {
			if fl != target && fl.Get(w) != fill*uint64(i+1)&fl.Max() {
				t.Fatalf("setting MW(%d:%d) moved MW(%d:%d)", target.Hi(), target.Lo, fl.Hi(), fl.Lo)
			}
		}
	})
}

// hostileInputs are cubins of the shapes that made the parser take memory
// and work out of proportion to their size, smaller: symbols that name
// one long string or its suffixes, sections times kernels, sections that
// share their bytes, and sections of zeroes or padding past MaxZeroed;
// and cubins whose section 0, null in ELF, is a symbol table or
// relocations, which made it panic.
func hostileInputs() [][]byte {
	long := append(append([]byte{0}, bytes.Repeat([]byte{'k'}, 4<<10)...), 0)
	inputs := [][]byte{
		hostileCubin(kernels(64, func(int) uint32 { return 1 }), long),
		hostileCubin(kernels(64, func(i int) uint32 { return uint32(1 + i) }), long),
	}
	var strs []byte
	var more []hsec
	var at []uint32
	for i := range 32 {
		at = append(at, uint32(len(strs)+1))
		name := fmt.Sprintf("k%d", i)
		strs = append(strs, name...)
		strs = append(strs, 0)
		more = append(more, hsec{name: ".nv.constant3." + name, typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: make([]byte, 4), align: 4},
			hsec{name: ".nv.info." + name, typ: shtCUDAInfo, data: []byte{eifmtHVAL, AttrMaxRegCount, 32, 0}, align: 4})
	}
	inputs = append(inputs, hostileCubin(kernels(32, func(i int) uint32 { return at[i] }), append([]byte{0}, strs...), more...))
	one := kernels(1, func(int) uint32 { return 1 })
	data := hsec{name: ".nv.global.init", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, data: make([]byte, 256), align: 8}
	aliases := []hsec{data}
	for range 16 {
		a := data
		a.alias = hStrtab + 1
		aliases = append(aliases, a)
	}
	inputs = append(inputs, hostileCubin(one, []byte("\x00k\x00"), aliases...))
	for _, size := range []uint64{MaxImage - 1<<12, MaxZeroed + 1, 1<<64 - 1} {
		inputs = append(inputs, hostileCubin(one, []byte("\x00k\x00"),
			hsec{name: ".nv.global", typ: elf.SHT_NOBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, size: size, align: 8}))
	}
	inputs = append(inputs, hostileCubin(one, []byte("\x00k\x00"),
		hsec{name: ".nv.global.init", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, data: []byte{1}, align: 1 << 16}))
	return append(inputs, nullSectionAs(elf.SHT_SYMTAB), nullSectionAs(elf.SHT_REL))
}
