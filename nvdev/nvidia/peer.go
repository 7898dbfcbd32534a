package nvidia

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// Peer access: the work of one GPU addressing memory of another GPU of the
// same process.
//
// Every path of a process speaks through one RM client and one UVM address
// space, the system's, in which each GPU a path holds is registered with
// its own GPU address space (gpuState). UVM maps an allocation of one GPU
// for another GPU of that space once peer access between the two is on. UVM
// turns it on by itself for two GPUs that NVLink joins, as the second of
// them registers; a pair that only PCIe joins needs UVM_ENABLE_PEER_ACCESS
// (uvm_va_space.c: register_gpu_peers, uvm_api_enable_peer_access), which
// UVM refuses for an NVLink pair. Either way UVM makes the RM's P2P object
// of the pair itself. Whether two GPUs reach each other, and by which link,
// is the RM's answer to NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2: P2P reads
// and writes both, the test UVM's own mapping makes of a peer's memory
// (nv_gpu_ops.c).
//
// MapPeer maps Device or Mapped memory of GPU B for GPU A at addresses of
// A's own, in Device memory's range: a duplicate of B's memory object under
// A's device (NV_ESC_RM_DUP_OBJECT, in the one client), an external range
// at those addresses (UVM_CREATE_EXTERNAL_RANGE), and the duplicate mapped
// there for A alone (UVM_MAP_EXTERNAL_ALLOCATION with A's UUID). The view
// is then A's memory like any other: Free unmaps it, frees the duplicate
// and gives the addresses back, and B's mapping, at B's addresses, stays.
// Pinned memory of B is host pages, which MapPeer maps for A as MapHost
// maps the caller's.

// Reaches reports whether this GPU's work reads and writes the GPU memory
// of GPU index of this machine, numbered as Open numbers GPUs: true for the
// GPU itself, and for another GPU where the RM reports P2P reads and writes
// between the two, over NVLink or PCIe.
//
// The process keeps the RM's answer for a pair of GPUs from the first time
// a path asked for it; Open asks for each other GPU the process holds then.
// So a path returns from what it learned once either GPU was lost, where it
// or a path opened after it asked before the loss. It returns false for a
// GPU the RM could not tell of: one that is not the driver's, or that no
// process opened yet (the RM initializes a GPU at its first open, unless
// persistence mode keeps it). Any goroutine may call it.
func (p *Client) Reaches(index int) bool {
	if p.gpuState == nil || index < 0 {
		return false
	}
	if index == p.index {
		return true
	}
	l, err := p.linkTo(index)
	return err == nil && l.reaches()
}

// SharesSpace reports whether other is a path of the same GPU in this
// process: the paths share the GPU's address space, so memory either gives
// lies at the same GPU address for the channels of both.
func (p *Client) SharesSpace(other any) bool {
	q, ok := other.(*Client)
	return ok && p.gpuState != nil && q.gpuState == p.gpuState
}

// MapPeer maps for this GPU the memory m, which a path of another GPU of
// this process gave (Alloc, MapHost, or MapPeer), and returns the view: m's
// bytes at GPU addresses of this path's, of m's kind and size, Borrowed, in
// this path's count of memories until Free gives it back. The view of
// Device or Mapped memory lies in Device memory's range; that of Mapped
// memory keeps m's host address, through which the host writes the other
// GPU's BAR: the caller orders those writes before this GPU's work that
// reads them (by a read of the other path's Flush word). The view of Pinned
// memory maps the same host pages for this GPU. Memory of this GPU itself
// maps again at addresses of its own.
//
// Free the view before m: the view holds the memory object itself, but
// m's path may give back the GPU's registration with UVM with its last
// memory. MapPeer returns an error that wraps device.ErrNever where this
// GPU does not reach m's GPU (Reaches) or the RM or UVM refused the
// mapping, naming the call and the RM's status, and one that wraps
// device.ErrNoRoom where the path lacked the addresses or the RM the
// resources. Its refusals of Device or Mapped memory are never a
// *device.Fault, since the cause may be the other GPU's: a lost GPU of this
// path's shows in its channels and Check. A refused map that a Close of
// this path waited for gives back the path's own objects, as a Free does,
// and returns their refusal joined to its own. Any goroutine may call it.
func (p *Client) MapPeer(m *Memory) (*Memory, error) {
	if m == nil {
		return nil, fmt.Errorf("nvidia: map_peer of no memory: %w", device.ErrNever)
	}
	rec, ok := m.Data.(*memRecord)
	if !ok || rec.path == nil {
		return nil, fmt.Errorf("nvidia: map_peer of memory at 0x%x that no nvidia path gave: %w", m.Address, device.ErrNever)
	}
	rec.path.mu.Lock()
	// The host pointer only while the memory is not freed: the owner's
	// Free sets the mark under the same lock, and only then clears the
	// pointer, outside it.
	freed := rec.freed
	var host unsafe.Pointer
	if !freed {
		host = rec.hostPtr
	}
	rec.path.mu.Unlock()
	if freed {
		return nil, fmt.Errorf("nvidia: map_peer of memory at 0x%x that its path freed: %w", m.Address, device.ErrNever)
	}
	if err := p.begin(); err != nil {
		return nil, err
	}
	var v *Memory
	var err error
	switch {
	case m.Kind == device.PinnedMemory && m.Host != 0:
		v, err = p.mapHost(m.Host, m.Size)
	case (m.Kind == device.DeviceMemory || m.Kind == device.MappedMemory) && rec.gpu != nil:
		v, err = p.mapPeerVidmem(m, rec, host)
	default:
		err = fmt.Errorf("nvidia: map_peer of %v memory at 0x%x that is neither host pages nor a GPU's: %w", m.Kind, m.Address, device.ErrNever)
	}
	if eerr := p.end(err == nil); eerr != nil {
		err = errors.Join(err, eerr)
	}
	return v, err
}

