package hw

// Semaphores: the words that make a channel wait for a 64-bit word to
// reach a value, and write a value (and a timestamp) into a word once the
// channel's earlier work has completed.
//
// Host semaphores mirror clc56f.h and clc86f.h (NVC56F_SEM_*,
// NVC86F_SEM_*): SEM_ADDR_LO/HI, SEM_PAYLOAD_LO/HI and SEM_EXECUTE, five
// consecutive methods from 0x5c, which any channel runs. Compute report
// semaphores mirror clc7c0.h, clc9c0.h and clcbc0.h
// (SET_REPORT_SEMAPHORE_PAYLOAD_LOWER .. REPORT_SEMAPHORE_EXECUTE, from
// 0x158). Copy-engine semaphores mirror clc7b5.h and clc8b5.h
// (SET_SEMAPHORE_A .. SET_SEMAPHORE_PAYLOAD_UPPER from 0x240, then
// LAUNCH_DMA).

// Host (PBDMA) methods, clc56f.h / clc86f.h.
const (
	HostNonStallInterrupt = 0x20 // NON_STALL_INTERRUPT
	HostSemAddrLo         = 0x5c // SEM_ADDR_LO, OFFSET 31:2
	HostSemAddrHi         = 0x60 // SEM_ADDR_HI, 7:0 on C56F, 24:0 on C86F
	HostSemPayloadLo      = 0x64 // SEM_PAYLOAD_LO
	HostSemPayloadHi      = 0x68 // SEM_PAYLOAD_HI
	HostSemExecute        = 0x6c // SEM_EXECUTE
	HostWFI               = 0x78 // WFI, SCOPE 0:0
	HostYield             = 0x80 // YIELD, OP 1:0
)

// SEM_EXECUTE fields.
const (
	SemAcquire         = 0       // OPERATION_ACQUIRE
	SemRelease         = 1       // OPERATION_RELEASE
	SemAcqStrictGEQ    = 2       // OPERATION_ACQ_STRICT_GEQ
	SemAcqCircGEQ      = 3       // OPERATION_ACQ_CIRC_GEQ
	SemAcquireSwitch   = 1 << 12 // ACQUIRE_SWITCH_TSG_EN
	SemReleaseWFI      = 1 << 20 // RELEASE_WFI_EN
	SemPayload64       = 1 << 24 // PAYLOAD_SIZE_64BIT
	SemReleaseTimeStmp = 1 << 25 // RELEASE_TIMESTAMP_EN
)

// Compute report semaphore methods, clc7c0.h / clcbc0.h.
const (
	ComputeReportPayloadLower = 0x158 // SET_REPORT_SEMAPHORE_PAYLOAD_LOWER
	ComputeReportPayloadUpper = 0x15c // SET_REPORT_SEMAPHORE_PAYLOAD_UPPER
	ComputeReportAddressLower = 0x160 // SET_REPORT_SEMAPHORE_ADDRESS_LOWER
	ComputeReportAddressUpper = 0x164 // SET_REPORT_SEMAPHORE_ADDRESS_UPPER
	ComputeReportExecute      = 0x168 // REPORT_SEMAPHORE_EXECUTE

	ReportOpRelease    = 0       // OPERATION 1:0, RELEASE
	ReportOneWord      = 1 << 3  // STRUCTURE_SIZE 4:3, SEMAPHORE_ONE_WORD
	ReportFourWords    = 0 << 3  // STRUCTURE_SIZE 4:3, SEMAPHORE_FOUR_WORDS
	ReportFlushDisable = 1 << 5  // FLUSH_DISABLE
	ReportPayload64    = 1 << 12 // PAYLOAD_SIZE64
)

// Copy-engine semaphore methods, clc7b5.h / clc8b5.h.
const (
	CopySemaphoreA            = 0x240 // SET_SEMAPHORE_A, UPPER 16:0 (C7B5) or 24:0 (C8B5)
	CopySemaphoreB            = 0x244 // SET_SEMAPHORE_B, LOWER
	CopySemaphorePayload      = 0x248 // SET_SEMAPHORE_PAYLOAD
	CopySemaphorePayloadUpper = 0x24c // SET_SEMAPHORE_PAYLOAD_UPPER
)

