package hw

// QmdV03 is the layout of QMD V03_00, the 256-byte launch descriptor of
// Ampere and Ada (AMPERE_COMPUTE_A/B, ADA_COMPUTE_A). Its bit ranges are
// those of NVIDIA's clc6c0qmd.h (NVC6C0_QMDV03_00_*), which clc7c0qmd.h and
// clc9c0qmd.h repeat for every field here.
var QmdV03 = &QmdLayout{
	Name:  "V03_00",
	Words: 64,
	Major: 3, Minor: 0,
	MajorField: MW(583, 580), // QMD_MAJOR_VERSION
	MinorField: MW(579, 576), // QMD_VERSION

	ApiVisibleCallLimit:      MW(378, 378),
	SamplerIndex:             MW(382, 382),
	SassVersion:              MW(1663, 1656),
	CwdMembarType:            MW(369, 368),
	SmGlobalCachingEnable:    MW(134, 134),
	InvalidateTextureHeader:  MW(186, 186),
	InvalidateTextureSampler: MW(187, 187),
	InvalidateTextureData:    MW(188, 188),
	InvalidateShaderData:     MW(189, 189),
	InvalidateInstruction:    MW(190, 190),
	InvalidateShaderConstant: MW(191, 191),

	Grid:  [3]Field{MW(415, 384), MW(431, 416), MW(463, 448)}, // CTA_RASTER_WIDTH/HEIGHT/DEPTH
	Block: [3]Field{MW(607, 592), MW(623, 608), MW(639, 624)}, // CTA_THREAD_DIMENSION0/1/2

	RegisterCount: MW(656, 648), // REGISTER_COUNT_V
	BarrierCount:  MW(767, 763),

	ProgramLower: MW(1567, 1536),
	ProgramUpper: MW(1584, 1568),

	SharedMemorySize:  MW(561, 544),
	MinSMConfigShared: MW(567, 562),
	MaxSMConfigShared: MW(574, 569),
	TargetSMConfig:    MW(662, 657),

	LocalLowSize:  MW(759, 736),
	LocalHighSize: MW(1623, 1600),

	ConstantBuffers: v03ConstantBuffers(),
	Releases: [3]ReleaseSlot{
		v03Release(768),  // RELEASE0
		v03Release(896),  // RELEASE1
		v03Release(1664), // RELEASE2
	},

	DependentPointer:  MW(511, 480), // DEPENDENT_QMD0_POINTER
	DependentEnable:   MW(512, 512),
	DependentAction:   MW(515, 513),
	DependentPrefetch: MW(516, 516),

	PrefetchLower: MW(287, 256),   // PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED
	PrefetchUpper: MW(1640, 1632), // PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED
	PrefetchSize:  MW(1649, 1641),
	PrefetchType:  MW(1651, 1650),
}

// v03ConstantBuffers is CONSTANT_BUFFER_VALID(i) MW(640+i) and the
// binding at 1024+64i: ADDR_LOWER 31:0, ADDR_UPPER 48:32, INVALIDATE 50,
// SIZE_SHIFTED4 63:51.
func v03ConstantBuffers() (c [8]ConstantBuffer) {
	for i := range c {
		b := 1024 + 64*i
		c[i] = ConstantBuffer{
			Valid:        MW(640+i, 640+i),
			AddressLower: MW(b+31, b),
			AddressUpper: MW(b+48, b+32),
			Invalidate:   MW(b+50, b+50),
			Size:         MW(b+63, b+51),
		}
	}
	return c
}

// v03Release is a release slot of 128 bits from bit b: ADDRESS_LOWER
// 31:0, ADDRESS_UPPER 39:32, MEMBAR_TYPE 51, ENABLE 55, PAYLOAD64B 61,
// STRUCTURE_SIZE 63:62, PAYLOAD_LOWER 95:64, PAYLOAD_UPPER 127:96.
func v03Release(b int) ReleaseSlot {
	return ReleaseSlot{
		AddressLower:  MW(b+31, b),
		AddressUpper:  MW(b+39, b+32),
		MembarType:    MW(b+51, b+51),
		Enable:        MW(b+55, b+55),
		Payload64:     MW(b+61, b+61),
		StructureSize: MW(b+63, b+62),
		PayloadLower:  MW(b+95, b+64),
		PayloadUpper:  MW(b+127, b+96),
	}
}
