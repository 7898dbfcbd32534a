package rig

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// fake is a driver whose returns a test scripts: it completes each value
// when the test says so (or at once), and records what rig handed it.
type fake struct {
	facts device.Facts
	own   atomic.Uint64 // the word, where facts.Word is nil

	mu        sync.Mutex
	cond      *sync.Cond
	submitted []device.Submission // copies, without parts' params
	rooms     []device.RoomAnswer // answers to give, first first; then RoomOK
	growth    []error             // answers of Grow, first first; then nil
	grows     int
	commits   []uint64
	pending   bool // Submit answers Pending
	fail      string
	// failStores makes a failed Submit write its value into the word
	// before it returns, as a driver that closes a refused value (so that
	// later values' waits end) does on a GPU that runs the write at once.
	failStores bool
	// commitFail makes Commit answer Failed with it; with failStores it
	// writes the value into the word first, as the contract allows.
	commitFail string
	held       bool // values complete only through complete()
	stopped    bool
	stopFault  string
	sleepErr   error
	allocErr   error
	allocs     int
	frees      int
	entryErr   []error
	onEntry    func(name string) // called by Entry, without f.mu; set before use
	unloads    int
	unloadErr  []error // answers of Unload, first first; then nil
	peer       bool
	onSubmit   func() // called by Submit, f.mu held
	onGrow     func() // called by Grow, without f.mu; set before use
	// onCommit, where set before use, is called by a failing Commit
	// after its store, without f.mu.
	onCommit func()
	// readFault answers ReadFault, without f.mu held; nil answers nothing.
	readFault func(*device.Fault) []string
	// onSleep, where set, sees each Sleep's seen before it sleeps.
	onSleep atomic.Pointer[func(seen uint64)]
	reads   atomic.Int32
	// prepares and dmas count the calls of Prepare and DMA; onDMA, where
	// set before use, runs inside each DMA.
	prepares atomic.Int32
	dmas     atomic.Int32
	onDMA    func()
	// onSignaled, where set, runs inside each Signaled, without f.mu.
	onSignaled atomic.Pointer[func()]
	// hostMem makes the host address the Pinned and Mapped memory Alloc
	// gives (Locate's Host); set before use.
	hostMem bool
	// onFree and onLocate, where set, run inside each Free and Locate,
	// without f.mu.
	onFree, onLocate atomic.Pointer[func()]
}

// holdSleep holds the supervisor in the driver's next Sleep: it returns
// once the supervisor is held there, and release lets it go on.
func (f *fake) holdSleep() (release func()) {
	gate, asleep := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	hold := func(uint64) {
		if !once.Swap(true) {
			close(asleep)
			<-gate
		}
	}
	f.onSleep.Store(&hold)
	<-asleep
	return func() { close(gate) }
}

// hostRegion is a region of Pinned or Mapped memory the host addresses.
type hostRegion []byte

func newFake() *fake {
	f := &fake{}
	f.cond = sync.NewCond(&f.mu)
	f.facts = device.Facts{
		Arch: "fake", Queues: []string{"COMPUTE:0", "COPY:0"}, CopyEngine: 1,
		Waits: device.WaitStores | device.WaitHosts, Alignment: 64,
	}
	return f
}

func (f *fake) opener(name string) device.Opener {
	return device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
		if f.facts.Word == nil && !f.ownWord() {
			f.facts.Word = w
		}
		return f, nil
	}}
}

// ownWord marks that the fake keeps its own word starting at v.
func (f *fake) keepOwnWord(v uint64) { f.own.Store(v); f.facts.OwnWord = "own word" }
func (f *fake) ownWord() bool        { return f.facts.OwnWord != nil }

func (f *fake) store(v uint64) {
	if f.facts.Word != nil {
		atomic.StoreUint64(f.facts.Word, v)
	} else {
		f.own.Store(v)
	}
	f.cond.Broadcast()
}

func (f *fake) load() uint64 {
	if f.facts.Word != nil {
		return atomic.LoadUint64(f.facts.Word)
	}
	return f.own.Load()
}

// complete writes v into the word.
func (f *fake) complete(v uint64) {
	f.mu.Lock()
	f.store(v)
	f.mu.Unlock()
}

