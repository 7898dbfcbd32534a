package rig

import (
	"fmt"
	"sync/atomic"

	"github.com/rig-go/rig/device"
)

// A debt is what a device's published work owes to another device's
// points: work of the debtor that waits on the device's side for the
// other device's word. Where that word will never honestly reach the
// point (the other device was lost or stopped short of it), the waiting
// work would block until the other device's stop raises its word, and
// then run on data that was never written: the debtor is lost instead,
// with a cause that names the other device's loss or close.
//
// Either side finds the debt: the debtor records it after it publishes
// the work and then looks whether the point can still be reached
// (owe), and a device that is lost or stopped looks through the debts
// that others owe it (failDebtors) after it recorded its loss or stop.
// Both records are atomic, so at least one side sees the other.

// debt is what one device owes to another device, up.
type debt struct {
	up *Device
	// upTo is the latest value of up that the debtor's work waits for;
	// at is the debtor's value of the last work that waits on up.
	upTo, at atomic.Uint64
}

// owe records that the debtor d's value v waits on the device side for
// the points owed, and loses d where one of them will never be reached.
// d's submit lock is held; it allocates only at d's first wait on a
// device.
func (d *Device) owe(owed []Point, v uint64) error {
	for _, p := range owed {
		if dt := d.debtTo(p, v); dt != nil {
			if device.AtLeast(p.v, dt.upTo.Load()) {
				dt.upTo.Store(p.v)
			}
			dt.at.Store(v)
		}
	}
	for _, p := range owed {
		if err := p.d.passedAnswer(p.v); err != nil {
			return d.loseRead(owedCause(v, p, err), nil, func() uint64 {
				reached := d.read()
				if device.AtLeast(reached, v) {
					reached = v - 1
				}
				return reached
			})
		}
	}
	return nil
}

// waitedFor names, for a hang's cause, the other devices whose points the
// work of d past cur waits for on the device side and that have not
// reached them: the word may stand still behind them rather than behind
// d's own work. It returns "" where there are none. Only d's supervisor
// calls it.
func (d *Device) waitedFor(cur uint64) string {
	ds := d.debts.Load()
	if ds == nil {
		return ""
	}
	s := ""
	for _, dt := range *ds {
		if up, to := dt.up, dt.upTo.Load(); !up.reaped.Load() && !device.AtLeast(cur, dt.at.Load()) && !device.AtLeast(up.read(), to) {
			s += fmt.Sprintf("; its work waits for value %d of device %s, which reads %d", to, up.name, up.read())
		}
	}
	return s
}

// debtTo returns d's debt to p's device, or adds one of p for d's value v
// and returns nil where d owed that device nothing yet. d's submit lock is
// held: it is the only writer of d.debts.
func (d *Device) debtTo(p Point, v uint64) *debt {
	var old []*debt
	if ds := d.debts.Load(); ds != nil {
		old = *ds
	}
	for _, dt := range old {
		if dt.up == p.d {
			return dt
		}
	}
	dt := &debt{up: p.d}
	dt.upTo.Store(p.v)
	dt.at.Store(v)
	next := make([]*debt, 0, len(old)+1)
	for _, o := range old {
		if !o.up.reaped.Load() {
			next = append(next, o)
		}
	}
	next = append(next, dt)
	d.debts.Store(&next)
	return nil
}

// failDebtors loses every device whose published work waits on a point
// of d that d will never reach, and that has not run yet, and so on down
// the chain: the debtors of such a device, lost or stopped before its
// work ran, are failed the same way before failDebtors returns. The
// supervisor calls it once d's loss or stop is recorded, before the
// driver's Stop raises the word: once it rises, the debtor's work runs
// (on data never written) and raises the debtor's word, which its own
// debtors' work waits for, so that waiting for the debtor's supervisor to
// fail them would let their work run and their points answer success.
func (d *Device) failDebtors() {
	d.failDebtorsSeen(map[*Device]bool{d: true})
}

// failDebtorsSeen is failDebtors, going on to the debtors' debtors that
// seen does not hold.
func (d *Device) failDebtorsSeen(seen map[*Device]bool) {
	regMu.Lock()
	others := make([]*Device, 0, len(names))
	for _, o := range names {
		if o != d {
			others = append(others, o)
		}
	}
	regMu.Unlock()
	for _, o := range others {
		ds := o.debts.Load()
		if ds == nil {
			continue
		}
		for _, dt := range *ds {
			if dt.up != d {
				continue
			}
			upTo, at := dt.upTo.Load(), dt.at.Load()
			err := d.passedAnswer(upTo)
			if err == nil {
				continue
			}
			// A device whose stop is recorded is not lost: its close
			// answers the waiters of that work with ErrClosed, and its
			// stop drops the work (recordStop). Either way, the points
			// of its work from at on are never honestly reached.
			chain := false
			o.stopMu.Lock()
			o.recordRead(func() {
				if reached := o.read(); !device.AtLeast(reached, at) {
					if !o.stopped.Load() {
						o.loseAt(owedCause(at, Point{d: d, v: upTo}, err), nil, reached)
					}
					chain = true
				}
			})
			o.stopMu.Unlock()
			if chain && !seen[o] {
				seen[o] = true
				o.failDebtorsSeen(seen)
			}
		}
	}
}

// owedCause is the cause of the loss of a device whose value v waits on
// the point p, which p's device will never reach for err.
func owedCause(v uint64, p Point, err error) string {
	return fmt.Sprintf("value %d waits on value %d of device %s, which will never be reached: %v", v, p.v, p.d.name, err)
}
