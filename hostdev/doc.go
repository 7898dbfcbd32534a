// Package hostdev is the host driver: a device that runs Go kernels on the
// host's CPU cores. It is rig's default device where no GPU is, and the
// driver that every CI test of the core runs against, so it behaves as a
// GPU does where rig can tell: its work runs asynchronously and completes
// by a store to the timeline word; it faults, hangs, runs out of memory and
// pushes back when its queues fill.
//
// # Model
//
// Memory is the host's: Device memory an anonymous mapping (mmap) that
// Free unmaps on Unix, and a page-aligned array of Go's heap elsewhere;
// Pinned and Mapped memory a page-aligned array of Go's heap
// that the garbage collector frees once neither the region nor a slice of
// it is reachable, so that a slice of it never faults nor aliases another
// region after Free, and reads the bytes the region held when it was
// freed. Each allocation's whole pages are taken from the
// device's budget (Config.Budget). A region's device address is its host
// address, and so is its handle; Location.Host is set for Pinned and
// Mapped memory and MapHost's mappings, and is 0 for Device memory, with
// Facts.HostAddresses false, as on a discrete GPU, so that rig takes its
// paths for one. MapHost maps the caller's pages with no copy; MapPeer
// between two host devices is a view of the same bytes.
//
// An image is a text manifest (ImageOf) that names kernels registered in
// the process (Register). A launch runs its kernel once per thread, the
// threads of a group one after another on one goroutine, the groups on up
// to GOMAXPROCS goroutines at once. A kernel reaches memory only through
// addresses in its parameters (Ctx.Bytes), which must lie in a live region
// of the device: an address outside faults the device, as a GPU's MMU
// does. A kernel that panics faults the device too, and so does Ctx.Fault.
// So does a kernel or fill that calls runtime.Goexit: it ends the device's
// goroutine that ran it, which first finishes what that goroutine owed the
// value in flight and starts another in its place, so that the word still
// reaches the last value at Stop.
// Faults of the host's own MMU in a kernel, such as a read of freed
// memory, panic rather than crash the process (debug.SetPanicOnFault), and
// fault the device.
//
// # Built-in kernels
//
// Every image may name these kernels, registered at init; their parameters
// are little-endian:
//
//   - "empty" does nothing (0 parameter bytes);
//   - "twice" doubles the float32 x[Group[0]*Threads[0]+Thread[0]] of the
//     array at the address in bytes 0 to 8 (8 bytes);
//   - "hang" blocks until the device stops or faults: the injection of a
//     hang (0);
//   - "panic" panics, which faults the device (0);
//   - "fault" faults the device through Ctx.Fault, with its parameter bytes
//     as the cause where it has any (all the launch's bytes);
//   - "sleep" sleeps for the nanoseconds in bytes 0 to 8 in each thread, or
//     until the device stops or faults (8);
//   - "copy" moves the count of bytes in bytes 16 to 24 from the address in
//     bytes 8 to 16 to the address in bytes 0 to 8, spread over the
//     launch's threads (24);
//   - "fill" sets the count of bytes in bytes 8 to 16 at the address in
//     bytes 0 to 8 to byte 16, spread over the launch's threads (17).
//
// # Queues and order
//
// The device has two queues, COMPUTE:0 (launches, copies, fills) and
// COPY:0 (copies, fills). Submit copies the submission, its parameter bytes
// included, into the launch ring: a preallocated ring of Config.Ring value
// slots and three circular arenas of parts, waits and parameter bytes,
// which Grow replaces with larger ones. Submit returns Committed: the work
// starts at once. The values run in device order: value v's parts start
// once every part of v-1 completed, after v's waits hold (polled with a
// backoff from a yield to a millisecond, and woken at once by any host
// device's store to its word). Within a value, the parts of one
// queue run in order, the two queues at once, and a part with After runs
// after the part it names. Once a value's work completed, its value is
// stored into the word (sync/atomic), so the word always holds the last
// value v whose work, and every earlier value's, completed. (The race
// detector sees the order that store gives to the work's writes only where
// the word lies in Go's heap: it tracks no atomic operation on memory of
// mmap's.)
//
// A fault ends the device's work, as a fault ends a GPU context's: the
// parts of the faulting value that had not started are skipped, and so is
// every later value, waits and all; and the word stays at the last value
// before the one that faulted, as CUDA's and the RM's words do, until Stop
// writes the last value submitted. rig thus learns of the fault (Sleep
// returns it) while the word still shows which values completed, and no
// waiter takes the faulting value for done. Submit returns Failed with the
// fault's cause once the device faulted before it hands the value over; a
// fault of the value's own work is Sleep's to return, as a GPU's is.
//
// # Goroutines
//
// Make starts the device's goroutines, and Stop ends them all:
//
//   - the sequencer, which owns the values in flight: it waits for a
//     value's waits, runs its COMPUTE:0 parts itself, hands its COPY:0
//     parts to the copier and waits for them, stamps the value where it is
//     timed and its work completed, and stores it into the word;
//   - the copier, COPY:0's goroutine, which runs what the sequencer hands it;
//   - GOMAXPROCS-1 helpers, which take groups of a launch beside the queue
//     goroutine that runs it, where they are idle.
//
// The submitting goroutine alone calls Room, Grow and Submit. rig calls
// Room and Submit in value order, one at a time, inside its submit lock;
// it calls Grow outside that lock, so that another submitter's Room and
// Submit may run beside it: Grow reads the needs Room recorded and hands
// its arenas over atomically, and the next Room puts them into the ring.
// The goroutine that holds the lock owns the launch ring's free space and
// fills a slot before it publishes it to the sequencer with an atomic
// store. The sequencer hands a slot back by storing the count of
// values completed, which Room reads before it reuses the slot's space. Any
// goroutine may call the rest.
//
// A device's mutex (mu) guards whether a value runs, whether the last
// value was written, and how Sleep is woken, and orders the sequencer's
// stores into the word against Stop's, so that no store follows the last
// value. The regions that work may address are an immutable sorted slice,
// which Alloc, Free and the mappings replace under their own mutex, so
// that a kernel's Ctx.Bytes takes no lock. Locks nest in this order, and
// none but Sleep's own is held while a goroutine waits: Sleep's (sleepMu),
// the device's, then the process-wide one that wakes waits on words
// (stores).
// The launch ring's stamps (stampMu) and the regions' mutex (regMu) nest
// with none.
//
// Stop does not wait for work: it closes the device's stop channel, which
// ends hanging kernels (Ctx.Stopped), pending waits and idle goroutines;
// the values not yet started are dropped; and the last value submitted is
// stored into the word at once where no value runs, or by the sequencer
// once the running value's kernels return and its copies of rows reach
// their next piece (a quarter of a MiB), where they end with the rest
// undone. A kernel that ignores Ctx.Stopped and never returns keeps its
// goroutine, and the word, as a hung GPU kernel keeps a GPU.
package hostdev
