package device

import (
	"fmt"
	"math"
	"time"
)

// Facts is what a device declares of itself when it opens.
type Facts struct {
	// Arch is the multiprocessors' architecture, such as "sm_90", or
	// "host" for the host driver.
	Arch string
	// Budget is the bytes of memory the device's work may allocate.
	Budget int64
	// Queues names the device's queues; a part's Queue indexes it.
	// "COMPUTE:0" is queue 0 and "COPY:0" queue 1 on every driver here.
	Queues []string
	// CopyEngine is the queue that runs copies beside the compute queue,
	// or -1 where there is none.
	CopyEngine int
	// Completion says who writes the word.
	Completion Completion
	// Waits says which words the device's work can wait on itself.
	Waits WaitKinds
	// OnHost is true where the device's work runs on the process's own
	// goroutines, as the host driver's does: a wait's spin on the word
	// then yields its P at every read, since the work may need it. Where
	// it is false (a GPU's work), the spin reads the word back to back
	// and yields at most once per 30 µs of spinning.
	OnHost bool
	// MayBlock is true where Room, Submit or Commit may block, as libcuda
	// does while a stream is full.
	MayBlock bool
	// HangMs bounds progress: rig loses the device once its word has not
	// moved for HangMs milliseconds while work is pending, also where that
	// work waits for another device's point (the loss's cause then names
	// that device). 0 is None: nothing of rig's bounds the work. A
	// driver's configuration takes the bound as a time.Duration, which
	// HangMsOf turns into HangMs.
	HangMs int
	// MapsHost is true iff MapHost maps host memory.
	MapsHost bool
	// HostAddresses is true iff the host addresses Device memory.
	HostAddresses bool
	// Kinds is the set of kinds of memory Alloc can give (KindSet); 0
	// means every kind. rig returns an allocation of another kind at once,
	// without rounds of reclamation.
	Kinds KindSet
	// Alignment is the alignment of every region Alloc makes, in bytes.
	Alignment int
	// CacheBytes is the bytes of the last-level cache, 0 where unknown.
	CacheBytes int64
	// Capability is the *Key[T] of the record Capability returns, or nil.
	Capability any
	// Word is the word Make was given, where the device's work writes it;
	// nil where the device keeps a word of its own, which rig reads
	// through Signaled.
	Word *uint64
	// OwnWord is the region of the driver's own word, which rig frees after
	// Stop once the word reads the last value; nil where Word is set.
	OwnWord Region
	// Bus is the bus address of the device's PCI function, or "".
	Bus string
	// FaultDomain names the devices that a fault of this one loses too,
	// such as "cuda" for every CUDA device of the process; "" for none.
	FaultDomain string
}

// HangMsOf returns the HangMs of a driver's hang bound, the rule of every
// driver here: a positive bound's whole milliseconds, and 1 for one below
// a millisecond, since HangMs counts whole milliseconds; 0 (None) for a
// negative bound, or for 0, which a driver replaces by its default first
// where it has one. It returns an error naming the bound, and no HangMs,
// where the bound's milliseconds do not fit an int: past about 24.8 days
// where an int has 32 bits, never where it has 64.
func HangMsOf(bound time.Duration) (int, error) { return hangMs(bound, math.MaxInt) }

// hangMs is HangMsOf where an int holds at most most, which the tests
// make small.
func hangMs(bound time.Duration, most int64) (int, error) {
	if bound <= 0 {
		return 0, nil
	}
	ms := int64(bound / time.Millisecond)
	if ms > most {
		return 0, fmt.Errorf("a hang bound of %v: %d ms, past the %d ms an int holds", bound, ms, most)
	}
	return int(max(ms, 1)), nil
}

// KindSet is a set of kinds of memory.
type KindSet uint8

// KindsOf is the set of the kinds ms.
func KindsOf(ms ...Memory) KindSet {
	var k KindSet
	for _, m := range ms {
		k |= 1 << m
	}
	return k
}

// Has reports whether the set holds m; the empty set holds every kind.
func (k KindSet) Has(m Memory) bool { return k == 0 || k&(1<<m) != 0 }

// Completion says who writes a device's word.
type Completion uint8

const (
	// Store: the device's own work writes the word (a stream's write, a
	// channel's release, a worker's atomic store).
	Store Completion = iota
	// Host: the driver's host code writes the word after it saw the work
	// complete.
	Host
)

// WaitKinds is a set of kinds of words a device's work can wait on.
type WaitKinds uint8

const (
	// WaitStores: words that other devices' work stores to.
	WaitStores WaitKinds = 1 << iota
	// WaitHosts: words that host code stores to.
	WaitHosts
)

// Has reports whether k holds every kind of w.
func (k WaitKinds) Has(w WaitKinds) bool { return k&w == w }

// Queue indices shared by every driver here.
const (
	Compute = 0 // "COMPUTE:0"
	Copy    = 1 // "COPY:0"
)
