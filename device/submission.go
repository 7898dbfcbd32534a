package device

import "fmt"

// Submission is one value's work as rig hands it to Room and Submit.
// rig owns it and reuses it: a driver must not
// keep a pointer into it past the call.
type Submission struct {
	// Value is the value the work's completion writes into the word.
	Value uint64
	// Waits hold the work back until each word holds at least its value,
	// compared circularly (AtLeast).
	Waits []Wait
	// Parts is the work, in order.
	Parts []Part
	// Timed is true while a profile is taken: the driver stamps the value's
	// start and end, which Settle converts.
	Timed bool
}

// Wait holds work back until Word holds at least Value.
type Wait struct {
	// Word is the host address of an aligned 64-bit word in rig's array.
	Word *uint64
	// Value is the value the word must reach.
	Value uint64
}

// PartKind is the kind of a part.
type PartKind uint8

const (
	// Launch runs a function over groups of threads.
	Launch PartKind = iota + 1
	// CopyRows moves rows between two regions, or fills them with a byte.
	CopyRows
	// Fill calls a driver fill function.
	Fill
	// Words hands raw ring entries to a queue (nvdev).
	Words
)

// String names the kind as refusals print it.
func (k PartKind) String() string {
	switch k {
	case Launch:
		return "launch"
	case CopyRows:
		return "copy"
	case Fill:
		return "fill"
	case Words:
		return "words"
	}
	return "part(?)"
}

// Part is one piece of a submission's work on one queue.
type Part struct {
	// Kind says which of the groups of fields below the part uses.
	Kind PartKind
	// Queue indexes Facts.Queues.
	Queue int
	// After is 1 + the index of an earlier part of the submission that this
	// part runs after, on top of its queue's order; 0 for none. The part
	// starts only once that part has completed and its writes are visible,
	// whatever the two parts' queues: a driver must honour an After across
	// queues as it honours its queue order. rig sets it from the parts'
	// buffers (the latest earlier part on the other queue that writes a
	// buffer the part uses, or uses a buffer it writes) merged with the
	// caller's Part.After; since a part also starts only once the parts
	// before it on its queue have completed, one After is exact for a
	// device of two queues, and rig opens submissions on no device of more.
	After int

	// Launch: the function, its groups, threads per group, dynamic shared
	// memory, and parameter bytes with buffer addresses patched in.
	Entry   *Entry
	Groups  [3]uint32
	Threads [3]uint32
	Shared  uint32
	Params  []byte

	// CopyRows: Rows rows of RowBytes bytes, from Src at SrcOffset with
	// SrcPitch bytes between rows, to Dst at DstOffset with DstPitch. When
	// Filling is true there is no source and each byte is set to Byte.
	// Every driver refuses (RoomNever) two rows or more with a pitch
	// under RowBytes on either side.
	Src, Dst             Region
	SrcOffset, DstOffset uint64
	RowBytes, Rows       uint64
	SrcPitch, DstPitch   uint64
	Filling              bool
	Byte                 byte
	// Fill32 is set where a fill sets four-byte words rather than bytes:
	// each word of the rows to Value, little-endian, Byte unused. The
	// fill's offset within its buffer, RowBytes and DstPitch are
	// multiples of 4 (rig checks them); DstOffset, which adds the
	// buffer's place in its region, need not be (a MapHost buffer lent at
	// such an address): a GPU driver refuses a destination whose address
	// is not a multiple of 4, and the host driver fills it as it lies.
	Fill32 bool
	Value  uint32

	// Fill: the driver's fill function and its argument.
	FillFn  any
	FillArg uintptr

	// Words: ring entries, an even number of 32-bit words.
	Words []uint32
}

// RoomKind is the kind of Room's answer.
type RoomKind uint8

const (
	// RoomOK: the queues hold the parts; submit now.
	RoomOK RoomKind = iota
	// RoomLater: try again once the device has progressed.
	RoomLater
	// RoomGrow: call Grow, then Room again.
	RoomGrow
	// RoomNever: the device never runs these parts; Reason says why.
	RoomNever
)

// RoomAnswer is Room's answer.
type RoomAnswer struct {
	// Kind is the answer.
	Kind RoomKind
	// Part is the index of the part a RoomNever refuses, or -1 for the
	// submission as a whole.
	Part int
	// Reason says why, for RoomNever.
	Reason string
}

// SubmitKind is the kind of Submit's and Commit's answer.
type SubmitKind uint8

const (
	// Committed: the device writes the value once its work completes.
	Committed SubmitKind = iota
	// Pending: the value is written only once committed (Commit).
	Pending
	// Failed: the device failed; Reason says what it was doing and why.
	// The word still reaches the value.
	Failed
)

// SubmitAnswer is Submit's and Commit's answer.
type SubmitAnswer struct {
	// Kind is the answer.
	Kind SubmitKind
	// Reason says what the device was doing and why, for Failed.
	Reason string
}

// Stamp is a value's work as a profile sees it, on the host's clock (Now).
type Stamp struct {
	// Value is the value whose work the stamp times.
	Value uint64
	// Queue is the queue the value ended on.
	Queue int
	// Start is the earliest start of the value's work on any queue, and
	// End the end of its last work, in nanoseconds of Now.
	Start, End int64
}

// Misfit32 is why a fill of four-byte words (Fill32) whose first byte
// lies at address at cannot set them, or "": the address, the rows'
// bytes, or the pitch of two rows or more, not a multiple of 4. A GPU
// driver refuses the part with it.
func (p *Part) Misfit32(at uint64) string {
	switch {
	case at%4 != 0:
		return fmt.Sprintf("a fill of four-byte words at address %#x, not a multiple of 4", at)
	case p.RowBytes%4 != 0:
		return fmt.Sprintf("a fill of four-byte words of rows of %d bytes, not a multiple of 4", p.RowBytes)
	case p.Rows > 1 && p.DstPitch%4 != 0:
		return fmt.Sprintf("a fill of four-byte words of rows %d bytes apart, not a multiple of 4", p.DstPitch)
	}
	return ""
}
