package hw

import (
	"fmt"
	"strconv"
	"strings"
)

// Class ids of the RM objects a device allocates, per generation. The
// values are NVIDIA's (open-gpu-kernel-modules g_gpu_class_list.c, and the
// class list the RM 580 reports for the H200).
const (
	AmpereChannelGpfifoA = 0xc56f // AMPERE_CHANNEL_GPFIFO_A, clc56f.h
	HopperChannelGpfifoA = 0xc86f // HOPPER_CHANNEL_GPFIFO_A, clc86f.h

	AmpereComputeA = 0xc6c0 // AMPERE_COMPUTE_A (GA100), clc6c0.h
	AmpereComputeB = 0xc7c0 // AMPERE_COMPUTE_B (GA10x), clc7c0.h
	AdaComputeA    = 0xc9c0 // ADA_COMPUTE_A (AD10x), clc9c0.h
	HopperComputeA = 0xcbc0 // HOPPER_COMPUTE_A (GH100), clcbc0.h

	AmpereDmaCopyA = 0xc6b5 // AMPERE_DMA_COPY_A (GA100), clc6b5.h
	AmpereDmaCopyB = 0xc7b5 // AMPERE_DMA_COPY_B (GA10x, AD10x), clc7b5.h
	HopperDmaCopyA = 0xc8b5 // HOPPER_DMA_COPY_A (GH100), clc8b5.h

	AmpereUsermodeA = 0xc561 // AMPERE_USERMODE_A, clc561.h
	HopperUsermodeA = 0xc661 // HOPPER_USERMODE_A, clc661.h
)

// Generation is what differs between the GPU generations this package
// encodes for: every table entry that the method builders, the launch
// descriptors and the cubin loader consult lives here, and nowhere else.
// A Generation is read-only; use the values this package declares.
type Generation struct {
	// Name names the generation and its chips, such as "Hopper (GH100)".
	Name string
	// SM is the multiprocessors' version as major*10 + minor, such as 90.
	SM int
	// Arch is the architecture as nvcc names it, such as "sm_90".
	Arch string

	// The classes of the channel, compute, copy and usermode objects.
	ChannelClass, ComputeClass, CopyClass, UsermodeClass uint32

	// Qmd is the layout of the launch descriptor (QMD V03_00 or V04_00).
	Qmd *QmdLayout
	// QmdType is the value of the descriptor's QMD_TYPE field, where the
	// layout has one.
	QmdType uint32
	// PcasAction is the SEND_SIGNALING_PCAS2_B action that schedules a
	// descriptor sent with SEND_PCAS_A.
	PcasAction uint32

	// ParamsOffset is where nvcc places a kernel's parameters in constant
	// bank 0 for kernels of at most 4 KiB of parameters: 0x160 on sm_8x,
	// 0x210 on sm_90. A kernel's own offset (EIATTR_PARAM_CBANK) rules.
	ParamsOffset int
	// GlobalDescriptor is the offset in constant bank 0 of the global
	// memory descriptor the code loads (0x118 on sm_8x, 0x208 on sm_90).
	// The driver leaves it 0, which addresses memory by its raw address.
	GlobalDescriptor int

	// MaxGrid and MaxBlock bound each axis of a launch's grid of groups
	// and of its groups of threads (the descriptor's field widths and the
	// architecture's limits).
	MaxGrid, MaxBlock [3]uint32
	// MaxThreads bounds the threads of one group.
	MaxThreads int
	// Registers is the register file of a multiprocessor, RegisterUnit the
	// registers a warp's allocation is a multiple of, and MaxRegisters the
	// most registers of one thread.
	Registers, RegisterUnit, MaxRegisters int
	// WarpsPerSM is the most warps a multiprocessor runs concurrently.
	WarpsPerSM int
	// MaxBankBytes is the most bytes of a constant bank, bank 0 included.
	MaxBankBytes int

	// SharedConfigs lists, in KiB and increasing, the shared memory
	// configurations of a multiprocessor; the last is the most shared
	// memory one group can take, the system's reserved KiB included.
	SharedConfigs []int
	// ReservedShared is the shared memory the system reserves in each
	// group (1 KiB from sm_80 on). ReservedInCubin is true where nvcc
	// counts it in the kernel's .nv.shared section (sm_90), and false where
	// the driver adds it (sm_8x).
	ReservedShared  int
	ReservedInCubin bool

	// StackTop is the initial stack pointer at constant bank 0 offset
	// 0x28: the top of a thread's 16 MiB local window less StackReserve,
	// which a kernel's local memory therefore includes.
	StackTop, StackReserve uint32

	// HostSemaphoreBits is the width of a host semaphore's address (40 on
	// C56F, whose SEM_ADDR_HI is 8 bits; 57 on C86F).
	HostSemaphoreBits int
	// CopyAddressBits is the width of the copy engine's addresses.
	CopyAddressBits int
	// LocalMemoryBits is the width of the local memory's address
	// (SET_SHADER_LOCAL_MEMORY_A is 16:0 before Hopper, 24:0 on it).
	LocalMemoryBits int
	// ReportSemaphoreBits is the width of a compute report semaphore's
	// address (SET_REPORT_SEMAPHORE_ADDRESS_UPPER is 7:0 on C7C0 and C9C0,
	// 24:0 on CBC0), where ComputeRelease64 holds.
	ReportSemaphoreBits int
	// ComputeRelease64 is true where the compute class has the 64-bit
	// report semaphore (SET_REPORT_SEMAPHORE_PAYLOAD_* and
	// REPORT_SEMAPHORE_EXECUTE, from AMPERE_COMPUTE_B on).
	ComputeRelease64 bool
	// CopyRelease64 is true where the copy class writes 64-bit semaphore
	// payloads (SET_SEMAPHORE_PAYLOAD_UPPER, from AMPERE_DMA_COPY_B on).
	CopyRelease64 bool
	// ExtendedBase is true where a GPFIFO control entry sets the bits 56:40
	// of the segments that follow (SET_PB_SEGMENT_EXTENDED_BASE, C86F).
	ExtendedBase bool
}

