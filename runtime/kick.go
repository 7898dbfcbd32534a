package rig

import (
	"sync/atomic"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/yield"
)

// Kicks of a device.Kicker driver: the group commit of the submit path.
//
// A Kicker's Submit only stores to memory, under the device's submit lock;
// its Kick makes the device see what was stored (on nvdev a read of the
// flush word through the BAR and the doorbell, about 1.5 µs), and runs
// after the lock is released, so that submitters do not queue behind
// one another's round trips on the bus. Concurrent submitters share a
// Kick: one goroutine at a time (the one that set busy) kicks up to the
// larger of its value and want, which covers every value whose submitter
// raised want before. A submitter that finds busy set raises want to its
// value and yields until the Kick in flight ends; its value is then
// covered (the kicker read want after it was raised) or it sets busy and
// kicks itself. Submit so returns only once the device sees the value,
// having waited at most for the Kick in flight and one of its own, and a
// burst of N submitters costs two Kicks, not N. Alone, a submitter sets
// busy at once and kicks its value.
type kicks struct {
	_    [64]byte // off the cache lines of the submit lock and of last
	want atomic.Uint64
	_    [56]byte
	busy atomic.Bool
	done atomic.Uint64 // the v of the last Kick; written with busy set
	_    [48]byte
}

// kickLook is how many looks at a Kick in flight a waiting submitter
// takes between readings of the clock, after which it may yield.
const kickLook = 64

// kick makes k's device see every value up to v, which the caller
// submitted, combining with the other submitters of the device. The
// caller holds no lock.
func (k *kicks) kick(drv device.Kicker, v uint64) {
	if !k.busy.CompareAndSwap(false, true) {
		for {
			w := k.want.Load()
			if device.AtLeast(w, v) || k.want.CompareAndSwap(w, v) {
				break
			}
		}
		var pace yield.Pacer
		for i := 1; ; i++ {
			if device.AtLeast(k.done.Load(), v) {
				return
			}
			if !k.busy.Load() && k.busy.CompareAndSwap(false, true) {
				break
			}
			// A Kick takes a microsecond or two: a yield at every
			// look sent every waiting submitter through the
			// scheduler's global queue and its lock, which then took
			// a quarter of the CPU of four devices' submitters. The
			// waiter yields at the pace of internal/yield.
			if i%kickLook == 0 {
				if now := time.Now(); i == kickLook {
					pace.Start(now)
				} else {
					pace.Maybe(now)
				}
			}
		}
	}
	// Values are submitted in order, each before its submitter raises
	// want: every value up to w is submitted. done only grows.
	w := k.want.Load()
	if !device.AtLeast(w, v) {
		w = v
	}
	if !device.AtLeast(k.done.Load(), w) {
		drv.Kick(w)
		k.done.Store(w)
	}
	k.busy.Store(false)
}
