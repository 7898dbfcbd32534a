package hostdev

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/hostram"
	"golang.org/x/sys/cpu"
)

// Config configures a host device. The zero Config is the default device.
type Config struct {
	// Name is the opener's name; "host" where empty.
	Name string
	// Budget is the bytes the device's allocations and queue growths may
	// take; 1 GiB where 0.
	Budget int64
	// Hang bounds progress: rig loses the device once its word has not
	// moved for Hang while work is pending. 0 is the default, none, and
	// negative is none too. Facts.HangMs is the bound in whole
	// milliseconds (device.HangMsOf), 1 for a positive bound below a
	// millisecond; Make refuses a bound whose milliseconds do not fit an
	// int (past about 24.8 days, where an int has 32 bits), naming it.
	Hang time.Duration
	// Ring is the values in flight before Room returns RoomLater; 4096
	// where 0, and at most MaxRing.
	Ring int
	// Grow starts the device's launch ring (parts, waits and parameter
	// bytes of the values in flight) small, so that Room returns RoomGrow
	// for big submissions and Grow extends the ring against the budget.
	Grow bool
	// MapsHost is Facts.MapsHost: MapHost maps host memory, rather than
	// answering ErrNever.
	MapsHost bool
	// FaultDomain is Facts.FaultDomain.
	FaultDomain string
	// OwnWord makes the device keep a timeline word of its own, which rig
	// reads through Signaled, rather than the word Make is given.
	OwnWord bool
}

// Caps is the host driver's capability record, which rig.Capability
// returns for Key.
type Caps struct {
	// Name is the opener's name.
	Name string
	// Workers is the goroutines that run a launch's groups at once.
	Workers int
}

// MaxRing is the most values in flight a host device's ring holds
// (Config.Ring): Make preallocates about 650 bytes for each, outside the
// budget, and refuses a larger ring with an error.
const MaxRing = 1 << 20

// Key names the host driver's capability record.
var Key = device.NewKey[*Caps]("hostdev")

// Default is the opener of the default host device, named "host".
func Default() device.Opener { return Open(Config{}) }

// Timeline is the opener of the host device named Name(k): timeline k of
// the host, as nvdev.Timeline and cudadev.Timeline open timeline k of a
// GPU, so that code that opens several timelines runs on the host too.
// Each is a device of its own, with its own word, queues and budget;
// Timeline(0) is Default(). It panics if k < 0.
func Timeline(k int) device.Opener {
	if k < 0 {
		panic(fmt.Sprintf("hostdev: Timeline(%d): a timeline's number is not negative", k))
	}
	return Open(Config{Name: Name(k)})
}

// Name is the name of the opener of the host's timeline k: "host" for
// the first, "host/k" for k > 0.
func Name(k int) string {
	if k > 0 {
		return fmt.Sprintf("host/%d", k)
	}
	return "host"
}

// Open is the opener of a host device configured by c.
func Open(c Config) device.Opener {
	if c.Name == "" {
		c.Name = "host"
	}
	return device.Opener{
		Name: c.Name,
		Make: func(word *uint64) (device.Driver, error) { return open(c, word) },
	}
}

// roundPage rounds n up to whole pages.
func roundPage(n int) int { return (n + pageSize - 1) &^ (pageSize - 1) }

