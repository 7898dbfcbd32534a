package hw

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// published is a field as NVIDIA's header states it: MW(hi:lo), for the
// slot i of an indexed field.
type published struct {
	hi, lo func(i int) int
	n      int // slots; 1 for a plain field
}

func at(hi, lo int) published {
	return published{hi: func(int) int { return hi }, lo: func(int) int { return lo }, n: 1}
}

func indexed(n int, hi, lo func(i int) int) published { return published{hi: hi, lo: lo, n: n} }

// v04Published is clcbc0qmd.h's NVCBC0_QMDV04_00_* bit ranges for the
// fields the driver sets.
var v04Published = map[string]published{
	"QMD_MAJOR_VERSION":                              at(583, 580),
	"QMD_MINOR_VERSION":                              at(579, 576),
	"QMD_TYPE":                                       at(25, 23),
	"API_VISIBLE_CALL_LIMIT":                         at(568, 568),
	"SAMPLER_INDEX":                                  at(569, 569),
	"SASS_VERSION":                                   at(543, 536),
	"CWD_MEMBAR_TYPE":                                at(1137, 1136),
	"INVALIDATE_TEXTURE_HEADER_CACHE":                at(602, 602),
	"INVALIDATE_TEXTURE_SAMPLER_CACHE":               at(603, 603),
	"INVALIDATE_TEXTURE_DATA_CACHE":                  at(604, 604),
	"INVALIDATE_SHADER_DATA_CACHE":                   at(605, 605),
	"INVALIDATE_INSTRUCTION_CACHE":                   at(606, 606),
	"INVALIDATE_SHADER_CONSTANT_CACHE":               at(607, 607),
	"GRID_WIDTH":                                     at(1055, 1024),
	"GRID_HEIGHT":                                    at(1071, 1056),
	"GRID_DEPTH":                                     at(1103, 1088),
	"CTA_THREAD_DIMENSION0":                          at(1167, 1152),
	"CTA_THREAD_DIMENSION1":                          at(1183, 1168),
	"CTA_THREAD_DIMENSION2":                          at(1199, 1184),
	"REGISTER_COUNT":                                 at(1208, 1200),
	"BARRIER_COUNT":                                  at(1215, 1211),
	"PROGRAM_ADDRESS_LOWER":                          at(1247, 1216),
	"PROGRAM_ADDRESS_UPPER":                          at(1272, 1248),
	"SHARED_MEMORY_SIZE":                             at(601, 584),
	"MIN_SM_CONFIG_SHARED_MEM_SIZE":                  at(613, 608),
	"MAX_SM_CONFIG_SHARED_MEM_SIZE":                  at(619, 614),
	"TARGET_SM_CONFIG_SHARED_MEM_SIZE":               at(625, 620),
	"SHADER_LOCAL_MEMORY_LOW_SIZE":                   at(535, 512),
	"SHADER_LOCAL_MEMORY_HIGH_SIZE":                  at(567, 544),
	"DEPENDENT_QMD_ENABLE(0)":                        at(368, 368),
	"DEPENDENT_QMD_ACTION(0)":                        at(371, 369),
	"DEPENDENT_QMD_PREFETCH(0)":                      at(372, 372),
	"DEPENDENT_QMD0_POINTER":                         at(479, 448),
	"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED":            at(1375, 1344),
	"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED":            at(1392, 1376),
	"PROGRAM_PREFETCH_SIZE":                          at(1401, 1393),
	"PROGRAM_PREFETCH_TYPE":                          at(1403, 1402),
	"CWD_MEMBAR_TASK_CHASING_ENABLE":                 at(382, 382),
	"CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8": at(575, 570),
	"CONSTANT_BUFFER_PREFETCH(i)":                    indexed(8, func(i int) int { return 418 + i*4 }, func(i int) int { return 417 + i*4 }),
	"CONSTANT_BUFFER_VALID(i)":                       indexed(8, func(i int) int { return 416 + i*4 }, func(i int) int { return 416 + i*4 }),
	"CONSTANT_BUFFER_INVALIDATE(i)":                  indexed(8, func(i int) int { return 419 + i*4 }, func(i int) int { return 419 + i*4 }),
	"CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6(i)":         indexed(8, func(i int) int { return 1567 + i*64 }, func(i int) int { return 1536 + i*64 }),
	"CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6(i)":         indexed(8, func(i int) int { return 1586 + i*64 }, func(i int) int { return 1568 + i*64 }),
	"CONSTANT_BUFFER_SIZE_SHIFTED4(i)":               indexed(8, func(i int) int { return 1599 + i*64 }, func(i int) int { return 1587 + i*64 }),
	"RELEASE_ENABLE(i)":                              indexed(3, func(i int) int { return 320 + i*16 }, func(i int) int { return 320 + i*16 }),
	"RELEASE_STRUCTURE_SIZE(i)":                      indexed(3, func(i int) int { return 322 + i*16 }, func(i int) int { return 321 + i*16 }),
	"RELEASE_MEMBAR_TYPE(i)":                         indexed(3, func(i int) int { return 323 + i*16 }, func(i int) int { return 323 + i*16 }),
	"RELEASE_PAYLOAD64B(i)":                          indexed(3, func(i int) int { return 332 + i*16 }, func(i int) int { return 332 + i*16 }),
	"RELEASE_SEMAPHOREi_ADDR_LOWER":                  indexed(3, func(i int) int { return []int{671, 799, 927}[i] }, func(i int) int { return []int{640, 768, 896}[i] }),
	"RELEASE_SEMAPHOREi_ADDR_UPPER":                  indexed(3, func(i int) int { return []int{696, 824, 952}[i] }, func(i int) int { return []int{672, 800, 928}[i] }),
	"RELEASE_SEMAPHOREi_PAYLOAD_LOWER":               indexed(3, func(i int) int { return []int{735, 863, 991}[i] }, func(i int) int { return []int{704, 832, 960}[i] }),
	"RELEASE_SEMAPHOREi_PAYLOAD_UPPER":               indexed(3, func(i int) int { return []int{767, 895, 1023}[i] }, func(i int) int { return []int{736, 864, 992}[i] }),
}

