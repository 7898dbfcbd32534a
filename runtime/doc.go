// Package rig runs work on accelerators from Go through timeline words and
// points. It lives in the module's runtime/ folder and is imported as
//
//	import rig "github.com/rig-go/rig/runtime"
//
// A program opens devices (Open, with an opener of a driver: hostdev on CPU
// cores, cudadev through libcuda, nvdev through NVIDIA's resource manager),
// allocates buffers, loads images and submits work. Each submission gets
// the next value of its device's timeline; a Point (device, value) is
// reached once the device's 64-bit timeline word holds at least that value
// in circular order, which means that work and all the device's earlier
// work have completed.
//
// # Goroutines
//
// Each open device has one supervisor goroutine. It owns the driver's
// Sleep, the device's loss and stop, and its waiters: a goroutine that
// waits on an unreached point registers (value, channel) with the
// supervisor through its mailbox and selects on the channel and its
// context, so that ten thousand waiters cost one sleeping goroutine.
//
// Submitters do not go through the supervisor. Run.Submit computes the
// submission's waits, takes the device's next value and calls the driver's
// Room and Submit on the calling goroutine, inside the device's submit
// lock: a short critical section, with no channel send, no allocation and
// no wait inside it. A Room that returns later, a growth and a host wait on
// another device's point are taken outside the lock. Where the driver is a
// device.Kicker, its Submit only stores to memory and its Kick, which makes
// the device see the value (on nvdev a read across the bus and a doorbell),
// runs after the lock is released, one for each burst of concurrent
// submitters: Submit returns once a Kick covered its value, or
// once the Kick in flight will: its kicker looks at the values submitted
// again before it lets the kick go. The submitters of such a device
// combine: each queues its run, and whoever
// holds the submit lock makes the queued runs' attempts, in the order they
// came, before it lets the lock go; a run that must wait
// (for room, a growth, another device) goes back to its own goroutine.
//
// # Locks
//
// In the order they nest: a device's submit lock; the locks of the buffers
// a submission uses, taken in the order of their ids; a device's object
// lock (its live buffers, images and views); the registry of names. No lock
// is held across a wait on a point, a send to a mailbox, or a driver call
// that may block but Room, Submit and Commit, and two that exist to wait
// for driver calls: a device's call lock, held shared across each counted
// driver call and taken whole by Close, which so waits for them; and an
// image's call lock, held across the driver's making of its functions
// (Entry, Prepare) and the rounds of reclamation they need, which Unload
// takes so that no unload runs under them. The image's lock holds up only
// that image's Prepare, Unload and Resolves of functions not made yet; a
// Resolve of a function made already takes a short lock of its own.
//
// # Loss and close
//
// A *device.Fault from any counted driver call, a submission the driver
// returns Failed, or a word unmoved for the device's HangMs while work is
// pending loses the device: every waiter wakes with a *LostError, which
// matches ErrLost and names the cause, later calls fail at once, and the
// fault goes to the supervisors of the devices of its fault domain, unless
// the driver marked it the device's alone (device.Fault.Alone). A
// device whose submitted work waits on the device side for a point that
// another device, lost or closed, will never reach is lost too, with a
// cause that names the other device and its error; a submission that
// would wait on such a point fails with that error. A lost device asks its
// driver to write the word for what it submitted, so that held work that
// still runs ends there (its points still fail). Lost returns a channel
// closed at the loss, for a server to select on. A driver that reads more
// of its fault after the loss (device.FaultReader) is asked once the
// waiters are woken; its lines are logged and join LostError.Detail. Close
// stops the driver without waiting for its work; the supervisor then frees
// every region and unloads every image once the word reads the last value
// and no work of another device that uses its buffers can run, and Done
// is closed. A region is freed only after the views of it that other
// devices mapped: a view that a closing device holds goes at that
// device's reaping, and the region after it.
//
// # Memory
//
// A buffer is freed by Free or by the garbage collector (a cleanup), in
// both cases only once every point that uses it is reached. An allocation
// that the driver or the budget refuses runs up to four rounds of
// reclamation (package reclaim) before it returns an *OutOfMemoryError; one
// of more bytes than the whole budget, or of a length that rounding would
// overflow, returns it at once.
//
// Host memory that Go code holds is never freed under it. The slice that
// Buffer.Bytes returns stays valid for as long as it is reachable, after
// Free and after the Buffer is collected: it never faults and never aliases
// another buffer. Pinned memory (and the host driver's Mapped memory) is Go
// memory, whole pages of Go's heap, that the device maps: Free removes the
// device's mapping once the buffer's points are reached, and the garbage
// collector frees the memory once neither the Buffer nor a slice of it is
// reachable; the slice keeps the last bytes the device wrote. A GPU's own
// memory that the host addresses (nvdev's Mapped memory) is mapped over
// pages of Go's heap, and Free puts ordinary zeroed memory back there, so
// the slice reads zeros after Free; each driver's documentation says what
// its memory reads after Free. A MapHost buffer's slice is the caller's own
// memory, which rig keeps reachable until the buffer is freed.
//
// # Profiles
//
// SetTimed turns the drivers' stamps on and returns the last point
// submitted before; Settle converts the stamps to the host's clock; an
// Observer (SetObserver) sees each timed submission's parts and waits
// inside the submit lock. Package profile builds on these.
//
// # Observing
//
// Device.Stats is a snapshot of a device's counters (values submitted and
// in flight, waits by how they ended, reclamation rounds, growths, bytes
// by kind of memory, the loss) and histograms of Submit's time (sampled)
// and of parked waiters' wake-ups, taken without a lock; the paths that
// count do so with atomic adds. SetLogger reports opens, losses, closes
// and reclamation rounds through log/slog.
//
// # Tuning choices
//
// A wait reads the word for up to 20 µs (SetWaitSpin) before it registers
// with the supervisor, so that a GPU's round trip of a few microseconds
// wakes its waiter without a goroutine handoff; only a few waits spin at
// once (half of GOMAXPROCS over all the process's GPU devices, or eight
// times GOMAXPROCS a device where the device's work runs on the process's
// goroutines and a spin yields at each read), and the others register at
// once, so that thousands of waiting goroutines cost no CPU. On a device
// whose submitters combine, only a wait for the value that completes next
// spins; the others register at once. The submit lock serves submitters in
// the order they asked for it: the first few in line spin (as many as its
// sampled hold fits into a goroutine's wake-up, at most four and at most a
// quarter of GOMAXPROCS, one at least, with places on GPU devices from a
// second process-wide budget of half of GOMAXPROCS; one where the device's
// work runs on the process's goroutines), the others park, up to 131,072 a
// device, and are woken as the line reaches them, and any past those sleep
// for the holds before their turn and look again, so no submitter starves.
// The supervisor wakes registered waiters in value order. Where they exist,
// the word moved in the last 200 µs and the device's work does not run on
// the process's goroutines, it reads the word for up to 20 µs before it
// sleeps in the driver. A submitter that finds the driver's queues full
// waits for as many values to complete as submitters wait before it, rather
// than all of them for the next one. With work pending and no waiter the
// supervisor polls the driver for faults every millisecond rather than
// sleeping in it, and a submission wakes a parked supervisor only after a
// second without work. A device-side wait on a point that its device
// commits lazily has that device commit it before the waiting submission is
// published.
//
// Copies and fills default to "COPY:0" and launches and words to
// "COMPUTE:0"; Part.On moves a part. Waits honour their context, and so
// does a submission held back by full queues; a nil context panics, as it
// does in the standard library. Close does not wait for the
// device's work; Done tells when its memory is back.
package rig
