package device

import "time"

// Driver is one open device, as its opener made it.
//
// rig owns the driver from the opener's Make until it has freed every region
// and unloaded every image after Stop. The package documentation says which
// goroutine calls what, and which calls are counted.
type Driver interface {
	// Facts is the device's facts. rig reads them once, after Make, and
	// keeps the pointer: a driver must not change them afterwards.
	Facts() *Facts

	// Alloc is n bytes of the device's memory m, or ErrNoMemory if the
	// device has none to give. n is positive and a multiple of 4 (rig's
	// word). Host memory it makes obeys Location.Host's rule. Counted.
	Alloc(m Memory, n int) (Region, error)
	// Free gives back r: a region Alloc made, a mapping MapPeer or MapHost
	// made, or the driver's own word (Facts.OwnWord). rig frees r once no
	// work of the device that uses it can run, and may free it after Stop.
	// The host memory of r stays valid for Go code that holds a slice of it
	// (Location.Host).
	Free(r Region) error
	// Locate is where r lies.
	Locate(r Region) Location
	// Peer is true iff MapPeer(other, r) maps Device memory of other. It
	// returns from what both devices learned when they opened, also once
	// either is lost.
	Peer(other Driver) bool
	// MapPeer maps for this device the memory of r, any memory of other.
	// It returns ErrNoRoom or ErrNever when it cannot. Counted.
	MapPeer(other Driver, r Region) (Region, error)
	// MapHost maps for this device the n bytes of host memory at p, which
	// starts a page. The region maps the whole pages that hold them. rig
	// calls it only where Facts.MapsHost. It returns ErrNoRoom or ErrNever
	// when it cannot. Counted.
	MapHost(p uintptr, n int) (Region, error)
	// DMA is how the PCI function at the bus address fn reaches all of r's
	// bytes, or an error that names the cause. Counted.
	DMA(r Region, fn string) (DMA, error)

	// Image takes the binary b: loaded, or to be placed by rig (Code), or
	// an error naming why the device refuses it. Counted.
	Image(b []byte) (Code, error)
	// Entry is what the driver needs to launch img's function name, or
	// ErrAbsent, or a *NoMemory having made nothing. A second call for the
	// same function makes nothing new. Counted.
	Entry(img Image, name string) (*Entry, error)
	// Prepare may start making what Entry makes and return without
	// waiting. It reports no failure of what it started. Counted.
	Prepare(img Image, name string) error
	// Unload releases what Image, Prepare and Entry made for img, once no
	// work that runs img can run. The region of a Place is rig's. Counted.
	Unload(img Image) error

	// Grow makes what the queues need to hold the parts of a submission
	// whose Room returned RoomGrow; rig then calls Room for it again. rig
	// calls it on that submission's goroutine, which may not be the one
	// that called Room (the package documentation says when), outside the
	// submit lock: Room and Submit of other submissions may run at the
	// same time. It returns nil (Grown), a *Short, or a *Fault. Counted.
	Grow() error

	// Signaled is the value in the driver's own word, read with acquire
	// order. rig calls it only where Facts.Word is nil. It must not block.
	Signaled() uint64
	// Sleep blocks until the word differs from seen, and returns at the
	// latest after still. It returns at once if the word already differs,
	// and may return earlier. It returns a *Fault once the device faulted.
	// Only the supervisor calls it. Counted.
	//
	// A driver must not raise the word to the value of work that faulted,
	// nor past it, before Sleep has returned that fault or Stop was called:
	// rig returns a wait on a point the word passed as done unless it knew
	// of the loss first. (On CUDA a failed context runs no later write.)
	// The fault's Reached, where the driver sets it, tells rig which
	// values completed before the fault; otherwise rig takes seen.
	Sleep(seen uint64, still time.Duration) error

	// Stop stops the device without waiting for its work: it fences the
	// device off so that no later work runs. fault is the cause of a loss,
	// or "" where rig did not lose the device. rig calls it once, at Close
	// or at an open of the same name, with no counted call in flight, or
	// at Open where Facts declares no queues.
	Stop(fault string) error

	// Capability is the record compiled code uses, of the type the key in
	// Facts.Capability names.
	Capability() any

	// Room returns whether the queues hold s's parts now. It is called in
	// value order, before Submit, with no other Room or Submit of the
	// device between them. It must not allocate.
	Room(s *Submission) RoomAnswer
	// Submit hands s to the queues. It must not allocate.
	Submit(s *Submission) SubmitAnswer
	// Commit asks the device to write every value up to v into the word
	// once its work completes. It is called in value order with Submit,
	// inside the same submit lock, by a submitter, a waiter or the
	// supervisor (the package documentation says when). It answers
	// Committed or Failed: after a Pending answer the values stay
	// uncommitted, and the wait on one of them, or the submission of
	// another device whose work would wait for one on its device, that
	// asked for the Commit fails with an error that says so.
	Commit(v uint64) SubmitAnswer
	// Settle appends to into the profile stamps converted to the host's
	// clock (Now), in value order, and returns the longer slice. A failure
	// is a *Fault, which loses the device.
	Settle(into []Stamp) ([]Stamp, error)
}