// The four generations. Their classes are those the RM lists for GA100,
// GA10x, AD10x and GH100.
var (
	// Ampere is GA100 (sm_80): QMD V03_00, no 64-bit compute report
	// semaphore and no 64-bit copy payload, whose releases therefore go
	// through the host semaphore.
	Ampere = &Generation{
		Name: "Ampere (GA100)", SM: 80, Arch: "sm_80",
		ChannelClass: AmpereChannelGpfifoA, ComputeClass: AmpereComputeA,
		CopyClass: AmpereDmaCopyA, UsermodeClass: AmpereUsermodeA,
		Qmd: QmdV03, PcasAction: PcasPrefetchSchedule,
		ParamsOffset: 0x160, GlobalDescriptor: 0x118,
		MaxGrid: [3]uint32{1<<31 - 1, 65535, 65535}, MaxBlock: [3]uint32{1024, 1024, 64},
		MaxThreads: 1024, Registers: 65536, RegisterUnit: 256, MaxRegisters: 255, MaxBankBytes: MaxBankBytes,
		WarpsPerSM:     64,
		SharedConfigs:  []int{0, 8, 16, 32, 64, 100, 132, 164},
		ReservedShared: 1024, StackTop: 0xfffdc0, StackReserve: 0x240,
		HostSemaphoreBits: 40, CopyAddressBits: 49, LocalMemoryBits: 49,
	}
	// AmpereB is GA10x (sm_86): QMD V03_00 with 64-bit releases.
	AmpereB = &Generation{
		Name: "Ampere (GA10x)", SM: 86, Arch: "sm_86",
		ChannelClass: AmpereChannelGpfifoA, ComputeClass: AmpereComputeB,
		CopyClass: AmpereDmaCopyB, UsermodeClass: AmpereUsermodeA,
		Qmd: QmdV03, PcasAction: PcasPrefetchSchedule,
		ParamsOffset: 0x160, GlobalDescriptor: 0x118,
		MaxGrid: [3]uint32{1<<31 - 1, 65535, 65535}, MaxBlock: [3]uint32{1024, 1024, 64},
		MaxThreads: 1024, Registers: 65536, RegisterUnit: 256, MaxRegisters: 255, MaxBankBytes: MaxBankBytes,
		WarpsPerSM:     48,
		SharedConfigs:  []int{0, 8, 16, 32, 64, 100},
		ReservedShared: 1024, StackTop: 0xfffdc0, StackReserve: 0x240,
		HostSemaphoreBits: 40, CopyAddressBits: 49, LocalMemoryBits: 49, ReportSemaphoreBits: 40,
		ComputeRelease64: true, CopyRelease64: true,
	}
	// Ada is AD10x (sm_89): as GA10x, with its own compute class.
	Ada = AmpereB.derive(func(g *Generation) {
		g.Name, g.SM, g.Arch = "Ada (AD10x)", 89, "sm_89"
		g.ComputeClass = AdaComputeA
	})
	// Hopper is GH100 (sm_90, the H100 and H200): QMD V04_00 of 384 bytes,
	// parameters at 0x210, 57-bit addresses.
	Hopper = &Generation{
		Name: "Hopper (GH100)", SM: 90, Arch: "sm_90",
		ChannelClass: HopperChannelGpfifoA, ComputeClass: HopperComputeA,
		CopyClass: HopperDmaCopyA, UsermodeClass: HopperUsermodeA,
		Qmd: QmdV04, QmdType: QmdTypeGridCta, PcasAction: PcasInvalidatePrefetchCopySchedule,
		ParamsOffset: 0x210, GlobalDescriptor: 0x208,
		MaxGrid: [3]uint32{1<<31 - 1, 65535, 65535}, MaxBlock: [3]uint32{1024, 1024, 64},
		MaxThreads: 1024, Registers: 65536, RegisterUnit: 256, MaxRegisters: 255, MaxBankBytes: MaxBankBytes,
		WarpsPerSM:     64,
		SharedConfigs:  []int{0, 8, 16, 32, 64, 100, 132, 164, 196, 228},
		ReservedShared: 1024, ReservedInCubin: true, StackTop: 0xfffdc0, StackReserve: 0x240,
		HostSemaphoreBits: 57, CopyAddressBits: 57, LocalMemoryBits: 57, ReportSemaphoreBits: 57,
		ComputeRelease64: true, CopyRelease64: true, ExtendedBase: true,
	}
)

