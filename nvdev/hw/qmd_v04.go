package hw

// QmdV04 is the layout of QMD V04_00, the 384-byte launch descriptor of
// Hopper (HOPPER_COMPUTE_A). Its bit ranges are those of NVIDIA's
// clcbc0qmd.h (NVCBC0_QMDV04_00_*). Unlike V03_00 it holds constant bank
// addresses shifted by 6, and release slots with their control bits
// gathered at 320+16i and their addresses and payloads at 640+128i.
var QmdV04 = &QmdLayout{
	Name:  "V04_00",
	Words: 96,
	Major: 4, Minor: 0,
	MajorField: MW(583, 580), // QMD_MAJOR_VERSION
	MinorField: MW(579, 576), // QMD_MINOR_VERSION

	QmdType:                  MW(25, 23),
	ApiVisibleCallLimit:      MW(568, 568),
	SamplerIndex:             MW(569, 569),
	SassVersion:              MW(543, 536),
	CwdMembarType:            MW(1137, 1136),
	InvalidateTextureHeader:  MW(602, 602),
	InvalidateTextureSampler: MW(603, 603),
	InvalidateTextureData:    MW(604, 604),
	InvalidateShaderData:     MW(605, 605),
	InvalidateInstruction:    MW(606, 606),
	InvalidateShaderConstant: MW(607, 607),

	Grid:  [3]Field{MW(1055, 1024), MW(1071, 1056), MW(1103, 1088)}, // GRID_WIDTH/HEIGHT/DEPTH
	Block: [3]Field{MW(1167, 1152), MW(1183, 1168), MW(1199, 1184)}, // CTA_THREAD_DIMENSION0/1/2

	RegisterCount: MW(1208, 1200),
	BarrierCount:  MW(1215, 1211),

	ProgramLower: MW(1247, 1216),
	ProgramUpper: MW(1272, 1248),

	SharedMemorySize:  MW(601, 584),
	MinSMConfigShared: MW(613, 608),
	MaxSMConfigShared: MW(619, 614),
	TargetSMConfig:    MW(625, 620),

	LocalLowSize:  MW(535, 512),
	LocalHighSize: MW(567, 544),

	ConstantBuffers: v04ConstantBuffers(),
	Releases:        [3]ReleaseSlot{v04Release(0), v04Release(1), v04Release(2)},

	DependentEnable:   MW(368, 368), // DEPENDENT_QMD_ENABLE(0)
	DependentAction:   MW(371, 369),
	DependentPrefetch: MW(372, 372),
	DependentPointer:  MW(479, 448), // DEPENDENT_QMD0_POINTER

	PrefetchLower: MW(1375, 1344), // PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED
	PrefetchUpper: MW(1392, 1376),
	PrefetchSize:  MW(1401, 1393),
	PrefetchType:  MW(1403, 1402),

	BankPrefetchMax:      MW(575, 570), // CONSTANT_BUFFER_PREFETCH_PRE_MAX_SIZE_SHIFTED8
	CwdMembarTaskChasing: MW(382, 382), // CWD_MEMBAR_TASK_CHASING_ENABLE
}

// v04ConstantBuffers is CONSTANT_BUFFER_VALID(i) MW(416+4i),
// CONSTANT_BUFFER_PREFETCH(i) MW(418+4i:417+4i),
// CONSTANT_BUFFER_INVALIDATE(i) MW(419+4i), and at 1536+64i
// ADDR_LOWER_SHIFTED6 31:0, ADDR_UPPER_SHIFTED6 50:32, SIZE_SHIFTED4 63:51.
func v04ConstantBuffers() (c [8]ConstantBuffer) {
	for i := range c {
		b := 1536 + 64*i
		c[i] = ConstantBuffer{
			Valid:        MW(416+4*i, 416+4*i),
			Invalidate:   MW(419+4*i, 419+4*i),
			AddressLower: MW(b+31, b),
			AddressUpper: MW(b+50, b+32),
			Size:         MW(b+63, b+51),
			AddressShift: 6,
			Prefetch:     MW(418+4*i, 417+4*i),
		}
	}
	return c
}

// v04Release is release slot i: ENABLE(i) 320+16i, STRUCTURE_SIZE(i)
// 322:321+16i, MEMBAR_TYPE(i) 323+16i, PAYLOAD64B(i) 332+16i, and
// RELEASE_SEMAPHOREi_ADDR_LOWER/UPPER, _PAYLOAD_LOWER/UPPER from 640+128i.
func v04Release(i int) ReleaseSlot {
	c, b := 320+16*i, 640+128*i
	return ReleaseSlot{
		Enable:        MW(c, c),
		StructureSize: MW(c+2, c+1),
		MembarType:    MW(c+3, c+3),
		Payload64:     MW(c+12, c+12),
		AddressLower:  MW(b+31, b),
		AddressUpper:  MW(b+56, b+32),
		PayloadLower:  MW(b+95, b+64),
		PayloadUpper:  MW(b+127, b+96),
	}
}
