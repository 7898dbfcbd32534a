package nvidia

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Release is the release of the RM interface this package speaks: the
// layouts of its parameter blocks are release 580's.
const Release = 580

// system is what the paths of one process share: the files of NVIDIA's
// kernel driver, the RM client every path's objects descend from, UVM's
// address space, and the addresses the paths hand out in it. The first Open
// makes it and the last Close of a path ends it.
type system struct {
	rm             // the client on /dev/nvidiactl
	uvm     uvm    // /dev/nvidia-uvm
	uvmMM   int    // the second UVM file, for UVM_MM_INITIALIZE; -1 if none
	release int    // the RM's release, such as 580
	version string // the driver's version, such as "580.159.04"
	cards   []cardInfo
	sink    faultSink

	gpuLock sync.Mutex        // guards gpus; held while a GPU's state is made or given back
	gpus    map[int]*gpuState // the GPUs paths hold, by index

	mu       sync.Mutex // guards what follows
	refs     int        // open paths
	hostRes  uintptr    // the host-visible reservation's start, 0 if none yet
	hostLen  uint64     // its length
	host     *pool      // host-visible addresses, within the reservation
	dev      *pool      // Device memory's addresses
	identity spanSet    // host ranges the GPU maps at their own addresses
	kept     spanSet    // host-visible ranges of freed held memory, zeroed, never given back
	stuck    [][]byte   // Go memory at addresses of ranges UVM kept after a failed map
	handle   Handle     // the last handle the package named itself

	objects objects // the RM objects the paths made, alive
}

// systemLock guards theSystem.
var (
	systemLock sync.Mutex
	theSystem  *system
)

// acquireSystem is the process's system, made by the first call.
func acquireSystem() (*system, error) {
	systemLock.Lock()
	defer systemLock.Unlock()
	if theSystem == nil {
		s, err := openSystem(sysIoctl)
		if err != nil {
			return nil, err
		}
		theSystem = s
	}
	theSystem.mu.Lock()
	theSystem.refs++
	theSystem.mu.Unlock()
	return theSystem, nil
}

// releaseSystem drops a path's hold of s, and ends s with the last.
func releaseSystem(s *system) error {
	systemLock.Lock()
	defer systemLock.Unlock()
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if !last {
		return nil
	}
	if theSystem == s {
		theSystem = nil
	}
	return s.close()
}

// openDevice opens one of the driver's device files.
func openDevice(name string) (int, error) {
	fd, err := openFile(name)
	if err != nil {
		return -1, fmt.Errorf("nvidia: open %s: %w", name, err)
	}
	return fd, nil
}

// hostPage is the host's page size (os.Getpagesize; a test's otherwise).
var hostPage = os.Getpagesize

// openSystem opens /dev/nvidiactl and /dev/nvidia-uvm, makes the root
// client, reads the driver's release and its GPUs. It refuses a host
// whose pages are not of 4 KiB: the path maps host memory and sizes its
// ranges in those pages.
func openSystem(ioctl ioctlFunc) (_ *system, err error) {
	if n := hostPage(); n != pageSize {
		return nil, fmt.Errorf("nvidia: the host's pages are of %d bytes; the path maps host memory in pages of %d", n, pageSize)
	}
	s := &system{uvmMM: -1, gpus: map[int]*gpuState{}}
	s.rm = rm{conn: conn{ioctl: ioctl, sink: &s.sink}, ctl: -1}
	s.uvm = uvm{conn: s.rm.conn, fd: -1}
	defer func() {
		if err != nil {
			_ = s.close()
		}
	}()
	if s.ctl, err = openDevice("/dev/nvidiactl"); err != nil {
		return nil, err
	}
	// The root client: a client names itself, in hObjectNew.
	if s.client, err = s.rm.alloc(0, ClassRootClient, nil); err != nil {
		return nil, err
	}
	var v BuildVersionV2Params
	if err = controlOf(s.rm, s.client, CtrlSystemGetBuildVersionV2, &v); err != nil {
		return nil, err
	}
	s.version = cString(v.DriverVersion[:])
	if s.release, err = releaseOf(s.version); err != nil {
		return nil, err
	}
	if s.release != Release {
		return nil, fmt.Errorf("nvidia: the kernel driver is %s; this path speaks release %d's interface", s.version, Release)
	}
	if s.uvm.fd, err = openDevice("/dev/nvidia-uvm"); err != nil {
		return nil, err
	}
	var ui uvmInitializeParams
	if err = uvmCall(s.uvm, "UVM_INITIALIZE", uvmInitialize, &ui, &ui.RMStatus); err != nil {
		return nil, err
	}
	// UVM_MM_INITIALIZE ties the UVM file to this process's address space
	// through a second file; UVM works without it (CUDA meets its refusal
	// too), so its failure is no failure of the open.
	if mm, err := openDevice("/dev/nvidia-uvm"); err == nil {
		mi := uvmMMInitializeParams{UVMFD: int32(s.uvm.fd)}
		if uvmCall(uvm{conn: s.rm.conn, fd: mm}, "UVM_MM_INITIALIZE", uvmMMInitialize, &mi, &mi.RMStatus) == nil {
			s.uvmMM = mm
		} else {
			_ = closeFD(mm)
		}
	}
	cards := make([]cardInfo, maxDevices)
	err = s.invoke(func() string { return "NV_ESC_CARD_INFO" }, s.ctl,
		escape(escCardInfo, uintptr(len(cards))*unsafe.Sizeof(cards[0])), unsafe.Pointer(&cards[0]), nil)
	if err != nil {
		return nil, err
	}
	for _, c := range cards {
		if c.Valid != 0 {
			s.cards = append(s.cards, c)
		}
	}
	s.dev = newPool(deviceBase, deviceSize)
	return s, nil
}