// v03Published is clc6c0qmd.h's NVC6C0_QMDV03_00_* bit ranges for the
// fields the driver sets (clc7c0qmd.h and clc9c0qmd.h agree).
var v03Published = map[string]published{
	"QMD_MAJOR_VERSION":                   at(583, 580),
	"QMD_VERSION":                         at(579, 576),
	"API_VISIBLE_CALL_LIMIT":              at(378, 378),
	"SAMPLER_INDEX":                       at(382, 382),
	"SASS_VERSION":                        at(1663, 1656),
	"CWD_MEMBAR_TYPE":                     at(369, 368),
	"SM_GLOBAL_CACHING_ENABLE":            at(134, 134),
	"INVALIDATE_TEXTURE_HEADER_CACHE":     at(186, 186),
	"INVALIDATE_TEXTURE_SAMPLER_CACHE":    at(187, 187),
	"INVALIDATE_TEXTURE_DATA_CACHE":       at(188, 188),
	"INVALIDATE_SHADER_DATA_CACHE":        at(189, 189),
	"INVALIDATE_INSTRUCTION_CACHE":        at(190, 190),
	"INVALIDATE_SHADER_CONSTANT_CACHE":    at(191, 191),
	"CTA_RASTER_WIDTH":                    at(415, 384),
	"CTA_RASTER_HEIGHT":                   at(431, 416),
	"CTA_RASTER_DEPTH":                    at(463, 448),
	"CTA_THREAD_DIMENSION0":               at(607, 592),
	"CTA_THREAD_DIMENSION1":               at(623, 608),
	"CTA_THREAD_DIMENSION2":               at(639, 624),
	"REGISTER_COUNT_V":                    at(656, 648),
	"BARRIER_COUNT":                       at(767, 763),
	"PROGRAM_ADDRESS_LOWER":               at(1567, 1536),
	"PROGRAM_ADDRESS_UPPER":               at(1584, 1568),
	"SHARED_MEMORY_SIZE":                  at(561, 544),
	"MIN_SM_CONFIG_SHARED_MEM_SIZE":       at(567, 562),
	"MAX_SM_CONFIG_SHARED_MEM_SIZE":       at(574, 569),
	"TARGET_SM_CONFIG_SHARED_MEM_SIZE":    at(662, 657),
	"SHADER_LOCAL_MEMORY_LOW_SIZE":        at(759, 736),
	"SHADER_LOCAL_MEMORY_HIGH_SIZE":       at(1623, 1600),
	"DEPENDENT_QMD0_POINTER":              at(511, 480),
	"DEPENDENT_QMD0_ENABLE":               at(512, 512),
	"DEPENDENT_QMD0_ACTION":               at(515, 513),
	"DEPENDENT_QMD0_PREFETCH":             at(516, 516),
	"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED": at(287, 256),
	"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED": at(1640, 1632),
	"PROGRAM_PREFETCH_SIZE":               at(1649, 1641),
	"PROGRAM_PREFETCH_TYPE":               at(1651, 1650),
	"CONSTANT_BUFFER_VALID(i)":            indexed(8, func(i int) int { return 640 + i }, func(i int) int { return 640 + i }),
	"CONSTANT_BUFFER_ADDR_LOWER(i)":       indexed(8, func(i int) int { return 1055 + i*64 }, func(i int) int { return 1024 + i*64 }),
	"CONSTANT_BUFFER_ADDR_UPPER(i)":       indexed(8, func(i int) int { return 1072 + i*64 }, func(i int) int { return 1056 + i*64 }),
	"CONSTANT_BUFFER_INVALIDATE(i)":       indexed(8, func(i int) int { return 1074 + i*64 }, func(i int) int { return 1074 + i*64 }),
	"CONSTANT_BUFFER_SIZE_SHIFTED4(i)":    indexed(8, func(i int) int { return 1087 + i*64 }, func(i int) int { return 1075 + i*64 }),
	"RELEASEi_ADDRESS_LOWER":              indexed(3, func(i int) int { return []int{799, 927, 1695}[i] }, func(i int) int { return []int{768, 896, 1664}[i] }),
	"RELEASEi_ADDRESS_UPPER":              indexed(3, func(i int) int { return []int{807, 935, 1703}[i] }, func(i int) int { return []int{800, 928, 1696}[i] }),
	"RELEASEi_MEMBAR_TYPE":                indexed(3, func(i int) int { return []int{819, 947, 1715}[i] }, func(i int) int { return []int{819, 947, 1715}[i] }),
	"RELEASEi_ENABLE":                     indexed(3, func(i int) int { return []int{823, 951, 1719}[i] }, func(i int) int { return []int{823, 951, 1719}[i] }),
	"RELEASEi_PAYLOAD64B":                 indexed(3, func(i int) int { return []int{829, 957, 1725}[i] }, func(i int) int { return []int{829, 957, 1725}[i] }),
	"RELEASEi_STRUCTURE_SIZE":             indexed(3, func(i int) int { return []int{831, 959, 1727}[i] }, func(i int) int { return []int{830, 958, 1726}[i] }),
	"RELEASEi_PAYLOAD_LOWER":              indexed(3, func(i int) int { return []int{863, 991, 1759}[i] }, func(i int) int { return []int{832, 960, 1728}[i] }),
	"RELEASEi_PAYLOAD_UPPER":              indexed(3, func(i int) int { return []int{895, 1023, 1791}[i] }, func(i int) int { return []int{864, 992, 1760}[i] }),
}

