package nvdev

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/yield"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Signaled is the value in the device's word.
func (d *gpu) Signaled() uint64 { return atomic.LoadUint64(d.word) }

// Sleep returns once the word differs from seen, or after still. It asks
// the path for its report as it starts, and reads the word and the
// channels' error notifiers as it wakes; a notifier's error raises a
// *device.Fault, which every later Sleep raises again.
//
// With still 0 (no one waits) it only looks, and values submitted from
// then on raise no interrupt; so they do after a return with every value
// submitted reached. Otherwise it marks waiters parked, spins on the word
// for spinFor, then blocks on the device's non-stall event (wake.go):
// until still where every value in flight raises the interrupt and it
// holds a place in the GPU's budget for the next, at most bridgeFor at a
// time while one that raises none is in flight or the budget has no place
// to hold. A device without an event sleeps pollFor at a time.
func (d *gpu) Sleep(seen uint64, still time.Duration) error {
	if f := d.fault.Load(); f != nil {
		return f
	}
	if err := d.p.Check(); err != nil {
		return d.keep(asFault(err))
	}
	if still <= 0 {
		if d.wk.parked.Load() {
			d.wk.parked.Store(false)
		}
		if d.notified() {
			if f := d.notifierFault(); f != nil {
				return d.keep(f)
			}
		}
		return nil
	}
	if d.wk.ev != nil && !d.wk.parked.Load() {
		d.wk.parked.Store(true)
	}
	defer d.releaseInterrupt()
	t0 := time.Now()
	spinEnd := spinFor
	var pace yield.Pacer
	pace.Start(t0)
	for {
		w := atomic.LoadUint64(d.word)
		if w != seen {
			if d.wk.ev != nil && device.AtLeast(w, d.wk.last.Load()) {
				// Nothing in flight: the supervisor may park
				// without another Sleep.
				d.wk.parked.Store(false)
			}
			return nil
		}
		if d.notified() {
			// The live set may have changed since notified loaded it:
			// only the error notifierFault finds is a fault.
			if f := d.notifierFault(); f != nil {
				return d.keep(f)
			}
		}
		el := time.Since(t0)
		if el >= still {
			return nil
		}
		if el < spinEnd {
			pace.Maybe(t0.Add(el))
			continue
		}
		if d.wk.ev == nil {
			time.Sleep(min(pollFor, still-el))
			continue
		}
		wait := still - el
		// A value planned from here on finds the place held, or Sleep
		// reads it in quiet (wake.go).
		if wait > bridgeFor && (!device.AtLeast(w, d.wk.quiet.Load()) || !d.holdInterrupt() ||
			!device.AtLeast(w, d.wk.quiet.Load())) {
			wait = bridgeFor
		}
		fired, err := d.wk.ev.Wait(wait)
		if err != nil {
			return d.keep(asFault(err))
		}
		if fired {
			spinEnd = time.Since(t0) + wakeSpin
		}
	}
}

// keep keeps the device's first fault, which Sleep raises from then on.
// A fault that is not the device's alone (a settle's, on the host's side,
// stops none of the group's channels) marks the device's shared group
// faulted, so that no timeline opened later joins it, whether or not a
// fault was kept before it.
func (d *gpu) keep(f *device.Fault) *device.Fault {
	if f == nil {
		return nil
	}
	if d.grp != nil && !f.Alone {
		d.grp.fault()
	}
	if d.fault.CompareAndSwap(nil, f) {
		return f
	}
	return d.fault.Load()
}

// lose passes err on, and marks the device's shared group faulted where
// err is a fault that is not the device's alone, as keep does: a fault
// that the path returns to a call rig counts (Grow, Alloc, Entry, MapPeer,
// MapHost, DMA, a lay, Unload) loses the device and, with it, the group's
// fault domain, so that no timeline opened later joins the group. A
// refusal that leaves the device working (no memory, a mapping the path
// never makes, a bad argument) is no fault, and leaves the group shared.
func (d *gpu) lose(err error) error {
	if f, ok := device.AsFault(err); ok && d.grp != nil && !f.Alone {
		d.grp.fault()
	}
	return err
}

// asFault is err as a fault.
func asFault(err error) *device.Fault {
	if f, ok := device.AsFault(err); ok {
		return f
	}
	return &device.Fault{Why: err.Error()}
}

// liveSet is the live channel set, for a goroutine that reads it without
// mu: the caller calls liveDone once it no longer reads the set, and no
// set goes back meanwhile (reapSets). Sequentially consistent atomics
// order the two: a reaper that finds no reader after a switch to a new
// set stored live finds every later reader's load after that store.
func (d *gpu) liveSet() *chanSet {
	d.liveReaders.Add(1)
	set := d.live.Load()
	if h := d.liveHook.Load(); h != nil {
		(*h)()
	}
	return set
}