// AcquireWords, ReleaseWords, ComputeReleaseWords and CopyReleaseWords
// are the most words each builder appends, on any generation.
const (
	AcquireWords        = 6
	ReleaseWords        = 6
	ComputeReleaseWords = 6
	CopyReleaseWords    = 7
)

func hostSemaphore(b []uint32, g *Generation, addr, payload uint64, exec uint32) []uint32 {
	return append(b, Inc(SubHost, HostSemAddrLo, 5),
		lo32(addr)&^3, hi32(addr, g.HostSemaphoreBits),
		uint32(payload), uint32(payload>>32), exec)
}

// Acquire holds the channel's later words back until the aligned 64-bit
// word at addr holds at least value in circular order: the word less value,
// as a signed 64-bit number, is not negative (ACQ_CIRC_GEQ, 64-bit
// payload). The channel does not yield its group while it waits.
func Acquire(b []uint32, g *Generation, addr, value uint64) []uint32 {
	return hostSemaphore(b, g, addr, value, SemAcqCircGEQ|SemPayload64)
}

// Release writes value into the 64-bit word at addr once the channel's
// earlier work has completed and its writes are visible (RELEASE with
// RELEASE_WFI, 64-bit payload).
func Release(b []uint32, g *Generation, addr, value uint64) []uint32 {
	return hostSemaphore(b, g, addr, value, SemRelease|SemReleaseWFI|SemPayload64)
}

// ReleaseStamp is Release that also writes the GPU's timer, in
// nanoseconds, into the 64-bit word at addr+8 (RELEASE_TIMESTAMP): a slot
// of 16 bytes, aligned to 16.
func ReleaseStamp(b []uint32, g *Generation, addr, value uint64) []uint32 {
	return hostSemaphore(b, g, addr, value, SemRelease|SemReleaseWFI|SemPayload64|SemReleaseTimeStmp)
}

// ComputeRelease writes value into the 64-bit word at addr once the
// compute engine's earlier work has completed, with the engine's report
// semaphore (64-bit payload, one-word structure, flushed). On a generation
// without it (GA100) it is Release, the host semaphore with its wait for
// idle.
func ComputeRelease(b []uint32, g *Generation, addr, value uint64) []uint32 {
	if !g.ComputeRelease64 {
		return Release(b, g, addr, value)
	}
	return append(b, Inc(SubCompute, ComputeReportPayloadLower, 5),
		uint32(value), uint32(value>>32),
		lo32(addr), hi32(addr, g.ReportSemaphoreBits),
		ReportOpRelease|ReportOneWord|ReportPayload64)
}

// CopyRelease writes value into the 64-bit word at addr once the copy
// engine's earlier copies have completed (a LAUNCH_DMA of no data with a
// flushed one-word semaphore of a two-word payload). On a generation whose
// copy class has no 64-bit payload (GA100) it is Release, the host
// semaphore with its wait for idle, which the copy channel runs as well.
func CopyRelease(b []uint32, g *Generation, addr, value uint64) []uint32 {
	if !g.CopyRelease64 {
		return Release(b, g, addr, value)
	}
	return append(b, Inc(SubCopy, CopySemaphoreA, 4),
		hi32(addr, g.CopyAddressBits), lo32(addr), uint32(value), uint32(value>>32),
		Inc(SubCopy, CopyLaunchDMA, 1),
		DMAFlushEnable|DMASemaphoreOneWord|DMASemaphorePayload64)
}

// NonStallInterrupt raises the channel's non-stall interrupt, which wakes
// a host waiting on the channel's events.
func NonStallInterrupt(b []uint32) []uint32 {
	return append(b, Inc(SubHost, HostNonStallInterrupt, 1), 0)
}

// WaitForIdle holds the channel until its engines have completed its
// earlier work (WFI, scope ALL).
func WaitForIdle(b []uint32) []uint32 {
	return append(b, Inc(SubHost, HostWFI, 1), 1)
}