// fieldsOf names a layout's fields as the headers do.
func fieldsOf(l *QmdLayout) map[string][]Field {
	one := func(f Field) []Field { return []Field{f} }
	m := map[string][]Field{
		"QMD_MAJOR_VERSION":                   one(l.MajorField),
		"API_VISIBLE_CALL_LIMIT":              one(l.ApiVisibleCallLimit),
		"SAMPLER_INDEX":                       one(l.SamplerIndex),
		"SASS_VERSION":                        one(l.SassVersion),
		"CWD_MEMBAR_TYPE":                     one(l.CwdMembarType),
		"INVALIDATE_TEXTURE_HEADER_CACHE":     one(l.InvalidateTextureHeader),
		"INVALIDATE_TEXTURE_SAMPLER_CACHE":    one(l.InvalidateTextureSampler),
		"INVALIDATE_TEXTURE_DATA_CACHE":       one(l.InvalidateTextureData),
		"INVALIDATE_SHADER_DATA_CACHE":        one(l.InvalidateShaderData),
		"INVALIDATE_INSTRUCTION_CACHE":        one(l.InvalidateInstruction),
		"INVALIDATE_SHADER_CONSTANT_CACHE":    one(l.InvalidateShaderConstant),
		"CTA_THREAD_DIMENSION0":               one(l.Block[0]),
		"CTA_THREAD_DIMENSION1":               one(l.Block[1]),
		"CTA_THREAD_DIMENSION2":               one(l.Block[2]),
		"BARRIER_COUNT":                       one(l.BarrierCount),
		"PROGRAM_ADDRESS_LOWER":               one(l.ProgramLower),
		"PROGRAM_ADDRESS_UPPER":               one(l.ProgramUpper),
		"SHARED_MEMORY_SIZE":                  one(l.SharedMemorySize),
		"MIN_SM_CONFIG_SHARED_MEM_SIZE":       one(l.MinSMConfigShared),
		"MAX_SM_CONFIG_SHARED_MEM_SIZE":       one(l.MaxSMConfigShared),
		"TARGET_SM_CONFIG_SHARED_MEM_SIZE":    one(l.TargetSMConfig),
		"SHADER_LOCAL_MEMORY_LOW_SIZE":        one(l.LocalLowSize),
		"SHADER_LOCAL_MEMORY_HIGH_SIZE":       one(l.LocalHighSize),
		"PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED": one(l.PrefetchLower),
		"PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED": one(l.PrefetchUpper),
		"PROGRAM_PREFETCH_SIZE":               one(l.PrefetchSize),
		"PROGRAM_PREFETCH_TYPE":               one(l.PrefetchType),
	}
	cb := func(f func(ConstantBuffer) Field) (s []Field) {
		for _, c := range l.ConstantBuffers {
			s = append(s, f(c))
		}
		return s
	}
	rel := func(f func(ReleaseSlot) Field) (s []Field) {
		for _, r := range l.Releases {
			s = append(s, f(r))
		}
		return s
	}
	m["CONSTANT_BUFFER_VALID(i)"] = cb(func(c ConstantBuffer) Field { return c.Valid })
	m["CONSTANT_BUFFER_INVALIDATE(i)"] = cb(func(c ConstantBuffer) Field { return c.Invalidate })
	m["CONSTANT_BUFFER_SIZE_SHIFTED4(i)"] = cb(func(c ConstantBuffer) Field { return c.Size })
	if l == QmdV04 {
		m["QMD_MINOR_VERSION"] = one(l.MinorField)
		m["QMD_TYPE"] = one(l.QmdType)
		m["GRID_WIDTH"], m["GRID_HEIGHT"], m["GRID_DEPTH"] = one(l.Grid[0]), one(l.Grid[1]), one(l.Grid[2])
		m["REGISTER_COUNT"] = one(l.RegisterCount)
		m["DEPENDENT_QMD_ENABLE(0)"] = one(l.DependentEnable)
		m["DEPENDENT_QMD_ACTION(0)"] = one(l.DependentAction)
		m["DEPENDENT_QMD_PREFETCH(0)"] = one(l.DependentPrefetch)
		m["DEPENDENT_QMD0_POINTER"] = one(l.DependentPointer)
		m["CWD_MEMBAR_TASK_CHASING_ENABLE"] = one(l.CwdMembarTaskChasing)
		m["CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8"] = one(l.BankPrefetchMax)
		m["CONSTANT_BUFFER_PREFETCH(i)"] = cb(func(c ConstantBuffer) Field { return c.Prefetch })
		m["CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6(i)"] = cb(func(c ConstantBuffer) Field { return c.AddressLower })
		m["CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6(i)"] = cb(func(c ConstantBuffer) Field { return c.AddressUpper })
		m["RELEASE_ENABLE(i)"] = rel(func(r ReleaseSlot) Field { return r.Enable })
		m["RELEASE_STRUCTURE_SIZE(i)"] = rel(func(r ReleaseSlot) Field { return r.StructureSize })
		m["RELEASE_MEMBAR_TYPE(i)"] = rel(func(r ReleaseSlot) Field { return r.MembarType })
		m["RELEASE_PAYLOAD64B(i)"] = rel(func(r ReleaseSlot) Field { return r.Payload64 })
		m["RELEASE_SEMAPHOREi_ADDR_LOWER"] = rel(func(r ReleaseSlot) Field { return r.AddressLower })
		m["RELEASE_SEMAPHOREi_ADDR_UPPER"] = rel(func(r ReleaseSlot) Field { return r.AddressUpper })
		m["RELEASE_SEMAPHOREi_PAYLOAD_LOWER"] = rel(func(r ReleaseSlot) Field { return r.PayloadLower })
		m["RELEASE_SEMAPHOREi_PAYLOAD_UPPER"] = rel(func(r ReleaseSlot) Field { return r.PayloadUpper })
	} else {
		m["QMD_VERSION"] = one(l.MinorField)
		m["SM_GLOBAL_CACHING_ENABLE"] = one(l.SmGlobalCachingEnable)
		m["CTA_RASTER_WIDTH"], m["CTA_RASTER_HEIGHT"], m["CTA_RASTER_DEPTH"] = one(l.Grid[0]), one(l.Grid[1]), one(l.Grid[2])
		m["REGISTER_COUNT_V"] = one(l.RegisterCount)
		m["DEPENDENT_QMD0_ENABLE"] = one(l.DependentEnable)
		m["DEPENDENT_QMD0_ACTION"] = one(l.DependentAction)
		m["DEPENDENT_QMD0_PREFETCH"] = one(l.DependentPrefetch)
		m["DEPENDENT_QMD0_POINTER"] = one(l.DependentPointer)
		m["CONSTANT_BUFFER_ADDR_LOWER(i)"] = cb(func(c ConstantBuffer) Field { return c.AddressLower })
		m["CONSTANT_BUFFER_ADDR_UPPER(i)"] = cb(func(c ConstantBuffer) Field { return c.AddressUpper })
		m["RELEASEi_ADDRESS_LOWER"] = rel(func(r ReleaseSlot) Field { return r.AddressLower })
		m["RELEASEi_ADDRESS_UPPER"] = rel(func(r ReleaseSlot) Field { return r.AddressUpper })
		m["RELEASEi_MEMBAR_TYPE"] = rel(func(r ReleaseSlot) Field { return r.MembarType })
		m["RELEASEi_ENABLE"] = rel(func(r ReleaseSlot) Field { return r.Enable })
		m["RELEASEi_PAYLOAD64B"] = rel(func(r ReleaseSlot) Field { return r.Payload64 })
		m["RELEASEi_STRUCTURE_SIZE"] = rel(func(r ReleaseSlot) Field { return r.StructureSize })
		m["RELEASEi_PAYLOAD_LOWER"] = rel(func(r ReleaseSlot) Field { return r.PayloadLower })
		m["RELEASEi_PAYLOAD_UPPER"] = rel(func(r ReleaseSlot) Field { return r.PayloadUpper })
	}
	return m
}

