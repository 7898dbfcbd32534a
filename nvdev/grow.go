package nvdev

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/nvidia"
)

// Growth. Room returns RoomGrow for a submission whose words exceed a
// channel's segment ring, whose launches exceed the launch ring, or that is
// timed before the device has a stamp ring, and records what it needs.
// Grow makes each such ring anew, of the least power of two of bytes, at
// least a page, that holds twice what the parts take (in Mapped memory
// where the BAR has room, as make placed them, and Pinned otherwise),
// and keeps it aside: it changes nothing Room and Submit read. The next
// Room puts it in place, before it walks the submission: the ring's
// positions start over at the new ring's first byte, and the records of the
// values in flight count nothing of it as used, since none of them wrote
// there. The ring it replaces goes back at the device's next growth or
// allocation once the word has reached the value after the last one
// submitted before the switch, and a segment ring whose channel may not
// have read the words after its last release there once the word has
// reached a value submitted on that channel after the switch; the rings
// the device opened with stay until Stop.
//
// A channel's own ring (its GPFIFO entries) cannot grow in place, since the
// RM fixes its entries when it allocates the channel: a regrowth opens two
// channels anew in a new channel group (channels.go). While such a set
// waits for its switch, Room puts no ring in place, so that the rings
// grown for the submission that needs the set go to its channels.

// segChunk is the most words one ring entry of the driver's segments
// names: 4 MiB.
const segChunk = 1 << 20

// need is what Room found the submission needs grown.
type need struct {
	seg     [2]uint64 // words of a channel's segment; 0 where it fits
	entries [2]uint64 // entries of a channel's ring; 0 where they fit
	launch  uint64    // bytes of launches; 0 where they fit
	stamps  bool
}

// add makes n hold what o needs as well.
func (n *need) add(o need) {
	for q := range n.seg {
		n.seg[q] = max(n.seg[q], o.seg[q])
		n.entries[q] = max(n.entries[q], o.entries[q])
	}
	n.launch = max(n.launch, o.launch)
	n.stamps = n.stamps || o.stamps
}

// grown is what Grow made and the next Room puts in place.
type grown struct {
	seg    [2]*nvidia.Memory
	launch *nvidia.Memory
	set    *chanSet
}

// retired is a ring a growth replaced: it goes back once the word reaches
// until and the copy channel's mark reaches mark.
type retired struct {
	m     *nvidia.Memory
	until uint64
	mark  uint64
}

// ringBytes is the least power of two of bytes, at least a page, that holds
// twice n bytes.
func ringBytes(n uint64) int {
	n *= 2
	if n <= 4096 {
		return 4096
	}
	return 1 << bits.Len64(n-1)
}

// shortOf is a failed allocation of n bytes as a growth returns it.
func shortOf(err error, n int) error {
	if lacks(err) {
		return &device.Short{N: int64(n)}
	}
	return err
}

// lacks reports whether err is a path's refusal of memory for want of it
// (or of room in the BAR), after which the device takes Pinned memory in
// place of Mapped memory; any other refusal is a fault, which it returns.
func lacks(err error) bool {
	return errors.Is(err, device.ErrNoMemory) || errors.Is(err, nvidia.ErrLacking)
}

// Grow makes the rings the submission whose Room returned RoomGrow needs.
// A ring the path lacks memory for leaves the others to be made: the need
// may hold another submission's, whose rings the path has memory for. It
// then returns a Short of the bytes it lacked. A fault marks the shared
// group faulted (lose).
func (d *gpu) Grow() error { return d.lose(d.grow()) }

// grow is Grow.
func (d *gpu) grow() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped.Load() {
		return errors.New("nvdev: grow after stop")
	}
	d.reap()
	d.reapSets()
	if err := d.awaitGrown(); err != nil {
		return err
	}
	// The need goes, whatever the growth's outcome: a submission that
	// still needs it asks again at its next Room, and one that gave up
	// leaves no growth the path cannot make to later ones.
	n := d.need
	d.need = need{}
	var lacked int64 // bytes the path had no memory for
	short := func(err error) bool {
		var sh *device.Short
		if !errors.As(err, &sh) {
			return false
		}
		lacked += sh.N
		return true
	}
	if n.entries != [2]uint64{} {
		if err := d.regrow(n.entries); err != nil {
			if !short(err) {
				return err
			}
		} else if err := d.awaitGrown(); err != nil {
			// The channels just opened, so that the next Room switches
			// to them rather than ask for growth again.
			return err
		}
	}
	for q, words := range n.seg {
		if words == 0 {
			continue
		}
		size := ringBytes(4 * words)
		if g := d.grown.seg[q]; g != nil {
			if g.Size >= size {
				continue
			}
			_ = d.p.Free(g)
			d.grown.seg[q] = nil
		}
		var m *nvidia.Memory
		var err error
		if d.mapped() && !d.cfg.PinnedSegments {
			if m, err = d.p.Alloc(device.MappedMemory, size); err != nil && !lacks(err) {
				return err
			}
		}
		if m == nil {
			if m, err = d.p.Alloc(device.PinnedMemory, size); err != nil {
				if !short(shortOf(err, size)) {
					return err
				}
				continue
			}
		}
		d.grown.seg[q] = m
	}
	if n.launch != 0 {
		size := ringBytes(n.launch)
		if g := d.grown.launch; g != nil && g.Size < size {
			_ = d.p.Free(g)
			d.grown.launch = nil
		}
		if d.grown.launch == nil {
			var m *nvidia.Memory
			var err error
			if d.mapped() && d.cfg.pin&pinLaunch == 0 {
				if m, err = d.p.Alloc(device.MappedMemory, size); err != nil && !lacks(err) {
					return err
				}
			}
			if m == nil {
				m, err = d.p.Alloc(device.PinnedMemory, size)
				if err != nil && !short(shortOf(err, size)) {
					return err
				}
			}
			d.grown.launch = m
		}
	}
	if n.stamps {
		if err := d.growStamps(); err != nil && !short(err) {
			return err
		}
	}
	if lacked > 0 {
		return &device.Short{N: lacked}
	}
	return nil
}