// Opener names a device and makes it.
type Opener struct {
	// Name names the hardware, such as "CUDA" or "CUDA:1". rig keeps one
	// device per name at a time.
	Name string
	// Make opens the device whose timeline word is the 8 bytes at word, in
	// rig's array of words. The device's values start after the value the
	// word holds when Make returns.
	Make func(word *uint64) (Driver, error)
}

// Memory is a kind of device memory.
type Memory uint8

const (
	// DeviceMemory is the device's own, which the host may not address.
	DeviceMemory Memory = iota
	// PinnedMemory is page-locked host memory the device addresses.
	PinnedMemory
	// MappedMemory is the device's own, also mapped for the host.
	MappedMemory
)

// String names the kind as rig's errors print it.
func (m Memory) String() string {
	switch m {
	case DeviceMemory:
		return "Device"
	case PinnedMemory:
		return "Pinned"
	case MappedMemory:
		return "Mapped"
	}
	return "Memory(?)"
}

// Region is a driver's memory: an allocation, or a mapping. rig treats it
// as opaque and hands it back to the driver that made it.
type Region any

// Image is a driver's loaded code, opaque to rig.
type Image any

// Location is where a region lies.
type Location struct {
	// Address is the address of its first byte as the device's work sees
	// it. rig patches it into launch parameters.
	Address uint64
	// Handle is the address by which the driver names the allocation.
	Handle uint64
	// Host is the host address of its first byte, or 0 where the host does
	// not address it.
	//
	// rig hands Go code a slice of these bytes (Buffer.Bytes), taken
	// while the region is live, which may outlive the region, so a driver
	// must never free the memory under it: either the memory is Go memory
	// (whole pages of Go's heap) that the driver holds until Free and then
	// leaves to the garbage collector, where a mapping of the device's own
	// memory over those pages is replaced at Free by ordinary host memory;
	// or, where it cannot be, Free replaces it by ordinary host memory at
	// the same addresses, which stays mapped and is never another
	// region's. The driver documents what the memory reads after Free.
	Host uintptr
}

// Code is the answer of Image.
type Code struct {
	// Loaded is the image, where the driver loaded the binary itself.
	Loaded Image
	// Place, where Loaded is nil, is the bytes of Device memory rig
	// allocates for the image before it calls Lay with that region.
	Place int
	// Lay relocates the binary for the region and returns the image.
	Lay func(r Region) (Image, error)
}

// Entry is what a driver needs to launch one function of an image.
type Entry struct {
	// Name is the function's name.
	Name string
	// Code is what compiled code passes to launch the function, such as a
	// CUfunction or the address of its first instruction.
	Code uint64
	// Params is the number of parameter bytes the function reads.
	Params int
	// Threads is the most threads a group of the function has.
	Threads int
	// Shared is the most dynamic shared memory a group of it takes.
	Shared int
	// Layout is where each of the function's parameters lies in its
	// parameter bytes, in the order of its signature, where the image
	// states it; nil where it does not. rig sets parameters by index with
	// it and checks their sizes.
	Layout []Param
	// Data is the driver's own launch state for the function.
	Data any
}

// Param is where one parameter of a function lies in its parameter bytes.
type Param struct {
	// Offset is the parameter's first byte, and Size its length in bytes.
	Offset, Size int
}

// DMAKind says how another PCI function reaches memory.
type DMAKind uint8

const (
	// DMABuf is a dma-buf file descriptor and an offset into it.
	DMABuf DMAKind = iota + 1
	// Bus is a bus address the function reaches directly.
	Bus
)

// DMA is how another PCI function reaches a region.
type DMA struct {
	// Kind says which of the fields below hold the answer.
	Kind DMAKind
	// FD is the dma-buf's file descriptor (DMABuf), which the caller owns.
	FD int
	// Offset is the region's distance from the dma-buf's start (DMABuf).
	Offset uint64
	// Address is the bus address of the region's first byte (Bus).
	Address uint64
}

// Kicker is a driver whose Submit only stores the value's work to memory,
// and which makes the device see it in a step of its own: a read that
// orders the host's writes before the device's fetch, and a doorbell,
// each a round trip or a write across the bus. rig calls Kick after the
// device's submit lock is released, and combines concurrent submitters'
// kicks: one Kick makes the device see every value submitted before it, so
// that a burst of submitters costs one read and one doorbell. Drivers
// without it make the device see each value within Submit.
type Kicker interface {
	// Kick makes the device see every value Submit returned for, up to v
	// and past it: the device then runs them with no other call. rig
	// calls it after each Submit that did not fail, or after a later
	// value's, from one goroutine at a time, with v never behind the v of
	// the Kick before, and with no lock of rig's held. It may run at the
	// same time as Stop and after it, where it must do nothing harmful:
	// it then makes nothing run. It must not block nor allocate.
	Kick(v uint64)
}

// FaultReader is a driver that reads more of a fault after rig reported
// the loss it caused: lines that take the driver long to read (the RM
// answers its first read of the SMs' error states after a fault in about
// 20 ms), which would otherwise delay the loss and the recovery of the
// caller's service by as much. The *Fault a driver returns carries what it
// had at once.
type FaultReader interface {
	// ReadFault returns further lines on f, a fault the driver returned.
	// rig calls it at most once a loss, on the device's supervisor
	// goroutine, after every waiter was woken with the loss and before
	// Stop. It must not retain f.
	ReadFault(f *Fault) []string
}