// mapPeerVidmem maps the GPU memory m, whose record is rec and host view
// host, for this GPU.
func (p *Client) mapPeerVidmem(m *Memory, rec *memRecord, host unsafe.Pointer) (_ *Memory, err error) {
	owner := rec.gpu
	what := fmt.Sprintf("a view for GPU %d of %d bytes of %v memory of GPU %d at 0x%x", p.index, m.Size, m.Kind, owner.index, m.Address)
	enabled := false
	if owner != p.gpuState {
		l, err := p.linkTo(owner.index)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: the RM's P2P capabilities of the pair: %w", device.ErrNever, what, err)
		}
		if !l.reaches() {
			return nil, fmt.Errorf("%w: %s: GPU %d does not reach GPU %d's memory (the RM's P2P capabilities: %v)", device.ErrNever, what, p.index, owner.index, l)
		}
		if !l.nvlink() {
			if err := p.enablePeer(owner); err != nil {
				return nil, fmt.Errorf("%w: %s: peer access over PCIe: %w", device.ErrNever, what, err)
			}
			enabled = true
		}
	}
	r, u := p.quiet()
	va, pl, err := p.takeVA(false, rec.length, rec.page)
	if err != nil {
		return nil, peerError(what, err)
	}
	stays := false // UVM kept the range: its addresses never go back
	defer func() {
		if err != nil && !stays {
			p.giveVA(pl, va, rec.length)
		}
	}()
	h, err := p.dupMemory(r, m.Handle)
	if err != nil {
		return nil, peerError(what, err)
	}
	defer func() {
		if err != nil {
			if ferr := r.free(p.device, h); ferr != nil {
				err = fmt.Errorf("%w (and the duplicate stays: %v)", err, ferr)
			}
		}
	}()
	view := &memRecord{va: va, length: rec.length, page: rec.page, pool: pl, gpu: owner, hostPtr: host, path: p}
	cr := uvmCreateExternalRangeParams{Base: va, Length: rec.length}
	if err := uvmCall(u, "UVM_CREATE_EXTERNAL_RANGE", uvmCreateExternalRange, &cr, &cr.RMStatus); err != nil {
		return nil, peerError(what, err)
	}
	me := p.mapParams(view, h)
	err = uvmCall(u, "UVM_MAP_EXTERNAL_ALLOCATION", uvmMapExternalAlloc, me, &me.RMStatus)
	if isStatus(err, statusInvalidDevice) && owner != p.gpuState && !enabled {
		// UVM has no peer access for the pair, which the RM reported
		// joined by NVLink: ask for it, as for PCIe, and map again.
		if eerr := p.enablePeer(owner); eerr != nil {
			err = fmt.Errorf("%w; then %w", err, eerr)
		} else {
			me = p.mapParams(view, h)
			err = uvmCall(u, "UVM_MAP_EXTERNAL_ALLOCATION", uvmMapExternalAlloc, me, &me.RMStatus)
		}
	}
	if err != nil {
		f := uvmFreeParams{Base: va, Length: rec.length}
		if ferr := uvmCall(u, "UVM_FREE", uvmFree, &f, &f.RMStatus); ferr != nil {
			stays = true
			err = fmt.Errorf("%w (and the range stays: %v)", err, ferr)
		}
		return nil, peerError(what, err)
	}
	return &Memory{Kind: m.Kind, Borrowed: true, Address: va + (m.Address - rec.va), Host: m.Host, Size: m.Size, Handle: h, Data: view}, nil
}