// liveDone ends a read of the set liveSet returned.
func (d *gpu) liveDone() { d.liveReaders.Add(-1) }

// notified reports whether a channel's error notifier holds an error.
func (d *gpu) notified() bool {
	set := d.liveSet()
	defer d.liveDone()
	for _, ch := range set.ch {
		if atomic.LoadUint32(&ch.notifier[3])>>16 != 0 {
			return true
		}
	}
	return false
}

// erred reports whether every channel of set has an error in its
// notifier: the RM stops a channel it reports an error for.
func (d *gpu) erred(set *chanSet) bool {
	for _, ch := range set.ch {
		if atomic.LoadUint32(&ch.notifier[3])>>16 == 0 {
			return false
		}
	}
	return true
}

// rcErrors names the RM's channel errors a notifier holds, by the numbers
// nverror.h of release 580 gives them; a number it names nothing for is
// unnamed.
var rcErrors = map[uint32]string{
	13: "ROBUST_CHANNEL_GR_EXCEPTION",
	31: "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT",
	32: "ROBUST_CHANNEL_PBDMA_ERROR",
	43: "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR",
	45: "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
	48: "ROBUST_CHANNEL_GPU_ECC_DBE",
	68: "ROBUST_CHANNEL_NVDEC0_ERROR",
	69: "ROBUST_CHANNEL_GR_CLASS_ERROR",
	79: "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
}

// engineName names an NV2080 engine type.
func engineName(t uint32) string {
	switch {
	case t == nvidia.EngineGraphics:
		return "GR"
	case t >= nvidia.EngineCopy0 && t < nvidia.EngineCopy0+10:
		return fmt.Sprintf("COPY%d", t-nvidia.EngineCopy0)
	}
	return fmt.Sprintf("engine %d", t)
}