// awaitGrown waits for the channels a regrowth opened to run their first
// words, where the work before them is done: they run them from then on.
// Where they fault or never run them, the device is lost: Sleep raises
// the fault from then on. Channels that did not run them within the
// bound, with no error in their notifiers and no fault the path reports,
// are found so on the host's side alone: the RM stopped none of the
// group's channels (in the shared group the new channels may wait behind
// another timeline's work), and the fault is the device's alone. The
// caller holds mu.
func (d *gpu) awaitGrown() error {
	if g := d.grown.set; g != nil && !g.ready() && device.AtLeast(atomic.LoadUint64(d.word), d.last) {
		if err := awaitSetup(g.ch); err != nil {
			if perr := d.p.Check(); perr != nil {
				return d.keep(asFault(perr))
			}
			return d.keep(&device.Fault{Why: fmt.Sprintf("nvdev: growing the channels: %v", err), Alone: chsFault(g.ch) == ""})
		}
	}
	return nil
}

// install puts the rings Grow made in place; w is the word Room read. It
// waits while a regrowth's channels wait for their switch, which calls it.
// The caller holds mu.
func (d *gpu) install(w uint64) {
	if d.grown.set != nil {
		return
	}
	for q, ch := range d.ch {
		g := d.grown.seg[q]
		if g == nil {
			continue
		}
		d.grown.seg[q] = nil
		switch {
		case ch.segMem == nil:
		case ch.tail != ch.segPos:
			// A value of the other channel alone may come next,
			// whose release shows nothing of this one: Submit retires
			// the ring with the next value on this channel.
			ch.oldSeg = ch.segMem
		default:
			d.retire(ch.segMem)
		}
		ch.segMem = g
		ch.seg = hostWords(g, 0, g.Size/4)
		ch.segGPU = g.Address
		ch.segPos = roundUp(ch.segPos, uint64(len(ch.seg)))
		ch.tail = ch.segPos
		for u := w; ; u++ {
			d.recs[u%records].seg[q] = ch.segPos
			if u == d.last {
				break
			}
		}
	}
	if g := d.grown.launch; g != nil {
		d.grown.launch = nil
		if d.launchMem != d.launch0 {
			d.retire(d.launchMem)
		}
		d.launchMem = g
		d.launchHost = hostBytes(g, 0, g.Size)
		d.launchPos = roundUp(d.launchPos, uint64(len(d.launchHost)))
		for u := w; ; u++ {
			d.recs[u%records].launch = d.launchPos
			if u == d.last {
				break
			}
		}
	}
}

// retire keeps m until the word reaches the value after the last one
// submitted and the copy channel's mark the last image upload: the last
// value's words after its release (channel.tail), and an upload's words,
// which follow the last value's in the copy channel's segment ring, may be
// read after the word reached that value; the next value's release, on
// the new ring, shows that the channel went past them. The caller holds
// mu.
func (d *gpu) retire(m *nvidia.Memory) {
	d.retMu.Lock()
	d.retired = append(d.retired, retired{m: m, until: d.last + 1, mark: d.upMark})
	d.retMu.Unlock()
}

// reap gives back the replaced rings the word has passed, and the staging
// memory of uploads the copy channel completed.
func (d *gpu) reap() {
	d.retMu.Lock()
	defer d.retMu.Unlock()
	w := atomic.LoadUint64(d.word)
	mark := atomic.LoadUint64(d.live.Load().ch[qCopy].mark)
	keep := d.retired[:0]
	for _, r := range d.retired {
		if device.AtLeast(w, r.until) && device.AtLeast(mark, r.mark) {
			_ = d.free(r.m)
			continue
		}
		keep = append(keep, r)
	}
	clear(d.retired[len(keep):])
	d.retired = keep
	ups := d.staging[:0]
	for _, s := range d.staging {
		if device.AtLeast(mark, s.until) {
			_ = d.free(s.m)
			continue
		}
		ups = append(ups, s)
	}
	clear(d.staging[len(ups):])
	d.staging = ups
}

// ringsHeld is what Stop gives back of the growths but the channel sets'
// memory: the replaced rings, the grown launch ring in use, those Grow made
// that no Room put in place, the staging of uploads, and the stamp ring.
func (d *gpu) ringsHeld() []*nvidia.Memory {
	var ms []*nvidia.Memory
	d.retMu.Lock()
	for _, r := range d.retired {
		ms = append(ms, r.m)
	}
	for _, s := range d.staging {
		ms = append(ms, s.m)
	}
	d.retired, d.staging = nil, nil
	d.retMu.Unlock()
	for _, g := range d.grown.seg {
		if g != nil {
			ms = append(ms, g)
		}
	}
	if d.launchMem != d.launch0 {
		ms = append(ms, d.launchMem)
	}
	if g := d.grown.launch; g != nil {
		ms = append(ms, g)
	}
	if m := d.prof.mem.Load(); m != nil {
		ms = append(ms, m)
	}
	return ms
}
