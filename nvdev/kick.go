package nvdev

import (
	"sync/atomic"

	"github.com/rig-go/rig/device"
)

// Kicking the channels: the device is a device.Kicker.
//
// Submit stores a value's words, launches and ring entries to memory, then
// publishes each channel's put (pub), all under mu; it writes neither
// GPPut nor the doorbell. Kick, which rig calls after its submit lock is
// released and once for a burst of concurrent submitters, does the rest
// for every value published before it, under kickMu: it stores GPPut for
// each channel whose pub moved, fences, reads the path's flush word where
// the rings lie in the BAR, and rings those channels' doorbells. So a
// burst of values costs one read of the flush word (1.3 µs on the H200)
// and one doorbell a channel, and no submitter holds mu across either.
//
// Order. The submitter's ring entries are write-combined stores through
// the BAR; its atomic store of pub is a locked instruction, which drains
// its write-combining buffers, so that they are on the bus before any
// kicker reads pub. The kicker stores GPPut after them (posted writes to
// the GPU do not pass one another), fences, which drains its own buffers,
// and reads the flush word, which returns once every write before it
// reached the GPU's memory: the doorbell then finds GPPut and the entries
// it names in place. The GPU never sees a GPPut whose entries are not
// written, whenever it reads it.
//
// GPPut is stored only under kickMu (Kick, and the uploads and the first
// words, which hold mu as well), so that it never goes back. Stop takes
// kickMu after it marked the device stopped, and the switch to a
// regrowth's channels takes it to replace the live set: no Kick touches a
// channel that Stop or a regrowth frees. The non-stall handshake (wake.go)
// is Room's and Sleep's and does not depend on when the doorbell rings: a
// value that raises the interrupt raises it whenever it runs.
//
// Config.submitKicks, for weighing, kicks within Submit, under mu, as the
// device did before: Kick then finds nothing to do. A read of the flush
// word on behalf of many submitters measured no faster before, at depth 8
// (354k to 372k values a second with 1 to 16 submitters on the H200, the
// GPU's rate); BenchmarkGPUSubmitters weighs the two in one run, in the
// closed loop of depth 1 where submitters queued on the lock.

// Kick makes the channels see every value submitted: it stores their
// GPPut, reads the flush word and rings their doorbells, where a value
// was submitted since the last Kick. It does nothing after Stop.
func (d *gpu) Kick(uint64) {
	d.kickMu.Lock()
	if !d.stopped.Load() {
		d.kickNow()
	}
	d.kickMu.Unlock()
}

// kickNow is Kick under kickMu.
func (d *gpu) kickNow() {
	set := d.live.Load()
	var mask uint8
	for q, ch := range set.ch {
		if p := ch.pub.Load(); p != ch.kicked {
			storePut(ch.gpPut, uint32(p%ch.entries))
			ch.kicked = p
			mask |= 1 << q
		}
	}
	if mask == 0 {
		return
	}
	if d.mapped() && !d.cfg.noFlush {
		// A fence, which drains the write-combining buffers of GPPut's
		// store, then the read.
		d.fence.Add(1)
		_ = atomic.LoadUint32(d.flush)
	}
	for q, ch := range set.ch {
		if mask&(1<<q) != 0 {
			d.p.Ring(ch.token)
		}
	}
	d.kickCount++
}

// published publishes channel ch's entries up to its put, for the next
// Kick. The caller holds mu.
func (ch *channel) published() { ch.pub.Store(ch.put) }

var _ device.Kicker = (*gpu)(nil)