// dev is a host device: the device.Driver that Open's Make returns.
type dev struct {
	cfg   Config
	facts device.Facts
	caps  Caps
	word  *uint64 // the timeline word the device's work writes
	own   *region // the device's own word, where cfg.OwnWord

	used atomic.Int64 // bytes of the budget taken

	regMu   sync.Mutex                // serialises changes to regions
	regions atomic.Pointer[[]*region] // live regions by address; copied on write

	// The launch ring (queue.go), which the submitting goroutine fills.
	q queues

	// The workers (exec.go).
	copyIn   chan *slot       // the sequencer hands COPY:0 a value's parts
	copyDone chan struct{}    // ... and COPY:0 answers once it ran them
	copyEnd  int64            // when COPY:0 ended them, sent by copyDone
	pokes    [2]chan struct{} // a part of the other queue completed
	launch   [2]job           // each queue's launch, shared with helpers
	jobs     chan *job        // launches that want helpers

	// rowsLook is the tests' hook, called where a copy of rows looks at
	// whether the device's work ended (rows.go).
	rowsLook atomic.Pointer[func()]
	// submitLook is the tests' hook, called where Submit has handed a
	// value to the sequencer and has yet to answer (queue.go).
	submitLook atomic.Pointer[func()]

	// mu guards running, final and wake, and orders the word's stores
	// against Stop. The sequencer takes it for each value, so it lies on
	// lines of its own.
	_       cpu.CacheLinePad
	mu      sync.Mutex
	running bool          // a value's parts run now
	final   bool          // the last value is in the word; no store may follow
	wake    chan struct{} // closed at the word's next store, a fault or Stop
	sleeper bool          // the sleeper that holds sleepMu waits for token
	token   chan struct{} // ... which the next wake sends it
	_       cpu.CacheLinePad

	sleepMu    sync.Mutex  // held by the sleeper that uses token and sleepTimer
	sleepTimer *time.Timer // Sleep's, reused

	fault    atomic.Pointer[device.Fault]
	stopped  atomic.Bool
	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	ended    chan struct{} // closed at the first fault or Stop: work ends
	endOnce  sync.Once
	done     sync.WaitGroup // the device's goroutines
}

func open(c Config, word *uint64) (*dev, error) {
	if word == nil {
		return nil, errors.New("hostdev: make was given no timeline word")
	}
	if uintptr(unsafe.Pointer(word))%8 != 0 {
		return nil, fmt.Errorf("hostdev: timeline word at %p is not 8-byte aligned", word)
	}
	if c.Budget < 0 || c.Ring < 0 {
		return nil, fmt.Errorf("hostdev: negative budget or ring in %+v", c)
	}
	hangMs, err := device.HangMsOf(c.Hang)
	if err != nil {
		return nil, fmt.Errorf("hostdev: %w", err)
	}
	if c.Ring > MaxRing {
		return nil, fmt.Errorf("hostdev: ring of %d values, over the %d a host device holds", c.Ring, MaxRing)
	}
	if c.Budget == 0 {
		c.Budget = 1 << 30
	}
	if c.Ring == 0 {
		c.Ring = 4096
	}
	d := &dev{cfg: c, word: word, stop: make(chan struct{}), ended: make(chan struct{}), token: make(chan struct{}, 1)}
	d.regions.Store(new([]*region))
	workers := runtime.GOMAXPROCS(0)
	d.caps = Caps{Name: c.Name, Workers: workers}
	d.facts = device.Facts{
		Arch:        "host",
		Budget:      c.Budget,
		Queues:      []string{"COMPUTE:0", "COPY:0"},
		CopyEngine:  device.Copy,
		Completion:  device.Store,
		Waits:       device.WaitStores | device.WaitHosts,
		OnHost:      true,
		HangMs:      hangMs,
		MapsHost:    c.MapsHost,
		Alignment:   pageSize,
		Capability:  Key,
		Word:        word,
		FaultDomain: c.FaultDomain,
	}
	start := atomic.LoadUint64(word)
	if c.OwnWord {
		// Go memory, which Free leaves to the garbage collector: rig may
		// read the word through Signaled while it frees the region, and
		// d.word keeps the memory reachable for as long as the device is.
		mem := goPages(pageSize)
		r := &region{dev: d, kind: device.PinnedMemory, own: ownWord, size: 8, pages: mem}
		r.addr = uintptr(unsafe.Pointer(&mem[0]))
		d.own = r
		d.word = (*uint64)(unsafe.Pointer(&mem[0]))
		atomic.StoreUint64(d.word, start)
		d.facts.Word = nil
		d.facts.OwnWord = r
	}
	d.q.init(d, start)
	d.startWorkers(workers)
	return d, nil
}

// Facts is the device's facts: Arch "host", two queues, the word stored by
// the workers, Device memory that the host does not address (as on a
// discrete GPU, so that rig's paths for one are exercised), page alignment.
func (d *dev) Facts() *device.Facts { return &d.facts }

// Capability is the device's *Caps.
func (d *dev) Capability() any { return &d.caps }