// close ends s: it frees the client, and with it every object under it,
// closes the files and leaves the host-visible reservation to the next
// system (hostLeft).
func (s *system) close() error {
	var errs []error
	if s.client != 0 {
		errs = append(errs, s.rm.free(0, s.client))
		s.client = 0
	}
	for _, fd := range []*int{&s.uvmMM, &s.uvm.fd, &s.ctl} {
		if *fd >= 0 {
			errs = append(errs, closeFD(*fd))
			*fd = -1
		}
	}
	if s.hostRes != 0 {
		errs = append(errs, s.leaveHost())
		s.hostRes, s.hostLen, s.host, s.kept = 0, 0, nil, spanSet{}
	}
	return errors.Join(errs...)
}

// hostLeft is the host-visible reservation of the system that ended last,
// which the next system takes instead of reserving its own. The process
// never gives the reservation back: a stopped device that stays reachable
// keeps pointers into it (its flush word, its channels' rings), and were
// its addresses given back, Go's heap could later lie there and the
// collector take those for bad pointers. kept are the ranges of freed held
// memory in it, whose zeroed pages slices may still read; no pool hands
// them out again.
var hostLeft struct {
	sync.Mutex
	res  uintptr
	size uint64
	kept []span
}

// leaveHost puts the reservation back over the host-visible addresses,
// except the kept ranges, dropping any mapping left there, and leaves them
// to the next system. Where the reservation cannot be put back, it unmaps
// what it could not reserve, and leaves nothing.
func (s *system) leaveHost() error {
	kept := slices.Clone(s.kept.spans)
	slices.SortFunc(kept, func(a, b span) int { return cmp.Compare(a.addr, b.addr) })
	var gaps []span
	a, end := uint64(s.hostRes), uint64(s.hostRes)+s.hostLen
	for _, k := range kept {
		if k.addr > a {
			gaps = append(gaps, span{a, k.addr - a})
		}
		a = max(a, k.end())
	}
	if end > a {
		gaps = append(gaps, span{a, end - a})
	}
	var errs []error
	for _, g := range gaps {
		if err := unreserveTo(uintptr(g.addr), g.size); err != nil {
			errs = append(errs, fmt.Errorf("nvidia: put the reservation back over [0x%x, 0x%x): %w", g.addr, g.end(), err))
			if err := munmap(uintptr(g.addr), g.size); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	hostLeft.Lock()
	hostLeft.res, hostLeft.size, hostLeft.kept = s.hostRes, s.hostLen, kept
	hostLeft.Unlock()
	return nil
}

// hostPool is the pool of host-visible addresses: on first use, the
// reservation the last system left, or a new one. The caller holds s.mu.
func (s *system) hostPool() (*pool, error) {
	if s.host == nil {
		hostLeft.Lock()
		a, n, kept := hostLeft.res, hostLeft.size, hostLeft.kept
		hostLeft.res, hostLeft.size, hostLeft.kept = 0, 0, nil
		hostLeft.Unlock()
		if a == 0 {
			var err error
			if a, n, err = reserveHost(); err != nil {
				return nil, err
			}
		}
		s.hostRes, s.hostLen = a, n
		s.host = newPool(uint64(a), n)
		for _, k := range kept {
			s.host.take(k)
			s.kept.add(k)
		}
	}
	return s.host, nil
}

// reserved reports whether s overlaps the host-visible reservation. The
// caller holds s.mu.
func (s *system) reserved(r span) bool {
	return s.hostRes != 0 && r.overlaps(span{uint64(s.hostRes), s.hostLen})
}

// nameHandle is a new handle of the package's own naming, for objects whose
// escapes take a name rather than make one (RM_ALLOC_MEMORY). The RM names
// its own from 0xcaf00000 up and from 0xc1d00000 (clients); these lie far
// below.
func (s *system) nameHandle() Handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle++
	return 0x00100000 + s.handle
}

// card is the driver's card of the GPU at addr.
func (s *system) card(addr PCIAddress) (cardInfo, bool) {
	for _, c := range s.cards {
		a := PCIAddress{Domain: c.PCI.Domain, Bus: c.PCI.Bus, Slot: c.PCI.Slot, Function: c.PCI.Function}
		if a == addr {
			return c, true
		}
	}
	return cardInfo{}, false
}

// cString is the NUL-terminated string at the start of b.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// releaseOf is the release of a driver version such as "580.159.04".
func releaseOf(version string) (int, error) {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, fmt.Errorf("nvidia: cannot read the release of driver version %q", version)
	}
	return n, nil
}
