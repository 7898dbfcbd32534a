package hw

// Words for channels of one channel group that belong to different
// subcontexts (context shares of their own, each a VEID), whose work the
// compute engine runs side by side: their waits for idle cover the
// channel's own subcontext, their acquires yield the group, and a value's
// words end by passing the PBDMA to the group's next channel.

// WFI's SCOPE (clc36f.h and later, NVC36F_WFI_SCOPE): the channel's own
// subcontext, or every subcontext of the group.
const (
	WFIScopeSubcontext = 0 // SCOPE_CURRENT_VEID
	WFIScopeAll        = 1 // SCOPE_ALL
)

// WaitForIdleSubcontext holds the channel until its engines have
// completed the earlier work of its subcontext (WFI, scope CURRENT_VEID);
// other subcontexts' work runs on.
func WaitForIdleSubcontext(b []uint32) []uint32 {
	return append(b, Inc(SubHost, HostWFI, 1), WFIScopeSubcontext)
}

// SubcontextRelease writes value into the 64-bit word at addr with no
// wait for idle of its own (ReleaseWords words): it follows a
// WaitForIdleSubcontext, or nothing that ran since the channel's last one.
func SubcontextRelease(b []uint32, g *Generation, addr, value uint64) []uint32 {
	return hostSemaphore(b, g, addr, value, SemRelease|SemPayload64)
}

// SubcontextReleaseStamp is SubcontextRelease that also writes the GPU's
// timer into the 64-bit word at addr+8, as ReleaseStamp.
func SubcontextReleaseStamp(b []uint32, g *Generation, addr, value uint64) []uint32 {
	return hostSemaphore(b, g, addr, value, SemRelease|SemPayload64|SemReleaseTimeStmp)
}

// AcquireYield is Acquire that yields the channel group when a round of
// its channels made no progress (ACQUIRE_SWITCH_TSG_EN), so that the
// group's round starts again, and a channel whose work arrived since
// runs, rather than the one acquire being polled until the timeslice
// ends.
func AcquireYield(b []uint32, g *Generation, addr, value uint64) []uint32 {
	return hostSemaphore(b, g, addr, value, SemAcqCircGEQ|SemPayload64|SemAcquireSwitch)
}

// YieldOpChannel is YIELD's OP that passes the PBDMA to the next channel
// of the group with work (OP_TSG): the group keeps the runlist, and where
// no other channel has work the same channel runs on.
const YieldOpChannel = 3

// YieldChannel passes the PBDMA to the next channel of the channel group
// that has work (YIELD, OP_TSG), so that the group's channels take turns:
// a PBDMA otherwise stays on a channel while it has words, and the
// group's other channels on that PBDMA wait.
func YieldChannel(b []uint32) []uint32 {
	return append(b, Inc(SubHost, HostYield, 1), YieldOpChannel)
}