// TestQmdLayoutsMatchHeaders places every field the driver sets against
// the bit ranges NVIDIA's headers publish.
func TestQmdLayoutsMatchHeaders(t *testing.T) {
	for _, tc := range []struct {
		l   *QmdLayout
		pub map[string]published
	}{{QmdV03, v03Published}, {QmdV04, v04Published}} {
		fields := fieldsOf(tc.l)
		if len(fields) != len(tc.pub) {
			t.Errorf("%s: %d fields named, %d published", tc.l.Name, len(fields), len(tc.pub))
		}
		for name, p := range tc.pub {
			fs, ok := fields[name]
			if !ok || len(fs) != p.n {
				t.Errorf("%s %s: %d slots, %d published", tc.l.Name, name, len(fs), p.n)
				continue
			}
			for i, f := range fs {
				if f.Hi() != p.hi(i) || int(f.Lo) != p.lo(i) {
					t.Errorf("%s %s[%d]: MW(%d:%d), published MW(%d:%d)", tc.l.Name, name, i, f.Hi(), f.Lo, p.hi(i), p.lo(i))
				}
			}
		}
	}
	if QmdV03.Bytes() != 256 || QmdV04.Bytes() != 384 || QmdV04.Words != MaxQmdWords {
		t.Errorf("sizes %d, %d", QmdV03.Bytes(), QmdV04.Bytes())
	}
}