// regionOwner says who made a region and what Free does with it.
type regionOwner uint8

const (
	allocated regionOwner = iota // Alloc's mapping; Free unmaps it
	hostPages                    // MapHost's caller pages; Free forgets them
	peerView                     // MapPeer's view of another device's region
	ownWord                      // the device's own word, Go memory; Free forgets it
)

// region is a device's memory: what Alloc, MapHost and MapPeer answer.
//
// A region holds its address, not a Go pointer to its first byte: MapHost's
// pages may hold other Go allocations, or none, around the caller's bytes,
// and the garbage collector must see no pointer to them. bytes makes a
// slice of the bytes work reaches, for as long as the work runs. Pinned and
// Mapped memory that Alloc made is Go memory, which pages holds for as long
// as the region is reachable (also from the launch ring's parts of values
// in flight, after Free); the collector frees it once neither the region
// nor a slice of it is left.
type region struct {
	dev     *dev
	kind    device.Memory
	own     regionOwner
	addr    uintptr // address of the first byte
	size    int     // bytes work may address
	mapping []byte  // the whole mapping to unmap (allocated Device memory)
	pages   []byte  // the Go memory of allocated Pinned and Mapped memory, and of the own word
	charge  int64   // bytes of the budget it takes
	of      *region // the region a peer view shows
	freed   atomic.Bool
	copies  atomic.Int32 // copies of rows that hold the memory (rows.go)
}

// bytes is the n bytes at offset off of r, which lie within r.
func (r *region) bytes(off, n uint64) []byte {
	return sliceAt[byte](r.addr+uintptr(off), int(n))
}

// sliceAt is the n values of type T at the address p. It makes the slice
// from its parts, as unsafe.Slice would, but without the check that
// -race's checkptr makes of unsafe.Slice: a MapHost region's pages may
// straddle Go allocations, as host pages that a GPU maps do.
func sliceAt[T any](p uintptr, n int) []T {
	if n == 0 {
		return nil
	}
	var s []T
	h := (*struct {
		data     unsafe.Pointer
		len, cap int
	})(unsafe.Pointer(&s))
	h.data = *(*unsafe.Pointer)(unsafe.Pointer(&p))
	h.len, h.cap = n, n
	return s
}

// holds reports whether the n bytes at addr lie within r.
func (r *region) holds(addr uint64, n int) bool {
	return addr >= uint64(r.addr) && uint64(n) <= uint64(r.size) && addr-uint64(r.addr) <= uint64(r.size)-uint64(n)
}

// live reports whether r, and the region it views, are not freed.
func (r *region) live() bool {
	return !r.freed.Load() && (r.of == nil || !r.of.freed.Load())
}

// find is the live region of d that holds the n bytes at addr, or nil. It
// looks at the region that starts last at or below addr first, which is
// the only one where no regions overlap, and then at those below it, as
// views and MapHost's mappings may overlap other regions.
func (d *dev) find(addr uint64, n int) *region {
	rs := *d.regions.Load()
	i := sort.Search(len(rs), func(i int) bool { return uint64(rs[i].addr) > addr })
	for i--; i >= 0; i-- {
		if r := rs[i]; r.holds(addr, n) && r.live() {
			return r
		}
	}
	return nil
}

// enlist adds r to the regions that work may address.
func (d *dev) enlist(r *region) {
	d.regMu.Lock()
	defer d.regMu.Unlock()
	old := *d.regions.Load()
	rs := make([]*region, 0, len(old)+1)
	i := sort.Search(len(old), func(i int) bool { return old[i].addr > r.addr })
	rs = append(rs, old[:i]...)
	rs = append(rs, r)
	rs = append(rs, old[i:]...)
	d.regions.Store(&rs)
}

// delist removes r from the regions that work may address.
func (d *dev) delist(r *region) {
	d.regMu.Lock()
	defer d.regMu.Unlock()
	old := *d.regions.Load()
	rs := make([]*region, 0, len(old))
	for _, o := range old {
		if o != r {
			rs = append(rs, o)
		}
	}
	d.regions.Store(&rs)
}

