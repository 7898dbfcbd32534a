// Package reclaim holds rig's reclamation: budgets of device memory,
// deferred frees keyed by points, and the rounds an allocation runs before
// it gives up.
//
// An allocation, an entry that returns a *device.NoMemory (No_memory n),
// or a growth that returns a *device.Short (Short n) runs up to Rounds
// rounds (Retry). Before each retry the
// caller's round runs: free what is reached; wait for in-flight work that
// holds deferred frees; collect garbage so that unreachable buffers'
// cleanups give their memory back (Collect); and retry once more. After the
// last round the caller reports how many bytes it lacked.
//
// Every type here is safe for use by any goroutine.
package reclaim

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Rounds is the number of reclamation rounds before an allocation fails.
const Rounds = 4

// Budget counts the bytes a device's allocations take against its limit.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget makes a budget of limit bytes; a limit of 0 or less is none,
// which Limit returns as 0.
func NewBudget(limit int64) *Budget { return &Budget{limit: max(limit, 0)} }

// Take counts n more bytes and returns 0, or counts nothing and returns the
// bytes the budget lacks for them. Without a limit it lacks the bytes past
// the most an int64 counts. Its arithmetic does not overflow for any n;
// it panics if n is negative, as counting it would give bytes back.
func (b *Budget) Take(n int64) (lack int64) {
	if n < 0 {
		panic(fmt.Sprintf("reclaim: Take of %d bytes", n))
	}
	limit := b.limit
	if limit == 0 {
		limit = math.MaxInt64
	}
	for {
		u := b.used.Load()
		if room := limit - u; n > room {
			// u is never below 0 (Give) nor past limit, so room neither
			// overflows nor is negative, and n-room does not overflow.
			return n - max(room, 0)
		}
		if b.used.CompareAndSwap(u, u+n) {
			return 0
		}
	}
}

// Give counts n bytes back, n from an earlier Take. It panics if n is
// negative, or more than the bytes counted, leaving the count as it was:
// the count is never below 0, not even for a moment, as a Take that read
// such a count would compute more room than the limit leaves.
func (b *Budget) Give(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("reclaim: Give of %d bytes", n))
	}
	for {
		u := b.used.Load()
		if n > u {
			panic(fmt.Sprintf("reclaim: Give of %d bytes with %d counted", n, u))
		}
		if b.used.CompareAndSwap(u, u-n) {
			return
		}
	}
}

// Used is the bytes counted now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Limit is the budget's limit, 0 for none.
func (b *Budget) Limit() int64 { return b.limit }

// Item is a deferred free: Release runs once Due returns true.
type Item interface {
	// Due reports whether every point the item waits for is reached.
	Due() bool
	// Release frees the item. It runs once.
	Release()
}

// Deferred holds items until they are due.
type Deferred struct {
	mu    sync.Mutex
	items []Item
	n     atomic.Int64 // len(items)
	// live counts the items held and those a Sweep took whose Release has
	// not returned, in one word that Len loads once: two loads, one of each
	// count, could miss an item added between them while another's
	// Release returned.
	live atomic.Int64
}

// Add defers it until it is due.
func (d *Deferred) Add(it Item) {
	d.mu.Lock()
	d.items = append(d.items, it)
	d.n.Store(int64(len(d.items)))
	d.live.Add(1)
	d.mu.Unlock()
}

// Len is the number of items not yet released: those held, and those a
// Sweep took whose Release has not returned. Drain's items are its
// caller's and count no more.
func (d *Deferred) Len() int { return int(d.live.Load()) }

// Sweep releases every due item and returns how many it released.
// Release runs with no lock of the Deferred held. A panic of an item's Due
// or Release goes on to Sweep's caller, and leaves the Deferred usable:
// after a Due's panic every item is kept, and after a Release's panic that
// item counts as released and the due items after it are kept, for a later
// Sweep to release.
func (d *Deferred) Sweep() int {
	if d.n.Load() == 0 {
		return 0
	}
	due := d.takeDue()
	i := 0
	defer func() {
		if i < len(due) {
			// due[i]'s Release panicked: it counts as released, and
			// the items after it are held again.
			d.mu.Lock()
			d.items = append(d.items, due[i+1:]...)
			d.n.Store(int64(len(d.items)))
			d.live.Add(-1)
			d.mu.Unlock()
		}
	}()
	for ; i < len(due); i++ {
		due[i].Release()
		d.live.Add(-1)
	}
	return len(due)
}

// takeDue removes the due items from d and returns them.
func (d *Deferred) takeDue() (due []Item) {
	d.mu.Lock()
	kept := d.items[:0]
	j := 0
	defer func() {
		if j < len(d.items) {
			// d.items[j]'s Due panicked: the items kept, those found due
			// (due is an array of its own) and the rest stay, in d.items'
			// place.
			d.items = append(kept, append(due, d.items[j:]...)...)
		} else {
			// The due items stay in live as they leave items, until
			// their Release returns.
			clear(d.items[len(kept):])
			d.items = kept
		}
		d.n.Store(int64(len(d.items)))
		d.mu.Unlock()
	}()
	for ; j < len(d.items); j++ {
		if it := d.items[j]; it.Due() {
			due = append(due, it)
		} else {
			kept = append(kept, it)
		}
	}
	return due
}

// Drain removes and returns every item, due or not.
func (d *Deferred) Drain() []Item {
	d.mu.Lock()
	its := d.items
	d.items = nil
	d.n.Store(0)
	d.live.Add(-int64(len(its)))
	d.mu.Unlock()
	return its
}

// Retry calls try until it lacks nothing, at most Rounds+1 times, calling
// round(i) before retry i (0 to Rounds-1). try returns the bytes it lacked,
// or 0 with its result err. Retry returns the last try's lack and error.
func Retry(try func() (lack int64, err error), round func(i int)) (int64, error) {
	lack, err := try()
	for i := 0; lack > 0 && i < Rounds; i++ {
		round(i)
		lack, err = try()
	}
	return lack, err
}

// Collect runs the garbage collector and waits, up to timeout, until the
// cleanups it queued have run, so that buffers nobody reaches have given
// their memory back to deferred frees.
func Collect(timeout time.Duration) {
	done := make(chan struct{})
	// Not a tiny object: tiny ones share a block whose other objects may
	// keep it, and its cleanup, from running.
	sentinel := new([64]byte)
	runtime.AddCleanup(sentinel, func(c chan struct{}) { close(c) }, done)
	sentinel = nil
	_ = sentinel
	runtime.GC()
	select {
	case <-done:
	case <-time.After(timeout):
	}
	// Cleanups queued by the same cycle may run after the sentinel's:
	// let them run too.
	runtime.Gosched()
	runtime.GC()
}
