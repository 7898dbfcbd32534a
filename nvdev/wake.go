package nvdev

import "runtime"

// Deferred wake-ups (device.Waker). A wake-up reads the path's flush word
// through the BAR, about 1.3 µs on the H200, so that the host's writes of
// rings and GPPut reach the GPU before it stores the channels' tokens at
// the doorbell. Under rig, Submit only records the channels it owes a
// wake-up; each submitter then calls Wake with no lock held, and one
// wake-up serves every submission recorded before it: with many
// submitters, the submit lock is held for the stores alone, and the reads
// through the BAR overlap the next submissions' stores.

// DeferWake makes Submit leave its wake-ups to Wake. rig calls it once,
// before the first Room.
func (d *gpu) DeferWake() { d.deferWake = true }

// Wake wakes the channels that the submissions recorded so far owe a
// wake-up. Where another goroutine is waking them, it waits for that
// wake-up, and makes one of its own where that one began before the
// caller's submission was recorded. Any goroutine may call it, at any
// time; after Stop it does nothing.
func (d *gpu) Wake() {
	mine := d.submits.Load()
	for d.woken.Load() < mine {
		if !d.wakeMu.TryLock() {
			runtime.Gosched()
			continue
		}
		d.wakeOwed()
		d.wakeMu.Unlock()
		return
	}
}

// wakeOwed wakes the channels owed a wake-up, for every submission
// counted when it starts. wakeMu is held.
func (d *gpu) wakeOwed() {
	if d.stopped.Load() {
		return
	}
	upto := d.submits.Load()
	if mask := uint8(d.owed.Swap(0)); mask != 0 {
		d.wake(mask)
	}
	d.woken.Store(upto)
}

// wakeStalled wakes what submissions owe where their submitters have not
// called Wake yet: Sleep calls it, so that a submitter that stalls before
// its Wake delays no waiter for long.
func (d *gpu) wakeStalled() {
	if d.owed.Load() != 0 && d.wakeMu.TryLock() {
		d.wakeOwed()
		d.wakeMu.Unlock()
	}
}