var generations = []*Generation{Ampere, AmpereB, Ada, Hopper}

// Generations lists the generations this package encodes for, oldest
// first.
func Generations() []*Generation { return append([]*Generation(nil), generations...) }

// ForSM is the generation of the multiprocessors of version sm, written
// major*10 + minor (80, 86, 89, 90).
func ForSM(sm int) (*Generation, error) {
	for _, g := range generations {
		if g.SM == sm {
			return g, nil
		}
	}
	return nil, fmt.Errorf("%w: sm_%d", ErrArch, sm)
}

// ForArch is the generation of an architecture named as nvcc names it,
// such as "sm_90".
func ForArch(arch string) (*Generation, error) {
	s, ok := strings.CutPrefix(arch, "sm_")
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrArch, arch)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrArch, arch)
	}
	return ForSM(n)
}

// ForRM is the generation of the version the RM reports for the GPU's
// multiprocessors (NV2080_CTRL_GR_INFO_INDEX_SM_VERSION), such as 0x809 for
// sm_89 or 0x900 for sm_90: the major in bits 15:8, the minor in 7:0.
func ForRM(version uint32) (*Generation, error) {
	major, minor := version>>8&0xff, version&0xff
	if minor > 9 {
		return nil, fmt.Errorf("%w: SM version %#x", ErrArch, version)
	}
	return ForSM(int(major*10 + minor))
}

// Runs reports whether code compiled for sm (major*10 + minor) runs on g:
// a cubin runs on the multiprocessors of its major version and a minor at
// least its own.
func (g *Generation) Runs(sm int) bool { return sm/10 == g.SM/10 && sm%10 <= g.SM%10 }

// SassVersion is the descriptor's SASS_VERSION for code of sm: the major
// in bits 7:4 and the minor in 3:0, such as 0x90.
func SassVersion(sm int) uint32 { return uint32(sm/10)<<4 | uint32(sm%10) }

// MaxShared is the most shared memory one group takes, in bytes, the
// system's reserved KiB included.
func (g *Generation) MaxShared() int { return g.SharedConfigs[len(g.SharedConfigs)-1] << 10 }

// SharedConfig is the encoding of the smallest shared memory configuration
// that holds n bytes, for the descriptor's MIN/MAX/TARGET_SM_CONFIG_SHARED_
// MEM_SIZE fields (KiB/4 + 1, at least the 8 KiB configuration), and false
// if no configuration holds n.
func (g *Generation) SharedConfig(n int) (uint32, bool) {
	for _, kib := range g.SharedConfigs {
		if kib < 8 {
			continue
		}
		if n <= kib<<10 {
			return uint32(kib/4 + 1), true
		}
	}
	return 0, false
}

// MaxSize is the most groups along each axis of a launch's grid, and the
// most threads along each axis of a group: the
// descriptor's field widths and the architecture's limits.
func (g *Generation) MaxSize() (grid, block [3]uint32) { return g.MaxGrid, g.MaxBlock }

// CheckSize is the reason a launch of grid groups of block threads cannot
// run on g, or "" if it can: an axis of size 0, an axis past MaxGrid or
// MaxBlock, or more than MaxThreads threads in a group. It allocates
// nothing.
func (g *Generation) CheckSize(grid, block [3]uint32) string {
	for i := range 3 {
		switch {
		case grid[i] == 0:
			return "grid axis of size 0"
		case block[i] == 0:
			return "group axis of size 0"
		case grid[i] > g.MaxGrid[i]:
			return "grid axis exceeds the descriptor's limit"
		case block[i] > g.MaxBlock[i]:
			return "group axis exceeds the descriptor's limit"
		}
	}
	if uint64(block[0])*uint64(block[1])*uint64(block[2]) > uint64(g.MaxThreads) {
		return "group has more threads than the multiprocessor runs"
	}
	return ""
}

// derive returns a copy of g that change alters, for a generation that
// differs from g in a few facts.
func (g *Generation) derive(change func(*Generation)) *Generation {
	c := *g
	change(&c)
	return &c
}

// String returns the generation's architecture and name, such as
// "sm_90 Hopper (GH100)".
func (g *Generation) String() string { return g.Arch + " " + g.Name }