// allFields lists a layout's fields, each with a name, in the order of
// their names.
func allFields(l *QmdLayout) (names []string, fields []Field) {
	m := fieldsOf(l)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		for i, f := range m[name] {
			names = append(names, fmt.Sprintf("%s[%d]", name, i))
			fields = append(fields, f)
		}
	}
	return names, fields
}

// TestQmdFieldsDisjoint: no two fields share a bit, and every field lies
// in the descriptor.
func TestQmdFieldsDisjoint(t *testing.T) {
	for _, l := range []*QmdLayout{QmdV03, QmdV04} {
		owner := make([]string, 32*l.Words)
		names, fields := allFields(l)
		for i, f := range fields {
			if f.Width == 0 {
				continue
			}
			if f.Hi() >= 32*l.Words {
				t.Errorf("%s %s past the descriptor", l.Name, names[i])
				continue
			}
			for b := int(f.Lo); b <= f.Hi(); b++ {
				if owner[b] != "" {
					t.Errorf("%s: bit %d in %s and %s", l.Name, b, owner[b], names[i])
				}
				owner[b] = names[i]
			}
		}
	}
}

// TestQmdFieldsRoundTrip sets every field to a random value and reads each
// back.
func TestQmdFieldsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, l := range []*QmdLayout{QmdV03, QmdV04} {
		for range 100 {
			w := make([]uint32, l.Words)
			_, fields := allFields(l)
			vals := make([]uint64, len(fields))
			for i, f := range fields {
				vals[i] = r.Uint64() & f.Max()
				f.Set(w, vals[i])
			}
			for i, f := range fields {
				if got := f.Get(w); got != vals[i] {
					t.Fatalf("%s: field MW(%d:%d) reads %#x, set %#x", l.Name, f.Hi(), f.Lo, got, vals[i])
				}
			}
		}
	}
}