// notifierFault is the fault the notifiers report, or nil: the path's
// report where it has one; otherwise a line for each distinct notifier
// error, by number and name. The multiprocessors' errors and the MMU's
// faults follow the loss (ReadFault): the RM answers the first read of
// them after a fault in about 20 ms.
func (d *gpu) notifierFault() *device.Fault {
	var lines []string
	seen := map[uint32]bool{}
	set := d.liveSet()
	defer d.liveDone()
	for _, ch := range set.ch {
		w := ch.notifierWords()
		status := w[3] >> 16
		if status == 0 {
			continue
		}
		if !seen[w[2]] {
			seen[w[2]] = true
			name := rcErrors[w[2]]
			if name == "" {
				name = "unnamed"
			}
			lines = append(lines, fmt.Sprintf("error %d (%s) on the %s channel, %s, status 0x%x",
				w[2], name, ch.name, engineName(w[3]&0xffff), status))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	if err := d.p.Check(); err != nil {
		return asFault(err)
	}
	return &device.Fault{Why: strings.Join(lines, "; "), Detail: lines}
}

// ReadFault returns the multiprocessors' errors and the MMU's faults the
// debugger reads, or the RM's refusal to read them, where a channel's
// notifier holds an error; nothing otherwise. rig calls it on the
// supervisor's goroutine after it reported the loss, before Stop frees
// the debugger.
func (d *gpu) ReadFault(*device.Fault) []string {
	if d.stopped.Load() || !d.notified() {
		return nil
	}
	return d.debugLines()
}

// debugLines reads the multiprocessors' errors and the MMU's faults
// through the debugger object.
func (d *gpu) debugLines() []string {
	set := d.liveSet()
	defer d.liveDone()
	if set.debugger == 0 {
		return []string{"no debugger object: the SMs' errors and the MMU's faults are unread"}
	}
	var lines []string
	sms := d.rec.SMs()
	mmuInfo := false
	p := new(nvidia.SMErrorStatesParams)
	for start := 0; start < sms; {
		// The count is the chip's, which may pass the SMs the GPU has
		// (144 on the H200, which has 132), and the RM may refuse a read
		// past those: a refused read is tried again over half as many,
		// down to one, so that every SM the GPU has is read.
		n := min(sms-start, nvidia.MaxSMsPerCall)
		var err error
		for ; n > 0; n /= 2 {
			*p = nvidia.SMErrorStatesParams{TargetChannel: set.ch[qCompute].h, NumSMsToRead: uint32(n), StartingSM: uint32(start)}
			if err = d.rm.SMErrors(set.debugger, p); err == nil {
				break
			}
		}
		if n == 0 {
			if start == 0 {
				lines = append(lines, fmt.Sprintf("SM errors: the RM refused to read them: %v", err))
			}
			break
		}
		for i := range n {
			st := &p.SMErrorStates[i]
			if st.HwwGlobalEsr != 0 || st.HwwWarpEsr != 0 {
				lines = append(lines, fmt.Sprintf("SM %d: global ESR 0x%x, warp ESR 0x%x, warp PC 0x%x, address 0x%x",
					start+i, st.HwwGlobalEsr, st.HwwWarpEsr, st.HwwWarpEsrPC64, st.HwwEsrAddr))
			}
		}
		if p.MMUFault.Valid != 0 && !mmuInfo {
			mmuInfo = true
			lines = append(lines, fmt.Sprintf("SM errors: MMU fault info 0x%x", p.MMUFault.FaultInfo))
		}
		start += n
	}
	var mf nvidia.MMUFaultInfoParams
	if err := d.rm.MMUFaults(set.debugger, &mf); err != nil {
		lines = append(lines, fmt.Sprintf("MMU faults: the RM refused to read them: %v", err))
	} else {
		for i := range int(min(mf.Count, nvidia.MaxMMUFaultEntries)) {
			e := mf.Entries[i]
			lines = append(lines, fmt.Sprintf("MMU fault at 0x%x: type %d, access %d", e.FaultAddress, e.FaultType, e.AccessType))
		}
	}
	return lines
}

// Stop stops the device without waiting for its work: it ends the
// channels' registrations and frees the channel groups, which makes the
// RM preempt their work, closes the non-stall event, then asks the path
// to stop. Where the RM freed every channel group, or else the path
// stopped (either leaves none of the device's work running), it writes
// the last value given to Submit into the word (a value whose Submit
// failed too) and gives the memory the device holds itself back to the
// path; where neither did, that memory stays, the word reaches the value
// as the channels end (Stop writes it where both channels' notifiers hold
// an error, since the RM stopped them), and Stop returns a *device.Fault
// with the path's refusal, since the device's work may still run. Where
// the RM freed the channel groups, the path's refusal is not returned
// (docs/nvdev.md: Stop does not check the path's Unknown).
// The path closes once rig has freed the regions it holds.
func (d *gpu) Stop(string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped.Swap(true) {
		return nil
	}
	// The places the device holds in the GPU's budget of interrupts go
	// back to the GPU's other devices: that of a plan no Submit raised,
	// and that held for a Sleep (a Sleep in flight gives back the place
	// it holds as it returns).
	if d.wk.planned {
		d.givePlanned()
	}
	d.releaseInterrupt()
	// A Settle in flight ends before the path stops (its timer reads
	// the usermode page) and the stamp ring goes back, and a later one
	// finds the device stopped.
	d.prof.mu.Lock()
	//lint:ignore SA2001 the empty section waits for the Settle in flight
	d.prof.mu.Unlock()
	// A Kick in flight ends before the channels close, and a later one
	// finds the device stopped.
	d.kickMu.Lock()
	//lint:ignore SA2001 the empty section waits for the Kick in flight
	d.kickMu.Unlock()
	d.localMu.Lock()
	defer d.localMu.Unlock()
	sets := append([]*chanSet{d.live.Load()}, d.oldSets...)
	if g := d.grown.set; g != nil {
		sets = append(sets, g)
	}
	clean := true
	for _, set := range sets {
		if !d.closeSet(set) {
			clean = false
		}
	}
	var errs []error
	if d.wk.ev != nil {
		if err := d.wk.ev.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	perr := d.p.Stop()
	if !clean && perr != nil {
		errs = append(errs, perr)
	}
	if !clean && perr != nil && d.erred(sets[0]) {
		// Both channels stopped on errors: no release of theirs will
		// write the word again, though the RM keeps them and their
		// memory stays.
		atomic.StoreUint64(d.word, d.given)
	}
	if perr == nil {
		// The path stopped, which freed the objects a failed regrowth
		// could not: the steps it left undone go back, the last made
		// first, past the refusals of what the path freed.
		for i := len(d.undone) - 1; i >= 0; i-- {
			_ = d.undone[i]()
		}
		d.undone = nil
	}
	if clean || perr == nil {
		atomic.StoreUint64(d.word, d.given)
		var mems []*nvidia.Memory
		for _, set := range sets {
			mems = append(mems, setMemory(set)...)
		}
		d.oldSets, d.grown.set = nil, nil
		mems = append(mems, d.launch0)
		mems = append(mems, d.ringsHeld()...)
		if d.copyK != nil {
			mems = append(mems, d.copyK.img.mem)
		}
		if l := d.local.Load(); l != nil {
			mems = append(mems, l.mem)
		}
		mems = append(mems, d.old...)
		if d.array != nil {
			mems = append(mems, d.array)
		}
		for _, m := range mems {
			if err := d.free(m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := d.p.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &device.Fault{Why: fmt.Sprintf("stop: %v", errors.Join(errs...))}
	}
	return nil
}

// Commit returns Committed: the channels run work as soon as they fetch it.
func (d *gpu) Commit(uint64) device.SubmitAnswer {
	return device.SubmitAnswer{Kind: device.Committed}
}

// Capability is the GPU as compiled code sees it (hw.Key).
func (d *gpu) Capability() any { return d.rec }