func (f *fake) Facts() *device.Facts { return &f.facts }
func (f *fake) Alloc(m device.Memory, n int) (device.Region, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.allocErr != nil {
		return nil, f.allocErr
	}
	f.allocs++
	if f.hostMem && m != device.DeviceMemory {
		return hostRegion(make([]byte, n)), nil
	}
	return make([]byte, n), nil
}
func (f *fake) Free(r device.Region) error {
	if h := f.onFree.Load(); h != nil {
		(*h)()
	}
	f.mu.Lock()
	f.frees++
	f.mu.Unlock()
	return nil
}
func (f *fake) Locate(r device.Region) device.Location {
	if h := f.onLocate.Load(); h != nil {
		(*h)()
	}
	if b, ok := r.(hostRegion); ok {
		return device.Location{Address: uint64(len(b)), Handle: 1, Host: uintptr(unsafe.Pointer(&b[0]))}
	}
	if b, ok := r.([]byte); ok && len(b) > 0 {
		return device.Location{Address: uint64(len(b)), Handle: 1}
	}
	return device.Location{}
}
func (f *fake) Peer(device.Driver) bool { return false }
func (f *fake) MapPeer(_ device.Driver, r device.Region) (device.Region, error) {
	if !f.peer {
		return nil, device.ErrNever
	}
	return r, nil
}
func (f *fake) MapHost(uintptr, int) (device.Region, error) { return nil, device.ErrNever }
func (f *fake) DMA(device.Region, string) (device.DMA, error) {
	f.dmas.Add(1)
	if f.onDMA != nil {
		f.onDMA()
		return device.DMA{Kind: device.Bus}, nil
	}
	return device.DMA{}, device.ErrNever
}
func (f *fake) Image(b []byte) (device.Code, error) {
	if string(b) == "place" {
		return device.Code{Place: 100, Lay: func(r device.Region) (device.Image, error) { return "laid", nil }}, nil
	}
	if string(b) == "huge place" {
		return device.Code{Place: math.MaxInt - 1, Lay: func(r device.Region) (device.Image, error) { return "laid", nil }}, nil
	}
	return device.Code{Loaded: string(b)}, nil
}
func (f *fake) Entry(img device.Image, name string) (*device.Entry, error) {
	if h := f.onEntry; h != nil {
		h(name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.entryErr) > 0 {
		err := f.entryErr[0]
		f.entryErr = f.entryErr[1:]
		return nil, err
	}
	if name == "absent" {
		return nil, device.ErrAbsent
	}
	return &device.Entry{Name: name, Params: 64, Threads: 1024}, nil
}
func (f *fake) Prepare(device.Image, string) error { f.prepares.Add(1); return nil }
func (f *fake) Unload(device.Image) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unloads++
	if len(f.unloadErr) > 0 {
		err := f.unloadErr[0]
		f.unloadErr = f.unloadErr[1:]
		return err
	}
	return nil
}
func (f *fake) Grow() error {
	if f.onGrow != nil {
		f.onGrow()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grows++
	if len(f.growth) > 0 {
		err := f.growth[0]
		f.growth = f.growth[1:]
		return err
	}
	return nil
}
func (f *fake) Signaled() uint64 {
	if h := f.onSignaled.Load(); h != nil {
		(*h)()
	}
	return f.own.Load()
}
func (f *fake) Sleep(seen uint64, still time.Duration) error {
	if h := f.onSleep.Load(); h != nil {
		(*h)(seen)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sleepErr != nil {
		return f.sleepErr
	}
	if f.load() != seen {
		return nil
	}
	// The end before the timer, so that the timer's broadcast comes at
	// the end or after it: an end read after the timer's start could
	// still lie ahead at the broadcast, and the wait then never end.
	end := time.Now().Add(still)
	t := time.AfterFunc(still, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	defer t.Stop()
	for f.load() == seen && time.Now().Before(end) && f.sleepErr == nil {
		f.cond.Wait()
	}
	return f.sleepErr
}
func (f *fake) Stop(fault string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped, f.stopFault = true, fault
	if n := len(f.submitted); n > 0 {
		f.store(f.submitted[n-1].Value)
	}
	return nil
}
func (f *fake) Capability() any { return "fake caps" }
func (f *fake) ReadFault(fault *device.Fault) []string {
	f.reads.Add(1)
	if f.readFault == nil {
		return nil
	}
	return f.readFault(fault)
}
func (f *fake) Room(s *device.Submission) device.RoomAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rooms) > 0 {
		a := f.rooms[0]
		f.rooms = f.rooms[1:]
		return a
	}
	return device.RoomAnswer{}
}
func (f *fake) Submit(s *device.Submission) device.SubmitAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *s
	c.Waits = append([]device.Wait(nil), s.Waits...)
	c.Parts = nil
	f.submitted = append(f.submitted, c)
	if f.onSubmit != nil {
		f.onSubmit()
	}
	if f.fail != "" {
		if f.failStores {
			f.store(s.Value)
		}
		return device.SubmitAnswer{Kind: device.Failed, Reason: f.fail}
	}
	if !f.held {
		f.store(s.Value)
	}
	if f.pending {
		return device.SubmitAnswer{Kind: device.Pending}
	}
	return device.SubmitAnswer{}
}
func (f *fake) Commit(v uint64) device.SubmitAnswer {
	f.mu.Lock()
	f.commits = append(f.commits, v)
	fail := f.commitFail
	if fail != "" && f.failStores {
		f.store(v)
	}
	f.mu.Unlock()
	if fail != "" {
		if f.onCommit != nil {
			f.onCommit()
		}
		return device.SubmitAnswer{Kind: device.Failed, Reason: fail}
	}
	return device.SubmitAnswer{}
}
func (f *fake) Settle(into []device.Stamp) ([]device.Stamp, error) { return into, nil }

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.submitted)
}