func TestFieldSpanningWords(t *testing.T) {
	w := make([]uint32, 4)
	f := MW(75, 20) // bits 20..75: three words
	f.Set(w, 0xfedcba9876543210)
	if got := f.Get(w); got != 0xfedcba9876543210&f.Max() {
		t.Fatalf("%#x", got)
	}
	if w[0]&(1<<20-1) != 0 || w[2]>>12 != 0 || w[3] != 0 {
		t.Fatalf("neighbours touched: %x", w)
	}
}

// TestQmdSetters round-trips the typed setters on both layouts.
func TestQmdSetters(t *testing.T) {
	for _, l := range []*QmdLayout{QmdV03, QmdV04} {
		var buf [MaxQmdWords]uint32
		q := QmdOf(l, buf[:])
		q.SetVersion()
		l.CwdMembarType.Set(q.W, CwdMembarL1Sysmembar)
		q.SetGrid(1<<31-1, 65535, 65535)
		q.SetBlock(1024, 1, 64)
		q.SetRegisters(255)
		q.SetBarriers(16)
		q.SetProgram(0x0000_7f12_3456_7880)
		q.SetPrefetch(0x0000_7f12_3456_7800, 0x10000000)
		q.SetShared(228<<10, 3, 58, 58)
		q.SetLocal(0x10, 0x640)
		q.SetConstantBuffer(0, 0x0000_7f00_0000_1000, 0x218, true)
		q.SetConstantBuffer(4, 0x0000_7f00_0000_3100, 56, false)
		q.SetConstantAddress(0, 0x0000_00ff_ffff_ff00)
		q.SetRelease(2, 0x0000_00ab_cdef_0120, 0x1234_5678_9abc_def0)
		q.SetDependent(0x0000_00ff_0000_0100, true)

		if maj, min := q.Version(); maj != l.Major || min != l.Minor {
			t.Errorf("%s: version %d.%d", l.Name, maj, min)
		}
		if q.Grid() != [3]uint32{1<<31 - 1, 65535, 65535} || q.Block() != [3]uint32{1024, 1, 64} {
			t.Errorf("%s: grid %v block %v", l.Name, q.Grid(), q.Block())
		}
		if q.Registers() != 255 || q.Barriers() != 16 {
			t.Errorf("%s: registers %d barriers %d", l.Name, q.Registers(), q.Barriers())
		}
		if q.Program() != 0x0000_7f12_3456_7880 {
			t.Errorf("%s: program %#x", l.Name, q.Program())
		}
		if a, n := q.Prefetch(); a != 0x0000_7f12_3456_7800 || n != 0x1ff {
			t.Errorf("%s: prefetch %#x %#x", l.Name, a, n)
		}
		if b, mn, mx, tg := q.Shared(); b != 228<<10 || mn != 3 || mx != 58 || tg != 58 {
			t.Errorf("%s: shared %d %d %d %d", l.Name, b, mn, mx, tg)
		}
		if lo, hi := q.Local(); lo != 0x10 || hi != 0x640 {
			t.Errorf("%s: local %#x %#x", l.Name, lo, hi)
		}
		if v, a, s, inv := q.ConstantBuffer(0); !v || a != 0x0000_00ff_ffff_ff00 || s != 0x220 || !inv {
			t.Errorf("%s: bank 0 %v %#x %#x %v", l.Name, v, a, s, inv)
		}
		if v, a, s, inv := q.ConstantBuffer(4); !v || a != 0x0000_7f00_0000_3100 || s != 64 || inv {
			t.Errorf("%s: bank 4 %v %#x %#x %v", l.Name, v, a, s, inv)
		}
		if v, _, _, _ := q.ConstantBuffer(1); v {
			t.Errorf("%s: bank 1 valid", l.Name)
		}
		if en, p64, a, v := q.Release(2); !en || !p64 || a != 0x0000_00ab_cdef_0120 || v != 0x1234_5678_9abc_def0 {
			t.Errorf("%s: release %v %v %#x %#x", l.Name, en, p64, a, v)
		}
		if en, _, _, _ := q.Release(0); en {
			t.Errorf("%s: release 0 enabled", l.Name)
		}
		if next, en := q.Dependent(); !en || next != 0x0000_00ff_0000_0100 {
			t.Errorf("%s: dependent %#x %v", l.Name, next, en)
		}
		// A linked launch ends with the GPU's membar where the version
		// chases tasks (V04_00), with the system's otherwise.
		v04 := l == QmdV04
		wantMembar := map[bool]uint64{true: CwdMembarL1Membar, false: CwdMembarL1Sysmembar}
		if got := l.CwdMembarType.Get(q.W); got != wantMembar[v04] || l.CwdMembarTaskChasing.Get(q.W) != b2u(v04) {
			t.Errorf("%s: linked membar %d, task chasing %d", l.Name, got, l.CwdMembarTaskChasing.Get(q.W))
		}
		// The banks' prefetch, V04_00 alone: one bound for every bank,
		// the largest asked for, at most 63 x 256 bytes.
		for _, tc := range []struct {
			set   int
			n     uint32
			on    [3]bool // banks 0, 1, 5
			bound uint32
		}{
			{0, 0x220, [3]bool{true, false, false}, 0x300},
			{1, 0x10, [3]bool{true, true, false}, 0x300},
			{5, 1 << 16, [3]bool{true, true, true}, 0x3f00},
		} {
			q.SetBankPrefetch(tc.set, tc.n)
			for j, bank := range []int{0, 1, 5} {
				on, bound := q.BankPrefetch(bank)
				want, wantBound := tc.on[j] && v04, tc.bound
				if !v04 {
					wantBound = 0
				}
				if on != want || bound != wantBound {
					t.Errorf("%s: after bank %d of %#x, bank %d prefetch %v bound %#x, want %v %#x", l.Name, tc.set, tc.n, bank, on, bound, want, wantBound)
				}
			}
		}
		q.ClearDependent()
		if got := l.CwdMembarType.Get(q.W); got != CwdMembarL1Sysmembar || l.CwdMembarTaskChasing.Get(q.W) != 0 {
			t.Errorf("%s: unlinked membar %d, task chasing %d", l.Name, got, l.CwdMembarTaskChasing.Get(q.W))
		}
		q.ClearRelease(2)
		if _, en := q.Dependent(); en {
			t.Errorf("%s: dependent still enabled", l.Name)
		}
		if en, _, _, _ := q.Release(2); en {
			t.Errorf("%s: release still enabled", l.Name)
		}
		if slices.ContainsFunc(buf[l.Words:], func(w uint32) bool { return w != 0 }) {
			t.Errorf("%s: words past the descriptor written", l.Name)
		}
		q.Clear()
		if slices.ContainsFunc(buf[:], func(w uint32) bool { return w != 0 }) {
			t.Errorf("%s: Clear", l.Name)
		}
	}
}
