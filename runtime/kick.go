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
// Kick: one goroutine at a time (the one that set busy) kicks up to want,
// which each submitter raises to its value before it looks at busy. A
// submitter that finds busy set returns at once: the kicker looks at want
// again after each Kick and after it let busy go, and kicks again (taking
// busy again) where want moved past what it kicked, so that a value whose
// submitter found busy set is kicked by the Kick in flight or the next
// one. Submit so returns without waiting for a Kick of another's, and a
// burst of N submitters costs a Kick or two, not N. Alone, a submitter sets
// busy at once and kicks its value.
//
// A kicker kicks at most kickRounds times in a row for the values that
// came in while it kicked. Past them it marks the kicks tired, kicks once
// more up to want and lets busy go without looking again: a submitter
// that finds busy set and the kicks tired waits until a Kick covered its
// value or busy is free, which it then takes, as each did before. The
// next kicker clears tired, as does a kicker that takes busy again. So
// no submitter kicks for others for long under a steady stream of
// submissions.
//
// On the H200, four nvdev timelines of 16 goroutines each (closed loop,
// depth 1), seven rounds in two runs, interleaved with submitters that
// waited for the Kick in flight: p99 111 to 150 µs (118 on average in the
// second run) against 119 to 170 µs (125), lower in six rounds and level
// in one, at the same rates (1.13M to 1.20M submissions a second), with
// fewer goroutines waiting for a processor (19 to 32 on average against
// 24 to 38). One device's 16 and 64 goroutines were level.
type kicks struct {
	_     [64]byte // off the cache lines of the submit lock and of last
	want  atomic.Uint64
	_     [56]byte
	busy  atomic.Bool
	tired atomic.Bool   // the kicker will not look at want again; written with busy set
	done  atomic.Uint64 // the v of the last Kick; written with busy set
	_     [48]byte
}

// kickRounds is the most Kicks a kicker makes in a row before it marks
// the kicks tired.
const kickRounds = 16

// kickLook is how many looks at a Kick in flight a waiting submitter
// takes between readings of the clock, after which it may yield.
const kickLook = 64

// kick makes k's device see every value up to v, which the caller
// submitted, combining with the other submitters of the device: it
// returns once it kicked v, or once a kicker in flight will. The caller
// holds no lock.
func (k *kicks) kick(drv device.Kicker, v uint64) {
	for {
		w := k.want.Load()
		if device.AtLeast(w, v) || k.want.CompareAndSwap(w, v) {
			break
		}
	}
	var pace yield.Pacer
	for i := 1; ; i++ {
		if !k.busy.Load() && k.busy.CompareAndSwap(false, true) {
			k.kickAll(drv)
			return
		}
		// want was raised before busy was seen set: the kicker looks
		// at it again, unless tired.
		if !k.tired.Load() || device.AtLeast(k.done.Load(), v) {
			return
		}
		// A Kick takes a microsecond or two: a yield at every look
		// sent every waiting submitter through the scheduler's global
		// queue and its lock, which then took a quarter of the CPU of
		// four devices' submitters. The waiter yields at the pace of
		// internal/yield.
		if i%kickLook == 0 {
			if now := time.Now(); i == kickLook {
				pace.Start(now)
			} else {
				pace.Maybe(now)
			}
		}
	}
}

// kickAll kicks up to want, again while want moves, and lets busy go.
// Values are submitted in order, each before its submitter raises want:
// every value up to want is submitted. done only grows. The caller set
// busy.
func (k *kicks) kickAll(drv device.Kicker) {
	for rounds := 0; ; {
		// The caller set busy, or the loop took it again: this kicker
		// looks at want again, whatever a kicker that held busy in
		// between marked.
		k.tired.Store(false)
		for {
			w := k.want.Load()
			if device.AtLeast(k.done.Load(), w) {
				break
			}
			if rounds == kickRounds {
				// Submitters that find busy set from here wait;
				// this Kick covers those that returned before.
				k.tired.Store(true)
				w = k.want.Load()
				drv.Kick(w)
				k.done.Store(w)
				k.busy.Store(false)
				return
			}
			drv.Kick(w)
			k.done.Store(w)
			rounds++
		}
		k.busy.Store(false)
		// A submitter that raised want and then found busy set returned:
		// its value is covered, or want is past done here.
		if device.AtLeast(k.done.Load(), k.want.Load()) || !k.busy.CompareAndSwap(false, true) {
			return
		}
	}
}
