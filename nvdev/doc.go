// Package nvdev is the RM driver of NVIDIA GPUs: it runs
// rig's work on a GPU through NVIDIA's resource manager, with no CUDA, from
// pure Go.
//
//	dev, err := rig.Open(ctx, nvdev.GPU(0))
//
// opens the first NVIDIA GPU, in PCI bus order, through NVIDIA's kernel
// driver (nvdev/nvidia); the wire formats (methods, ring entries, launch
// descriptors, cubins) are nvdev/hw's.
//
// # The device
//
// make allocates, under the path's RM device, a channel group on the
// graphics engine of its own (or with Config.SharedGroup a context share in
// the group that the GPU's timelines share in the process, one it makes
// where there is none), and in it two GPFIFO channels
// of the generation's class (HOPPER_CHANNEL_GPFIFO_A on the H200): the
// compute channel, with the compute engine bound on subchannel 1 and a copy
// engine on subchannel 4, and the copy channel, with a copy engine on
// subchannel 4. Each channel's ring holds 262,144 entries (2 MiB) and its
// USERD in Mapped memory, which the host writes through the BAR; its error
// notifier and its mark word are in Pinned memory. The channels' segment
// rings and the launch ring, 1 MiB each, are Mapped memory where the BAR
// has room and Pinned memory otherwise (Config.PinnedSegments,
// Config.PinnedRings): the GPU fetches from Mapped memory faster than from
// Pinned memory, and GPPut lives with the rings.
//
// make registers the channels with the path, schedules the group, asks the
// RM for the highest clocks (PERF_BOOST), runs each channel's first words
// (the engines' binding and the compute engine's windows) and waits for
// them, and measures the GPU's timer against the host's clock. The word is
// rig's array of words mapped for the GPU (64 KiB, through the path's
// MapHost), or a word of the device's own in Pinned memory where the word
// lies outside the array or the path maps no host memory; a device of its
// own word declares no GPU-side waits, so rig waits on the host for it.
//
// # Timelines
//
// A GPU holds several devices at once, one per timeline: Timeline(i, k)
// opens the kth, and GPU(i) is Timeline(i, 0). Each has its own word,
// channels, rings and submit path, so that submitters of different timelines
// share no lock. Each has a channel group of its own by default; the
// timelines of a GPU that ask for it (Config.SharedGroup) share one channel
// group, each in a subcontext of its own (a context share with a VEID of its
// own), since the GPU's scheduler time-slices channel groups while the
// compute engine runs the subcontexts of one group side by side
// (docs/nvdev.md, Timelines, says why, and what their words change: waits
// for idle of the subcontext, acquires that yield the group). Memory of the
// GPU lies at the same addresses for every timeline (the paths of a GPU
// share its address space), and a timeline waits for another's value on the
// GPU, with a semaphore acquire on its word. The RM stops every channel of a
// group that faults: the timelines of a group name its fault domain and rig
// loses them together; a device of a group of its own names none. A fault
// that Sleep raises or that the path returns to a call (Grow, Alloc,
// Entry, MapPeer, MapHost, DMA, a lay, Unload) marks the group faulted,
// and a timeline opened later gets a new group and domain. A fault
// found on the host's side alone (a settle that finds a reached value's
// stamps unwritten, or cannot read the GPU's timer where the path reports no
// fault of the GPU, or a regrowth's channels that did not run their first
// words in time, with no error in their notifiers) stops no channel, and
// loses its timeline alone (device.Fault.Alone).
//
// # Submitting
//
// Room and Submit only store to memory (submit.go says how the words order
// the work): segments of methods in the channels' segment rings, entries in
// their rings, constant banks and descriptors in the launch ring. Kick,
// which rig calls after its submit lock is released and once for a burst
// of concurrent submitters, then stores GPPut, reads the path's flush word
// and rings the doorbell for every value submitted before it.
// Each value ends
// with a 64-bit semaphore release of the word, with a wait for idle, on the
// channel of its last part, or, for an untimed value of the compute channel
// whose last part is a launch and whose low 32 bits are not 0, with that
// launch's own release (its descriptor's release slot). Waits are host
// semaphore acquires (circular ≥, 64 bits) on words of rig's array. The
// device holds at most 32,768 values in flight (RoomLater), and tracks what
// the channels consumed by the position each value left in each ring, which
// the word says is consumed.
//
// Room returns RoomGrow for words beyond a segment ring, launches beyond the
// launch ring, entries beyond a channel's ring and the first timed
// submission; Grow makes the rings anew, two channels anew in a new channel
// group and the stamp ring (docs/nvdev.md, Images, growth, stamps and local
// memory), and Settle converts the stamps of timed values to the host's
// clock. A copy or fill of one row (or of rows without gaps) of at least 256
// KiB within the device's own Device memory, or a copy or fill of rows of 1
// KiB or more with gaps between them, 256 KiB in all (a copy whose spans
// read and written meet within one region stays the copy engine's), runs as
// the driver's own kernel on the compute channel, on the GPUs whose cubins
// nvdev carries unless Config.CopyKernels says otherwise.
// Images go into rig's Device region by the copy channel, through a staging
// buffer.
//
// Memory of another device: a device of the same GPU is viewed at the
// same addresses; another GPU's Device and Pinned memory is mapped through
// UVM where the RM's P2P capabilities say the GPUs reach each other
// (package nvidia). DMA exports Device and Mapped memory as a dma-buf
// (package nvidia). Each channel of a device has a runqueue of its own, so
// that a channel stuck on an acquire never holds the other's, and the
// timelines of the shared group alternate which runqueue their compute
// channel takes, so that the group's two PBDMAs each feed half their
// launches (docs/nvdev.md, Timelines). Copies of bytes on COMPUTE:0 run
// on a copy engine the compute channel binds on subchannel 4 (it ran on
// the H200);
// Config.NoComputeCopies refuses them instead.
//
// # Launches
//
// Entry makes a kernel's launch template (nvdev/hw's Launch) and grows the
// compute channel's local memory to serve it; a launch stamps the template's
// descriptor (QMD V04 on Hopper) and its constant bank 0 into the launch ring
// and sends the descriptor (SEND_PCAS_A, SEND_SIGNALING_PCAS2_B). A wait for
// idle separates it from the work before it on its channel, except after a
// launch of the same value: the descriptor before prefetches it and
// schedules it as it completes (Config.NoLinkLaunches), and ends with a
// membar of the GPU alone, the chain's last launch keeping the system's.
// On Hopper every launch has the engine prefetch its constant bank 0
// before its groups start (hw.Qmd.SetBankPrefetch, SetDependent).
//
// # Waiting
//
// Sleep spins on the word for 50 µs, then blocks on the device's event of
// the GPU's non-stall interrupts (nvidia.Event, registered for the
// graphics engine, whose runlist serves both channels). A value submitted
// while waiters are parked, no earlier value that raises the interrupt is
// in flight, and the budget of interrupts that the GPU's devices in the
// process share (8 at once, then 10,000 a second) has one left, ends with
// the channel's semaphore release followed by NON_STALL_INTERRUPT, never
// with the launch's own release; other values raise nothing, and a Sleep
// that finds one of them in flight blocks at most 100 µs at a time until
// the word passes it. A device whose path gives no event sleeps
// 100 µs at a time. A channel's error raises no interrupt: Sleep reads the
// notifiers as it wakes, at the latest after its bound.
//
// # Concurrency
//
// rig calls Room and Submit in value order, one submission at a time; the
// device's mu orders them against Stop. Image, Entry, Unload, Alloc, Free
// and the capability's Local may run on any goroutine meanwhile: a lay sets
// a flag the next compute submission reads, and a local memory growth is an
// atomic pointer it reads. Locks nest in one order: an image's,
// then the device's local memory lock, then the path's.
package nvdev
