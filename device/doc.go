// Package device is the contract between rig's core (package rig, in
// runtime/) and the drivers that run its work: hostdev on CPU cores, cudadev
// through libcuda, nvdev through NVIDIA's resource manager.
//
// The contract is [Driver]. A driver is opened by an [Opener], which is
// given a timeline word and returns a [Driver]. rig then
// calls the driver from three kinds of goroutine:
//
//   - the device's supervisor goroutine, which alone calls Sleep, and which
//     calls Stop, and Free and Unload after Stop (Open calls Stop itself,
//     on its own goroutine, for a driver whose Facts declare no queues);
//   - submitting goroutines, which call the hot path: Room, Submit and
//     Commit in value order, one submission at a time per device, inside
//     the device's submit lock; Grow after a Room that returned RoomGrow,
//     on the goroutine of that submission and outside the submit lock, so
//     that other submissions' Room and Submit may run meanwhile; and a
//     Kicker's Kick after Submit, one Kick at a time per device, with no
//     lock held. Commit also comes from a goroutine that waits on a point,
//     a submitter of another device whose work waits on one, and the
//     supervisor (values left uncommitted), inside the same submit lock.
//     Where submitters combine (a Kicker whose Facts.OnHost is false),
//     whoever holds the submit lock makes the Room and Submit of the
//     submissions queued behind it: a submitter, or one of those callers
//     of Commit;
//   - any goroutine, for Alloc, Free, Locate, Peer, MapPeer, MapHost, DMA,
//     Image, Entry, Prepare, Unload, Signaled, Settle and Capability.
//
// A driver must allow these calls at the same time as each other: a
// goroutine may call any of them while others are in flight.
//
// # Counted calls
//
// A call is counted when a [*Fault] it returns loses the device: Alloc,
// MapPeer, MapHost, DMA, Image, Entry, Prepare, Unload, Grow, Settle,
// Sleep, and the hot path's failures. Free, Locate, Peer, Stop and
// Capability are not counted: rig drops their faults.
//
// # Answers
//
// The hot path's answers are small Go values that allocate nothing:
// [RoomAnswer] (ok, later, grow, or never with its reason) and
// [SubmitAnswer] (committed, pending, or failed with its reason). Elsewhere
// a sentinel or a typed error carries the answer: [ErrNoMemory] for an
// allocation the device has no memory for, [ErrAbsent] for an entry the
// image lacks, [*NoMemory] for an entry that lacks n bytes, [*Short] for a
// growth that lacks n bytes, [ErrNoRoom] and [ErrNever] for a mapping's
// refusals, and [*Fault] for a fault. Any other error is a refusal of the
// arguments, which loses nothing.
package device