// quiet is the path's RM and UVM calls with no fault sink: a fatal answer
// to a call of peer access may be the other GPU's, which is no loss of
// this path's GPU.
func (p *Client) quiet() (rm, uvm) {
	r := p.r
	r.sink = nil
	return r, uvm{conn: r.conn, fd: p.u.fd}
}

// dupMemory is a duplicate of the memory object h of the process's client
// under this GPU's device (NV_ESC_RM_DUP_OBJECT): the same memory, which
// stays while the duplicate does.
func (p *Client) dupMemory(r rm, h Handle) (Handle, error) {
	d := rmDupObjectParams{Client: r.client, Parent: p.device, ClientSrc: r.client, ObjectSrc: h}
	err := r.invoke(func() string { return fmt.Sprintf("RM_DUP_OBJECT 0x%x under 0x%x", h, p.device) }, r.ctl,
		escape(escRMDupObject, unsafe.Sizeof(d)), unsafe.Pointer(&d), &d.Status)
	if err != nil {
		return 0, err
	}
	return d.Object, nil
}

// peerError sorts a failed MapPeer's error: a lack of addresses or of the
// RM's resources is device.ErrNoRoom, anything else device.ErrNever.
func peerError(what string, err error) error {
	if errors.Is(err, ErrLacking) || errors.Is(err, errNoAddresses) {
		return &lackError{what: what, room: true, err: err}
	}
	return fmt.Errorf("%w: %s: %w", device.ErrNever, what, err)
}

// isStatus reports whether err is the RM's or UVM's answer status.
func isStatus(err error, status uint32) bool {
	e, ok := AsRMError(err)
	return ok && e.Errno == 0 && e.Status == status
}

// peerPairs holds the pairs of GPUs whose peer access over PCIe this
// process turned on in UVM's space, since UVM refuses to turn it on twice.
// An entry lasts while both GPUs' states do: UVM ends the pair's access as
// either leaves the space, with its state. system.gpuLock is held while it
// changes.
var peerPairs = map[[2]*gpuState]bool{}

// enablePeer turns on peer access between this GPU and owner in UVM's
// space (UVM_ENABLE_PEER_ACCESS), unless this process did already.
func (p *Client) enablePeer(owner *gpuState) error {
	s := p.sys
	s.gpuLock.Lock()
	defer s.gpuLock.Unlock()
	for k := range peerPairs {
		if k[0].refs == 0 || k[1].refs == 0 {
			delete(peerPairs, k)
		}
	}
	if p.gpuState.refs == 0 || owner.refs == 0 {
		return fmt.Errorf("nvidia: GPU %d or GPU %d left UVM's space", p.index, owner.index)
	}
	if peerPairs[[2]*gpuState{p.gpuState, owner}] || peerPairs[[2]*gpuState{owner, p.gpuState}] {
		return nil
	}
	_, u := p.quiet()
	ep := uvmEnablePeerAccessParams{GPUUUIDA: p.uuid, GPUUUIDB: owner.uuid}
	if err := uvmCall(u, "UVM_ENABLE_PEER_ACCESS", uvmEnablePeerAccess, &ep, &ep.RMStatus); err != nil {
		return err
	}
	peerPairs[[2]*gpuState{p.gpuState, owner}] = true
	return nil
}

// p2pLink is the RM's answer for a pair of GPUs.
type p2pLink struct {
	caps   uint32                // P2PCapsV2Params.P2PCaps
	status [p2pCapsIndexes]uint8 // P2PCapsV2Params.P2PCapsStatus
}

// reaches reports whether each GPU of the pair reads and writes the
// other's memory.
func (l p2pLink) reaches() bool { return l.caps&(P2PReads|P2PWrites) == P2PReads|P2PWrites }

// nvlink reports whether NVLink joins the pair.
func (l p2pLink) nvlink() bool { return l.caps&P2PNVLink != 0 }