// charge takes n bytes of the budget, or reports that it lacks them.
func (d *dev) charge(n int64) bool {
	for {
		u := d.used.Load()
		if u+n > d.cfg.Budget || u+n < u {
			return false
		}
		if d.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// Alloc is n bytes of host memory, whatever the kind m: Device, Pinned and
// Mapped memory are all the host's, page-aligned, and take their whole
// pages from the budget. Device memory, which the host does not address,
// is an anonymous mapping that Free unmaps, so that work that uses it after
// Free faults the device. Pinned and Mapped memory, which the host
// addresses, is Go memory (a page-aligned array of Go's heap): Free gives
// back its budget and takes it from the regions work may address, and the
// garbage collector frees it once neither the region nor a slice of it is
// left, so that a slice that Location.Host gave never reads freed memory
// or another region's. The pages are not locked, so Pinned memory may be
// swapped like any other.
func (d *dev) Alloc(m device.Memory, n int) (device.Region, error) {
	if m > device.MappedMemory {
		return nil, fmt.Errorf("hostdev: alloc of %d bytes of unknown memory %v", n, m)
	}
	if n <= 0 || n%4 != 0 {
		return nil, fmt.Errorf("hostdev: alloc of %d bytes of %v memory: not a positive multiple of 4", n, m)
	}
	if int64(n) > d.cfg.Budget || n > math.MaxInt-pageSize {
		return nil, device.ErrNoMemory
	}
	if m != device.DeviceMemory && hostram.Bytes() > 0 && uint64(n) > hostram.Bytes() {
		// Go memory: Go's heap would end the process rather than fail.
		return nil, fmt.Errorf("hostdev: alloc of %d bytes of %v memory, more than the host's %d: %w", n, m, hostram.Bytes(), device.ErrNoMemory)
	}
	size := roundPage(n)
	if !d.charge(int64(size)) {
		return nil, device.ErrNoMemory
	}
	r := &region{dev: d, kind: m, own: allocated, size: n, charge: int64(size)}
	if m == device.DeviceMemory {
		mem, err := mapPages(size)
		if err != nil {
			d.used.Add(-int64(size))
			if errors.Is(err, device.ErrNoMemory) {
				return nil, device.ErrNoMemory
			}
			return nil, fmt.Errorf("hostdev: mapping %d bytes: %w", size, err)
		}
		r.mapping = mem
		r.addr = uintptr(unsafe.Pointer(&mem[0]))
	} else {
		r.pages = goPages(size)
		if r.pages == nil {
			d.used.Add(-int64(size))
			return nil, device.ErrNoMemory
		}
		r.addr = uintptr(unsafe.Pointer(&r.pages[0]))
	}
	d.enlist(r)
	return r, nil
}

// goPages is size bytes of Go memory that start a page, size a multiple of
// the page: an array of its own, so that no other Go value shares its
// pages. Go gives an array of whole pages a page of its own, which goPages
// checks; it makes a page more and aligns where it did not. It is nil
// where size is past the largest array Go makes.
func goPages(size int) []byte {
	b := makeBytes(size)
	if b == nil || uintptr(unsafe.Pointer(&b[0]))%uintptr(pageSize) == 0 {
		return b
	}
	b = makeBytes(size + pageSize)
	if b == nil {
		return nil
	}
	skip := (pageSize - int(uintptr(unsafe.Pointer(&b[0]))%uintptr(pageSize))) % pageSize
	return b[skip : skip+size : skip+size]
}

// makeBytes is make([]byte, n), n positive, or nil where n is past the
// largest array Go makes (or overflowed), for which make panics.
func makeBytes(n int) []byte { return makeOf[byte](n) }

// makeOf is make([]T, n), n positive, or nil where n is past the largest
// array of T Go makes, for which make panics.
func makeOf[T any](n int) (s []T) {
	if n <= 0 {
		return nil
	}
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	return make([]T, n)
}

// region is r as a region of d, or an error naming why it is not one.
func (d *dev) region(r device.Region, call string) (*region, error) {
	x, ok := r.(*region)
	if !ok || x == nil {
		return nil, fmt.Errorf("hostdev: %s of a region of type %T, not the host driver's", call, r)
	}
	if x.dev != d {
		return nil, fmt.Errorf("hostdev: %s of a region of another device (%s)", call, x.dev.cfg.Name)
	}
	return x, nil
}

// Free gives back r. It unmaps an allocation of Device memory, leaves the
// Go memory of Pinned and Mapped memory and of the device's own word to
// the garbage collector (which frees it once no slice of it is left, and
// the own word once the device is unreachable, so that Signaled reads it
// after its Free), and forgets a mapping of MapHost or MapPeer, whose
// memory stays. It works after Stop too. Before it unmaps Device memory,
// it waits for a copy of rows amid a piece of it, which then faults the
// device at its next look rather than writing memory mapped again.
func (d *dev) Free(r device.Region) error {
	x, err := d.region(r, "free")
	if err != nil {
		return err
	}
	if x.freed.Swap(true) {
		return fmt.Errorf("hostdev: free of a region freed before, at %#x", x.addr)
	}
	if x.own != ownWord {
		d.delist(x)
	}
	if x.mapping != nil {
		// A copy of rows may be amid a piece of this memory: the host
		// could map the pages again for another region at once.
		x.waitCopies()
		if err := unmapPages(x.mapping); err != nil {
			return fmt.Errorf("hostdev: unmapping %d bytes at %#x: %w", len(x.mapping), x.addr, err)
		}
	}
	d.used.Add(-x.charge)
	return nil
}

// Locate is where r lies: its host address is its device address, also
// its handle; Location.Host is that address for Pinned and Mapped memory
// and MapHost's mappings, and 0 for Device memory.
func (d *dev) Locate(r device.Region) device.Location {
	x, ok := r.(*region)
	if !ok || x == nil {
		return device.Location{}
	}
	l := device.Location{Address: uint64(x.addr), Handle: uint64(x.addr)}
	if x.kind != device.DeviceMemory {
		l.Host = x.addr
	}
	return l
}

// Peer is true for any other host device: they share the process's memory.
func (d *dev) Peer(other device.Driver) bool {
	_, ok := other.(*dev)
	return ok
}

// MapPeer maps for d the memory of r, a region of the host device other:
// a view of the same bytes, which ends at its Free or the Free of the
// memory's own region, r or, where r is itself a view, the region r views
// (a Free of r then ends r alone, as an unmapping does on a GPU).
func (d *dev) MapPeer(other device.Driver, r device.Region) (device.Region, error) {
	o, ok := other.(*dev)
	if !ok {
		return nil, device.ErrNever
	}
	x, err := o.region(r, "map_peer")
	if err != nil {
		return nil, err
	}
	if !x.live() {
		return nil, fmt.Errorf("hostdev: map_peer of a freed region at %#x", x.addr)
	}
	base := x
	if x.of != nil {
		base = x.of
	}
	v := &region{dev: d, kind: x.kind, own: peerView, addr: x.addr, size: x.size, of: base}
	d.enlist(v)
	return v, nil
}

// MapHost maps for d the caller's host pages that hold the n bytes at p,
// which starts a page; the region is those pages, with no copy. It returns
// ErrNever where the device was configured without MapsHost.
func (d *dev) MapHost(p uintptr, n int) (device.Region, error) {
	if !d.cfg.MapsHost {
		return nil, device.ErrNever
	}
	if n <= 0 {
		return nil, fmt.Errorf("hostdev: map_host of %d bytes", n)
	}
	if p == 0 || p%uintptr(pageSize) != 0 {
		return nil, fmt.Errorf("hostdev: map_host at %#x, which starts no page", p)
	}
	// The whole pages must be counted by an int and end below the top of
	// the address space.
	if n > math.MaxInt-pageSize || p+uintptr(roundPage(n)) < p {
		return nil, fmt.Errorf("hostdev: map_host of %d bytes at %#x: past the end of the address space", n, p)
	}
	r := &region{dev: d, kind: device.PinnedMemory, own: hostPages, addr: p, size: roundPage(n)}
	d.enlist(r)
	return r, nil
}

// DMA returns an error: the host driver has no PCI function whose memory
// another function could reach.
func (d *dev) DMA(r device.Region, fn string) (device.DMA, error) {
	return device.DMA{}, fmt.Errorf("hostdev: %s cannot reach host device %s's memory by DMA: the host driver has no PCI function", fn, d.cfg.Name)
}

// image is a loaded manifest.
type image struct {
	dev     *dev
	man     *manifest
	placed  *region // the Device memory rig laid the image into, or nil
	mu      sync.Mutex
	entries map[string]*device.Entry
	gone    atomic.Bool // unloaded; Room refuses launches of its kernels
}

// kentry is an Entry's Data: the kernel a launch runs.
type kentry struct {
	def *kernelDef
	img *image
}

// Image parses the manifest b. Every kernel it names must be registered.
// A manifest that states "place N" returns Code{Place: N, Lay: ...}, whose
// Lay copies the manifest into the region rig placed (as much as fits)
// and returns the image; any other returns Code{Loaded: image}.
func (d *dev) Image(b []byte) (device.Code, error) {
	m, err := parseManifest(b)
	if err != nil {
		return device.Code{}, fmt.Errorf("hostdev: image refused: %w", err)
	}
	for _, k := range m.kernels {
		if lookup(k.name) == nil {
			return device.Code{}, fmt.Errorf("hostdev: image refused: it names kernel %q, which no Register call made", k.name)
		}
	}
	img := &image{dev: d, man: m, entries: make(map[string]*device.Entry)}
	if m.place == 0 {
		return device.Code{Loaded: img}, nil
	}
	text := append([]byte(nil), b...)
	return device.Code{Place: m.place, Lay: func(r device.Region) (device.Image, error) {
		x, err := d.region(r, "lay")
		if err != nil {
			return nil, err
		}
		if !x.live() || x.size < m.place {
			return nil, fmt.Errorf("hostdev: lay into a region of %d bytes, freed or short of the %d the image takes", x.size, m.place)
		}
		copy(x.bytes(0, uint64(m.place)), text)
		img.placed = x
		return img, nil
	}}, nil
}

// image is img as an image of d, or an error naming why it is not one.
func (d *dev) image(img device.Image, call string) (*image, error) {
	x, ok := img.(*image)
	if !ok || x == nil {
		return nil, fmt.Errorf("hostdev: %s of an image of type %T, not the host driver's", call, img)
	}
	if x.dev != d {
		return nil, fmt.Errorf("hostdev: %s of an image of another device (%s)", call, x.dev.cfg.Name)
	}
	return x, nil
}

// Entry is the entry of kernel name of img, made at the first call and
// kept: its Params is the manifest's count, or the one RegisterParams
// stated, or 0 where neither states one (a launch then passes all its
// parameter bytes); its Code is the kernel's index in the manifest, plus
// 1, or its address in the placed region.
func (d *dev) Entry(img device.Image, name string) (*device.Entry, error) {
	x, err := d.image(img, "entry")
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gone.Load() {
		return nil, fmt.Errorf("hostdev: entry %q of an unloaded image", name)
	}
	if e := x.entries[name]; e != nil {
		return e, nil
	}
	for i, k := range x.man.kernels {
		if k.name != name {
			continue
		}
		def := lookup(name)
		params := k.params
		if params < 0 {
			params = max(def.params, 0)
		}
		code := uint64(i + 1)
		if x.placed != nil {
			code = uint64(x.placed.addr) + uint64(i)*64
		}
		e := &device.Entry{Name: name, Code: code, Params: params, Threads: MaxThreads, Shared: MaxShared, Data: &kentry{def: def, img: x}}
		if def != nil && def.layout != nil && def.params == params {
			e.Layout = def.layout
		}
		x.entries[name] = e
		return e, nil
	}
	return nil, device.ErrAbsent
}

// Prepare does nothing: Entry makes nothing slow.
func (d *dev) Prepare(img device.Image, name string) error {
	_, err := d.image(img, "prepare")
	return err
}

// Unload forgets img's entries. The region a Place laid it into is rig's.
func (d *dev) Unload(img device.Image) error {
	x, err := d.image(img, "unload")
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gone.Load() {
		return errors.New("hostdev: unload of an image unloaded before")
	}
	x.gone.Store(true)
	x.entries = nil
	return nil
}

// Signaled is the value in the device's own word.
func (d *dev) Signaled() uint64 { return atomic.LoadUint64(d.word) }
