// Package nvidia is the path to an NVIDIA GPU through NVIDIA's kernel
// driver: the RM's objects by ioctl on /dev/nvidiactl and /dev/nvidia<minor>,
// GPU addresses through /dev/nvidia-uvm, in pure Go. A Client is one such
// path; the RM driver (nvdev) builds its channels on it.
//
// # The RM's interface
//
// The parameter blocks of the escapes, allocations, controls and UVM calls
// are release 580's, as open-gpu-kernel-modules' 580 headers lay them out
// on x86-64: each Go struct names the C struct and header it mirrors,
// spells its padding out, and has its size tested. internal/rmgen writes
// them, the array lengths they use and the status table from those
// headers (go generate; generate.go says how). Open refuses a driver of
// another release. Release 580 is where NVOS46 grew to 64 bytes,
// NV_VASPACE_ALLOCATION_PARAMETERS to 56 and NV_CHANNEL_ALLOC_PARAMS to 368.
//
// Every ioctl goes through one invoker (conn.invoke), which checks the
// ioctl's errno and the RM's status word in the parameters and returns a
// *RMError naming the call and the status. Refusals are Lacking
// (errors.Is(err, ErrLacking): NV_ERR_NO_MEMORY,
// NV_ERR_INSUFFICIENT_RESOURCES, ENOMEM) or Refused (ErrRefused). An answer
// that the GPU is lost or must be reset is a fault: the invoker records it
// for Check, and the path's calls answer it as a *device.Fault. This is the
// only package that makes the RM's system calls.
//
// Allocation parameters travel by pointer inside NVOS64, and some control
// parameters point to lists. Such inner blocks are copied to the Go heap,
// which never moves, for the call: the stack may move under a stored
// address.
//
// # Bring-up
//
// Open(i) numbers the machine's NVIDIA GPUs in PCI bus order (IsGPU,
// ListGPUs), finds GPU i among the driver's cards (NV_ESC_CARD_INFO), and
// makes, under one root client per process: the device (NV01_DEVICE_0),
// the subdevice, the address space of the device's channels
// (FERMI_VASPACE_A), and the usermode page that holds the doorbell. It reads
// the class list, which names the generation (classes.go: one place per
// generation), the GR counts, the heap, the L2 cache and BAR1.
//
// # Addresses: UVM, and the same address for host and GPU
//
// The channels' address space is FERMI_VASPACE_A with ENABLE_PAGE_FAULTING
// and IS_EXTERNALLY_OWNED, registered with UVM (UVM_REGISTER_GPU_VASPACE):
// UVM, not the RM, maps memory in it (UVM_CREATE_EXTERNAL_RANGE, then
// UVM_MAP_EXTERNAL_ALLOCATION), at addresses the path chooses, and maps a
// registered channel's buffers (Register). This is the model tinygrad runs
// on this driver, and the one under which host-visible memory has the same
// address for the host and the GPU. The RM-only alternative, a plain
// FERMI_VASPACE_A mapped with RM_MAP_MEMORY_DMA through NV50_MEMORY_VIRTUAL
// carriers, was left aside: there the RM picks GPU addresses that differ
// from the host's, and the one public Hopper launcher that used it saw
// copies fail intermittently with split addresses, and none with identical
// ones.
//
// The path keeps the GPU's addresses in two pools, shared by the paths of
// the process since they share UVM's address space:
//
//   - host-visible: a reservation of 512 GiB of the host's addresses
//     (PROT_NONE, MAP_NORESERVE, MAP_FIXED_NOREPLACE) from 64 GiB up, below
//     the windows at 2^40 - 8 GiB, around whatever the process has mapped
//     there: Go (from 1.26) places its heap at a random address, which may
//     lie in that range; where no 512 GiB are free, the longest half,
//     quarter and so on that fits, down to 64 GiB.
//     Pinned memory is anonymous shared memory mapped into it, which the RM
//     pins (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR); Mapped memory is vidmem whose
//     BAR1 mapping is placed into it (RM_MAP_MEMORY then mmap with
//     MAP_FIXED). Either has the same address for the GPU. A free puts the
//     reservation back, but for Pinned memory Go code may hold past its
//     free (AllocHeld), where it puts zeroed memory and never gives the
//     addresses back. Registered channels take 64 MiB each here. The
//     process keeps the reservation once made: the last Close puts it
//     back over what was mapped there, and the next first Open takes it
//     again, so that no pointer a stopped device keeps into it can ever
//     point into Go's heap.
//   - Mapped memory that Go code may hold past its free (AllocHeld, the
//     memory a device hands rig): its BAR1 mapping replaces pages of Go's
//     heap of its own, at the same address for the GPU. A free puts
//     ordinary zeroed memory back over them, so that a slice of the host's
//     view that Go code still holds reads zeros and never faults, and Go's
//     collector frees the pages once no slice of them is left. Where Go's
//     heap lies past the windows, it takes host-visible addresses, and a
//     free puts zeroed memory there and never gives the addresses back.
//   - Device memory: vidmem at addresses from 2^40 to 2^47, past the
//     windows, which the host never addresses, so nothing is reserved.
//
// tinygrad also maps each memory into the device's default address space
// (RM_MAP_MEMORY_DMA through an NV01_MEMORY_VIRTUAL) before UVM maps it;
// on our H200 the channels ran the same without it, so the path
// leaves it out.
//
// MapHost maps the caller's pages at their own addresses where they lie
// below the windows and no other mapping holds them, and at addresses of
// the host-visible pool otherwise. Vidmem of 8 MiB or more takes 2 MiB
// pages, and addresses aligned to them.
//
// The kernel driver maps BAR1 write-combined whatever the caller asks
// (escape.c forces the caching type), so Mapped memory is write-combined
// for the host, not uncached: host reads of it are slow,
// and the flush word (Flush) orders the host's writes before the device
// wakes its channels.
//
// # Waking a channel
//
// Doorbell is the usermode page's NOTIFY_CHANNEL_PENDING register, mapped
// from BAR0 (HOPPER_USERMODE_A with no parameters): its BAR1 alias rings as
// fast but has no timer. Ring stores a channel's token there after a fence,
// with a plain store. A locked store to uncached or write-combined memory
// (sync/atomic on the doorbell, on GPPut in Mapped memory) is a bus lock,
// which our H200's virtual machine makes cost about 200 µs; Ring costs
// 0.18 µs. There, a release a channel runs from a pushbuffer in Pinned
// memory, with its ring and USERD in Mapped memory, reached the host 4.7 µs
// after the store of its entry (6.4 µs with a read of the flush word
// between), through either BAR.
//
// # Waking the host
//
// NonStallEvent gives an Event: a file of /dev/nvidiactl of its own,
// registered as an OS event (NV_ESC_ALLOC_OS_EVENT), and an
// NV01_EVENT_OS_EVENT object under the subdevice for an engine's non-stall
// interrupts (NV01_EVENT_NONSTALL_INTR, without event data). A channel's
// NON_STALL_INTERRUPT method makes the file readable; Event.Wait blocks in
// ppoll on it, with a timeout, and the poll itself consumes the
// notification. On the H200 both the graphics engine's notifier and
// the host's (FIFO_EVENT_MTHD) fired for the methods of either channel of
// a graphics group.
//
// # Ownership and lifetime
//
// A *Client owns its files, objects and registrations. The device's stop
// calls Stop, which ends channel registrations still held, frees the
// channel groups and channels the device made through RM and left (the RM
// preempts their work), and unmaps the doorbell and the flush word. Memory
// outlives Stop: the device frees it later. Close gives back the device,
// the address space, UVM's registrations and the files once every Memory
// is freed, at once or at the last Free. The process's client and its
// files go with the last path; the host-visible reservation stays for the
// next.
//
// # Concurrency
//
// Any goroutine may call the methods of a Client or its RM, with these
// exceptions, which the caller orders itself. Stop unmaps the usermode page
// and the flush word and waits for no call that reads or writes them:
// Ring, ReadTimer, and the words Doorbell and Flush give. Each such use
// must end before Stop begins; after Stop, ReadTimer returns an error, and
// Ring and the words must not be used. A device keeps that order under
// locks its own stop takes before it calls Stop. Close, which stops the
// path first, is not called while a Stop runs. A Register that Stop or
// Close overtakes ends the registration it made, and the path's release
// waits for it.
//
// The path's lock guards its bookkeeping (memories alive and Registers in
// flight, registered channels, stop state), the process's lock the
// address pools and handle names; a goroutine holds one at a time, never
// both, and never across a call of the driver. A third lock, taken alone,
// serialises the making and giving back of a GPU's shared objects (Open,
// and the last Close or Free). The kernel driver serialises the RM itself.
//
// The paths of one GPU share its device, subdevice and address space: UVM
// takes one registration of a GPU, and one address space for it, in a
// process. A device opened while its predecessor's memory awaits its free
// thus uses the predecessor's objects, which is safe once that device has
// stopped; the last path gives them back.
//
// # Faults
//
// The RM stops a channel that faults and writes the error into the
// channel's notifier (hObjectError), which may be Pinned memory: on the
// H200 a release to an address nothing maps wrote error 31 (MMU
// fault) into NvNotification[0] within 132 ms, with the engine (1, GR) in
// info16 and status 0xffff; NvNotification[1] holds the work submit token.
// The debugger's SM and MMU reports stay empty for such a fault of the
// channel's host engine. Check reports only what the driver's returns to
// the path said (a lost GPU); the device reads the notifiers itself.
//
// # Another path
//
// The RM driver needs of a path what Client's methods give: RM (Client,
// Alloc, Free, Token, Schedule, Boost, SMErrors, MMUFaults, and where it
// has them, ScheduleChannel and Disown), Key, Index, Device, Subdevice,
// VASpace, GPU, Budget, CacheBytes, Ring, Flush, Alloc, MapsHost, MapHost,
// Free, Reaches, MapPeer, Bus, DMA, Register, Unregister, Check, HangMs,
// ReadTimer, Stop, Close, where it holds memory past its free, AllocHeld,
// where it can tell, SharesSpace, and where it can wake the host,
// NonStallEvent. A path
// through the GPU's own system processor would offer the same methods
// over the same data
// types (Handle, Memory, GPU, RMError), so nvdev can declare that method
// set as its interface and take either.
package nvidia