func (l p2pLink) String() string {
	var on []string
	for _, b := range []struct {
		bit  uint32
		name string
	}{{P2PReads, "reads"}, {P2PWrites, "writes"}, {P2PAtomics, "atomics"}, {P2PNVLink, "NVLink"},
		{P2PPCI, "PCIe"}, {P2PPCIBAR1, "PCIe BAR1"}, {P2PProp, "PCIe mailbox"}, {P2PC2C, "C2C"}} {
		if l.caps&b.bit != 0 {
			on = append(on, b.name)
		}
	}
	if len(on) == 0 {
		on = []string{"none"}
	}
	return fmt.Sprintf("0x%x (%s; NVLink status %d, PCIe status %d)", l.caps, strings.Join(on, ", "),
		l.status[p2pCapsIndexNVLink], l.status[p2pCapsIndexPCI])
}

// p2pLinks keeps the RM's answer for each pair of GPU IDs, the lower first,
// once the RM gave it. A GPU ID names a GPU for the kernel driver's
// lifetime.
var p2pLinks struct {
	sync.Mutex
	m map[[2]uint32]p2pLink
}

// linkTo is the RM's answer for this GPU and GPU index.
func (p *Client) linkTo(index int) (p2pLink, error) {
	a, ok := p.sys.card(p.addr)
	if !ok {
		return p2pLink{}, fmt.Errorf("nvidia: GPU %d (%s) has no card of the driver's", p.index, p.addr)
	}
	b, err := p.sys.gpuID(index)
	if err != nil {
		return p2pLink{}, err
	}
	return p.sys.link(a.GPUID, b)
}

// link is the RM's answer for the GPUs of IDs a and b: the one kept, or the
// RM's to NV0000_CTRL_CMD_SYSTEM_GET_P2P_CAPS_V2, which is then kept.
func (s *system) link(a, b uint32) (p2pLink, error) {
	key := [2]uint32{min(a, b), max(a, b)}
	p2pLinks.Lock()
	l, ok := p2pLinks.m[key]
	p2pLinks.Unlock()
	if ok {
		return l, nil
	}
	q := new(P2PCapsV2Params)
	q.GPUCount = 2
	q.GPUIDs[0], q.GPUIDs[1] = key[0], key[1]
	r := s.rm
	r.sink = nil // the answer for a pair is no fault of a path's GPU
	if err := controlOf(r, s.client, CtrlSystemGetP2PCapsV2, q); err != nil {
		return p2pLink{}, fmt.Errorf("nvidia: the P2P capabilities of GPU IDs 0x%x and 0x%x: %w", key[0], key[1], err)
	}
	l = p2pLink{caps: q.P2PCaps, status: q.P2PCapsStatus}
	p2pLinks.Lock()
	if p2pLinks.m == nil {
		p2pLinks.m = map[[2]uint32]p2pLink{}
	}
	p2pLinks.m[key] = l
	p2pLinks.Unlock()
	return l, nil
}

// gpuID is the driver's GPU ID of GPU index: of the GPU as a path of the
// process opened it, or as Open would find it.
func (s *system) gpuID(index int) (uint32, error) {
	s.gpuLock.Lock()
	g := s.gpus[index]
	s.gpuLock.Unlock()
	if g != nil {
		if c, ok := s.card(g.addr); ok {
			return c.GPUID, nil
		}
		return 0, fmt.Errorf("nvidia: GPU %d (%s) has no card of the driver's", index, g.addr)
	}
	gpus, err := ListGPUs(sysfsPCI)
	if err != nil {
		// Without sysfs, Open numbers the driver's own GPUs in bus order.
		cards := slices.Clone(s.cards)
		slices.SortFunc(cards, func(a, b cardInfo) int { return cardAddr(a).compare(cardAddr(b)) })
		if index >= len(cards) {
			return 0, fmt.Errorf("nvidia: no GPU %d: the driver holds %d", index, len(cards))
		}
		return cards[index].GPUID, nil
	}
	if index >= len(gpus) {
		return 0, fmt.Errorf("nvidia: no GPU %d: the machine has %d NVIDIA GPUs", index, len(gpus))
	}
	c, ok := s.card(gpus[index])
	if !ok {
		return 0, fmt.Errorf("nvidia: GPU %d (%s) is not held by NVIDIA's kernel driver", index, gpus[index])
	}
	return c.GPUID, nil
}

// learnPeers asks the RM for the link between this GPU and each other GPU
// the process holds, so that Reaches returns from what the path learned as
// it opened. A failure is left for Reaches to ask again.
func (p *Client) learnPeers() {
	s := p.sys
	s.gpuLock.Lock()
	var others []int
	for i := range s.gpus {
		if i != p.index {
			others = append(others, i)
		}
	}
	s.gpuLock.Unlock()
	for _, i := range others {
		_, _ = p.linkTo(i)
	}
}
