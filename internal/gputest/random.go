package gputest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// randomSizes are the lengths of the buffers RandomCopies allocates: a few
// bytes, pages and odd lengths near them, and lengths just over 256 KiB
// and 1 MiB, the bytes from which nvdev runs a copy or fill as its own
// kernel, up to a few MiB.
var randomSizes = []int{
	1, 3, 8, 61, 1000, 4096, 4099, 65537,
	256<<10 + 1, 256<<10 + 8, 256<<10 + 333,
	1<<20 + 3, 1<<20 + 4096, 2<<20 + 7, 3<<20 + 1,
}

// randomEdges are the lengths near which RandomCopies draws some of its
// lengths, one byte under them to a few over.
var randomEdges = []int{4, 1024, 4096, 64 << 10, 256 << 10, 1 << 20}

// The kinds of part RandomCopies makes.
const (
	rcCopy = iota
	rcCopyRows
	rcFillBytes
	rcFillRows
	rcFillUint32
	rcFillFloat32
)

// rcBuf is a buffer of RandomCopies and the host's copy of what it
// should hold.
type rcBuf struct {
	b    *rig.Buffer
	ref  []byte
	what string
	// since holds the writes of the buffer since its last check, the last
	// rcHistory of them, and dropped counts the older ones.
	since   []string
	dropped int
	dirty   bool
}

// rcHistory is the writes of a buffer a failure names.
const rcHistory = 24

// rcPart is a copy or fill part of a submission of RandomCopies, its
// pitches as given to the part (0 is the rows' bytes).
type rcPart struct {
	kind     int
	src, dst *rcBuf
	rows     rig.Rows
	b        byte
	v        uint32
	f        float32
	words    uint64
	q        int
	after    int // the part it runs after, -1 for none
	si, di   int // the buffer indices its refs name
}

// randomCopies is the state of a RandomCopies check.
type randomCopies struct {
	t        *testing.T
	ctx      context.Context
	dev      *rig.Device
	key      uint64
	r        *rand.Rand
	step     int
	queues   int
	bufs     []*rcBuf
	pending  []rig.Point
	inFlight int // the submissions let run before a wait
	scratch  []byte
	// noCompute is set once the device refused a copy on COMPUTE:0, which
	// a device may run none of (nvdev's Config.NoComputeCopies): the
	// later parts go on the other queues.
	noCompute bool

	// What the check did, which it logs at its end.
	subs, parts, multi, afters, dups, nils int
	uploads, downloads, checks, bigParts   int
	maxPending                             int
	kinds                                  [6]int
	onQueue                                []int
	checked                                int64
	refused                                map[string]int
}

// RandomCopies is a randomized differential check of dev's copies and
// fills against a copy of each buffer kept on the host. It allocates
// buffers of each kind of memory dev has (Facts.Kinds), of lengths from a
// byte to a few MiB (odd ones, and some just over 256 KiB and 1 MiB),
// and, where dev maps host memory (Facts.MapsHost), lends it two host
// buffers, one at an address that is not a multiple of 4. It then takes n
// steps drawn from the random sequence that key picks (the same key, the
// same steps): an Upload or a Download at a random offset and
// length, as bytes or as elements of 2, 4 or 8 bytes; or a submission of
// one to four parts, each a Copy, CopyRows, FillBytes, FillRows,
// FillUint32 or FillFloat32 on a random queue, between buffers or within
// one, sometimes with After, the buffers passed with one of them twice or
// a nil buffer at an index no ref names. Copies of rows have rows of a few
// bytes to 16 KiB, pitches from the rows' bytes up, and some add up to
// 256 KiB and more; a copy within one buffer never reads a byte it
// writes, since the bytes such a copy leaves are undefined. Several
// submissions may be in flight before the check waits for them.
//
// At each wait, and every few dozen steps in full, it downloads each
// buffer written since its last check and compares it with the host's
// copy; a Download step compares what it read. A mismatch fails the test
// naming the key, the step, the buffer's writes since its last check
// (the last of them the operation that failed, with all its arguments)
// and the first byte that differs. A submission refused with a
// *RefusalError for a documented reason (a fill of four-byte words of a
// lent buffer whose address is not a multiple of 4, which the GPU drivers
// refuse; a copy on COMPUTE:0, which a device may run none of) changes
// nothing and is counted; any other error fails the test. It logs what
// it did, the refusals by reason included, and returns the count of
// submissions refused.
//
// A step's lengths are at most a few MiB, so that n of 300 to 1000 takes
// a few seconds on a GPU.
func RandomCopies(t *testing.T, dev *rig.Device, key uint64, n int) (refused int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := &randomCopies{
		t: t, ctx: ctx, dev: dev, key: key,
		r:       rand.New(rand.NewPCG(key, 0x9e3779b97f4a7c15)),
		queues:  len(dev.Facts().Queues),
		refused: map[string]int{},
	}
	c.onQueue = make([]int, c.queues)
	c.inFlight = []int{1, 2, 3, 6, 16}[c.r.IntN(5)]
	c.alloc()
	t0 := time.Now()
	for c.step = 0; c.step < n; c.step++ {
		switch x := c.r.IntN(20); {
		case x < 3:
			c.upload()
		case x < 5:
			c.download()
		default:
			c.submit()
		}
		if len(c.pending) >= c.inFlight || c.r.IntN(4) == 0 {
			c.wait()
			c.check(false)
		}
		if c.step%64 == 63 {
			c.wait()
			c.check(true)
		}
	}
	c.step = n
	c.wait()
	c.check(true)
	took := time.Since(t0)
	var why []string
	total := 0
	for k, v := range c.refused {
		why = append(why, fmt.Sprintf("%d: %s", v, k))
		total += v
	}
	sort.Strings(why)
	t.Logf("%s, key %d: %d steps in %v, %d buffers: %d uploads, %d downloads, %d submissions (%d of several parts, %d parts with After, %d with a buffer passed twice, %d with a nil buffer), up to %d in flight; parts %d (copies %d, of rows %d, byte fills %d, of rows %d, of uint32 %d, of float32 %d; %d of 256 KiB or more), by queue %v; %d checks of %d bytes; %d refused %v",
		dev.Name(), key, n, took.Round(time.Millisecond), len(c.bufs), c.uploads, c.downloads, c.subs, c.multi, c.afters, c.dups, c.nils, c.maxPending,
		c.parts, c.kinds[rcCopy], c.kinds[rcCopyRows], c.kinds[rcFillBytes], c.kinds[rcFillRows], c.kinds[rcFillUint32], c.kinds[rcFillFloat32], c.bigParts,
		c.onQueue, c.checks, c.checked, total, why)
	return total
}

// fatalf fails the test, naming the device, the key and the step.
func (c *randomCopies) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s, key %d, step %d: %s", c.dev.Name(), c.key, c.step, fmt.Sprintf(format, args...))
}

// alloc allocates the buffers, each kind's lengths drawn from
// randomSizes (one just over 256 KiB and one over 1 MiB at least), lends
// the host buffers where dev maps host memory, and fills each with random
// bytes.
func (c *randomCopies) alloc() {
	f := c.dev.Facts()
	for _, k := range []device.Memory{rig.DeviceMemory, rig.PinnedMemory, rig.MappedMemory} {
		if !f.Kinds.Has(k) {
			continue
		}
		sizes := []int{randomSizes[8+c.r.IntN(3)], randomSizes[11+c.r.IntN(4)]}
		for range 2 + c.r.IntN(2) {
			sizes = append(sizes, randomSizes[c.r.IntN(len(randomSizes))])
		}
		for _, size := range sizes {
			if k == rig.MappedMemory {
				// Mapped memory may be a GPU's, which the host reads
				// slowly through its BAR.
				size = min(size, 1<<20+3)
			}
			b, err := c.dev.Alloc(k, size)
			if err != nil {
				if k == rig.MappedMemory && (errors.Is(err, rig.ErrOutOfMemory) || errors.Is(err, device.ErrNoMemory)) {
					c.t.Logf("%s: no %d bytes of Mapped memory: %v", c.dev.Name(), size, err)
					continue
				}
				c.fatalf("an alloc of %d bytes of %v memory: %v", size, k, err)
			}
			c.t.Cleanup(func() { b.Free() })
			c.add(b, fmt.Sprintf("%v memory, %d bytes", k, size))
		}
	}
	if f.MapsHost {
		page := os.Getpagesize()
		for _, l := range []struct{ size, at int }{
			{65536 + 3, 4 + 4*c.r.IntN(8)},
			{256<<10 + 5, 1 + c.r.IntN(3) + 4*c.r.IntN(8)},
		} {
			// The lent bytes lie within whole pages of their own
			// allocation, which the device maps, and no other buffer's.
			back := make([]byte, l.size+l.at+3*page)
			first := (page - int(uintptr(unsafe.Pointer(&back[0])))%page) % page
			lent := back[first+page+l.at:][:l.size]
			b, err := c.dev.MapHost(lent)
			if err != nil {
				c.fatalf("a map of %d bytes of host memory: %v", l.size, err)
			}
			c.t.Cleanup(func() { b.Free() })
			c.add(b, fmt.Sprintf("lent host memory, %d bytes at an address %d past a multiple of 4", l.size, b.Address()%4))
		}
	}
	for _, b := range c.bufs {
		c.random(b.ref)
		if err := rig.Upload(c.ctx, b.b, 0, b.ref); err != nil {
			c.fatalf("the upload of %s's first bytes: %v", b.what, err)
		}
		b.note("Upload(%s, at 0, its %d bytes)", b.what, len(b.ref))
		b.dirty = true
	}
	c.wait()
	c.check(true)
}

// add adds buffer b, described by what, to the check.
func (c *randomCopies) add(b *rig.Buffer, what string) {
	c.bufs = append(c.bufs, &rcBuf{b: b, ref: make([]byte, b.Len()), what: fmt.Sprintf("buffer %d (%s)", len(c.bufs), what)})
	if b.Len() > len(c.scratch) {
		c.scratch = make([]byte, b.Len())
	}
}

// note records a write of b at the step.
func (b *rcBuf) note(format string, args ...any) {
	b.since = append(b.since, fmt.Sprintf(format, args...))
	if len(b.since) > rcHistory {
		n := len(b.since) - rcHistory
		b.dropped += n
		b.since = append(b.since[:0], b.since[n:]...)
	}
}

// history is b's writes since its last check, for a failure's message.
func (b *rcBuf) history() string {
	var s strings.Builder
	if b.dropped > 0 {
		fmt.Fprintf(&s, "\n\t(%d earlier writes)", b.dropped)
	}
	for _, w := range b.since {
		s.WriteString("\n\t")
		s.WriteString(w)
	}
	return s.String()
}

// random fills p with random bytes.
func (c *randomCopies) random(p []byte) {
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, c.r.Uint64())
		p = p[8:]
	}
	for i := range p {
		p[i] = byte(c.r.Uint32())
	}
}

// pick is a random buffer.
func (c *randomCopies) pick() *rcBuf { return c.bufs[c.r.IntN(len(c.bufs))] }

// length draws a length of at most max bytes: a few bytes, up to 4 KiB,
// near one of randomEdges, max itself, or any; rarely 0.
func (c *randomCopies) length(max int) int {
	if max <= 0 || c.r.IntN(60) == 0 {
		return 0
	}
	switch c.r.IntN(10) {
	case 0:
		return 1 + c.r.IntN(min(max, 4))
	case 1, 2:
		return 1 + c.r.IntN(min(max, 64))
	case 3:
		return 1 + c.r.IntN(min(max, 4096))
	case 4:
		if e := randomEdges[c.r.IntN(len(randomEdges))] - 1 + c.r.IntN(5); e <= max {
			return e
		}
		return max
	case 5:
		return max
	default:
		return 1 + c.r.IntN(max)
	}
}

// offset draws an offset at which n bytes lie within size bytes.
func (c *randomCopies) offset(size, n int) int {
	room := size - n
	switch c.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return room
	case 2:
		return min(room, c.r.IntN(16))
	default:
		return c.r.IntN(room + 1)
	}
}

// elem draws the size of the elements an Upload or Download moves n bytes
// as, n a multiple of it.
func (c *randomCopies) elem(n int) int {
	e := []int{1, 1, 2, 4, 8}[c.r.IntN(5)]
	if n%e != 0 {
		return 1
	}
	return e
}

// elemName names the elements of e bytes that upload and download move.
func elemName(e int) string {
	return map[int]string{1: "uint8", 2: "int16", 4: "uint32", 8: "int64"}[e]
}

// upload takes a step of an Upload of random bytes.
func (c *randomCopies) upload() {
	b := c.pick()
	n := c.length(len(b.ref))
	e := c.elem(n)
	off := c.offset(len(b.ref), n)
	data := make([]byte, n)
	c.random(data)
	var err error
	switch e {
	case 1:
		err = rig.Upload(c.ctx, b.b, off, data)
	case 2:
		s := make([]int16, n/2)
		for i := range s {
			s[i] = int16(binary.NativeEndian.Uint16(data[2*i:]))
		}
		err = rig.Upload(c.ctx, b.b, off, s)
	case 4:
		s := make([]uint32, n/4)
		for i := range s {
			s[i] = binary.NativeEndian.Uint32(data[4*i:])
		}
		err = rig.Upload(c.ctx, b.b, off, s)
	case 8:
		s := make([]int64, n/8)
		for i := range s {
			s[i] = int64(binary.NativeEndian.Uint64(data[8*i:]))
		}
		err = rig.Upload(c.ctx, b.b, off, s)
	}
	what := fmt.Sprintf("step %d: Upload(%s, at %d, %d bytes as %d %s)", c.step, b.what, off, n, n/e, elemName(e))
	if err != nil {
		c.fatalf("%s: %v", what, err)
	}
	c.uploads++
	copy(b.ref[off:], data)
	b.note("%s", what)
	b.dirty = true
}

// download takes a step of a Download, and compares what it read with the
// host's copy.
func (c *randomCopies) download() {
	b := c.pick()
	n := c.length(len(b.ref))
	e := c.elem(n)
	off := c.offset(len(b.ref), n)
	got := make([]byte, n)
	var err error
	switch e {
	case 1:
		err = rig.Download(c.ctx, got, b.b, off)
	case 2:
		s := make([]int16, n/2)
		err = rig.Download(c.ctx, s, b.b, off)
		for i, v := range s {
			binary.NativeEndian.PutUint16(got[2*i:], uint16(v))
		}
	case 4:
		s := make([]uint32, n/4)
		err = rig.Download(c.ctx, s, b.b, off)
		for i, v := range s {
			binary.NativeEndian.PutUint32(got[4*i:], v)
		}
	case 8:
		s := make([]int64, n/8)
		err = rig.Download(c.ctx, s, b.b, off)
		for i, v := range s {
			binary.NativeEndian.PutUint64(got[8*i:], uint64(v))
		}
	}
	what := fmt.Sprintf("Download(%s, at %d, %d bytes as %d %s)", b.what, off, n, n/e, elemName(e))
	if err != nil {
		c.fatalf("%s: %v", what, err)
	}
	c.downloads++
	c.checked += int64(n)
	if want := b.ref[off : off+n]; !bytes.Equal(got, want) {
		k := firstDiff(got, want)
		c.fatalf("%s, with %d submissions in flight: byte %d of the buffer reads %#02x, want %#02x; its writes since its last check, the last the suspect:%s",
			what, len(c.pending), off+k, got[k], want[k], b.history())
	}
}

// firstDiff is the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	return k
}

// wait waits for the submissions in flight.
func (c *randomCopies) wait() {
	for _, p := range c.pending {
		if err := p.Wait(c.ctx); err != nil {
			c.fatalf("a wait for a submission: %v", err)
		}
	}
	c.pending = c.pending[:0]
}

// check downloads the buffers written since their last check, or all of
// them, and compares each with the host's copy.
func (c *randomCopies) check(all bool) {
	for _, b := range c.bufs {
		if !all && !b.dirty {
			continue
		}
		got := c.scratch[:len(b.ref)]
		if err := rig.Download(c.ctx, got, b.b, 0); err != nil {
			c.fatalf("the check of %s: %v", b.what, err)
		}
		c.checks++
		c.checked += int64(len(got))
		if !bytes.Equal(got, b.ref) {
			k := firstDiff(got, b.ref)
			end := k
			for end < len(got) && got[end] != b.ref[end] {
				end++
			}
			c.fatalf("%s: byte %d reads %#02x, want %#02x (the first %d bytes from it differ); its writes since its last check, the last the suspect:%s",
				b.what, k, got[k], b.ref[k], end-k, b.history())
		}
		b.since, b.dropped, b.dirty = b.since[:0], 0, false
	}
}

// queue draws a part's queue.
func (c *randomCopies) queue() int {
	if c.noCompute && c.queues > 1 {
		return 1 + c.r.IntN(c.queues-1)
	}
	return c.r.IntN(c.queues)
}

// rowsMeet reports whether a byte of rows rows of n bytes from byte a, pa
// apart, lies in rows of n bytes from byte b, pb apart: a copy within one
// buffer whose rows read and written meet, which leaves undefined bytes.
// A pitch is at least n.
func rowsMeet(a, pa, b, pb, n, rows uint64) bool {
	if rows == 0 || n == 0 {
		return false
	}
	for i := range rows {
		s := a + i*pa
		if s+n <= b {
			continue
		}
		// The last row written that starts before this row read ends
		// ends the furthest of those that do.
		j := min((s+n-1-b)/pb, rows-1)
		if b+j*pb+n > s {
			return true
		}
	}
	return false
}

// gap draws the bytes between rows of rb bytes.
func (c *randomCopies) gap(rb uint64) uint64 {
	switch c.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return 1 + c.r.Uint64N(16)
	case 2:
		return 1 + c.r.Uint64N(rb)
	case 3:
		return rb
	default:
		return c.r.Uint64N(4097)
	}
}

// rowShape draws the bytes of rows: 1 to 1023, 1 KiB to 16 KiB, or a
// few; and whether their count should make 256 KiB or more.
func (c *randomCopies) rowShape() (rb uint64, big bool) {
	switch c.r.IntN(5) {
	case 0, 1:
		return 1 + c.r.Uint64N(1023), false
	case 2:
		return 1024 + c.r.Uint64N(15<<10), false
	case 3:
		return 1024 + c.r.Uint64N(7<<10), true
	default:
		return 1 + c.r.Uint64N(16), false
	}
}

// rowCount draws a count of rows of rb bytes, at most max.
func (c *randomCopies) rowCount(rb, max uint64, big bool) uint64 {
	max = min(max, 1<<16)
	if c.r.IntN(80) == 0 {
		return 0
	}
	if big {
		want := (256<<10+rb-1)/rb + c.r.Uint64N(64)
		return min(want, max)
	}
	switch c.r.IntN(4) {
	case 0:
		return max
	case 1:
		return 1 + c.r.Uint64N(min(max, 8))
	default:
		return 1 + c.r.Uint64N(max)
	}
}

// span is the bytes from the first row's start to the last row's end.
func span(rows, pitch, rb uint64) uint64 {
	if rows == 0 || rb == 0 {
		return 0
	}
	return (rows-1)*pitch + rb
}

// pitchArg is pitch as a part takes it: sometimes 0 where it is the rows'
// bytes.
func (c *randomCopies) pitchArg(pitch, rb uint64) uint64 {
	if pitch == rb && c.r.IntN(2) == 0 {
		return 0
	}
	return pitch
}

// part draws a part, and reports false where its draw found none that
// fits.
func (c *randomCopies) part() (rcPart, bool) {
	p := rcPart{q: c.queue(), after: -1}
	switch x := c.r.IntN(20); {
	case x < 5:
		return c.copyBytes(p)
	case x < 10:
		return c.copyRows(p)
	case x < 12:
		p.kind = rcFillBytes
		p.dst = c.pick()
		n := c.length(len(p.dst.ref))
		p.rows = rig.Rows{DstOffset: uint64(c.offset(len(p.dst.ref), n)), RowBytes: uint64(n), Rows: 1}
		p.b = byte(c.r.Uint32())
		return p, true
	case x < 16:
		return c.fillRows(p)
	default:
		p.kind = rcFillUint32
		if x >= 18 {
			p.kind = rcFillFloat32
		}
		p.dst = c.pick()
		size := len(p.dst.ref)
		off := 4 * c.r.IntN(size/4+1)
		if c.r.IntN(4) == 0 {
			off = 4 * c.r.IntN(min(size/4, 4)+1)
		}
		p.words = uint64(c.length(size-off) / 4)
		p.rows = rig.Rows{DstOffset: uint64(off), RowBytes: 4 * p.words, Rows: 1}
		p.v = c.r.Uint32()
		specials := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32}
		if c.r.IntN(2) == 0 {
			p.f = specials[c.r.IntN(len(specials))]
		} else {
			p.f = float32(c.r.NormFloat64() * 1000)
		}
		return p, true
	}
}

// copyBytes draws a Copy, between two buffers or within one.
func (c *randomCopies) copyBytes(p rcPart) (rcPart, bool) {
	p.kind = rcCopy
	p.src, p.dst = c.pick(), c.pick()
	if c.r.IntN(4) == 0 {
		p.dst = p.src
	}
	sl, dl := len(p.src.ref), len(p.dst.ref)
	if p.src == p.dst {
		dl = sl / 2
	}
	n := c.length(min(sl, dl))
	so := c.offset(sl, n)
	do := c.offset(len(p.dst.ref), n)
	if p.src == p.dst && n > 0 {
		// A start at least n bytes from the source's: below it or above.
		var room []int
		if so >= n {
			room = append(room, 0)
		}
		if so+2*n <= sl {
			room = append(room, 1)
		}
		if len(room) == 0 {
			return p, false
		}
		if room[c.r.IntN(len(room))] == 0 {
			do = c.r.IntN(so - n + 1)
			if c.r.IntN(3) == 0 {
				do = so - n
			}
		} else {
			do = so + n + c.r.IntN(sl-so-2*n+1)
			if c.r.IntN(3) == 0 {
				do = so + n
			}
		}
	}
	p.rows = rig.Rows{SrcOffset: uint64(so), DstOffset: uint64(do), RowBytes: uint64(n), Rows: 1}
	return p, true
}

// copyRows draws a CopyRows, between two buffers or within one, where its
// rows read and written may interleave.
func (c *randomCopies) copyRows(p rcPart) (rcPart, bool) {
	p.kind = rcCopyRows
	p.src, p.dst = c.pick(), c.pick()
	if c.r.IntN(3) == 0 {
		p.dst = p.src
	}
	sl, dl := uint64(len(p.src.ref)), uint64(len(p.dst.ref))
	rb, big := c.rowShape()
	if rb > min(sl, dl) {
		rb = 1 + c.r.Uint64N(min(sl, dl))
		big = false
	}
	sp, dp := rb+c.gap(rb), rb+c.gap(rb)
	interleave := p.src == p.dst && c.r.IntN(2) == 0
	if interleave {
		// Rows written between the rows read, in the same span.
		sp = 2*rb + c.r.Uint64N(rb+64)
		dp = sp
	}
	maxRows := min((sl-rb)/sp+1, (dl-rb)/dp+1)
	if p.src == p.dst {
		maxRows = max(1, maxRows/2)
	}
	rows := c.rowCount(rb, maxRows, big)
	ss, ds := span(rows, sp, rb), span(rows, dp, rb)
	for range 8 {
		so, do := uint64(c.offset(int(sl), int(ss))), uint64(c.offset(int(dl), int(ds)))
		if interleave {
			if ss+sp-rb > sl {
				return p, false
			}
			so = uint64(c.offset(int(sl), int(ss+sp-rb)))
			do = so + rb + c.r.Uint64N(sp-2*rb+1)
			if do+ds > dl {
				continue
			}
		}
		if p.src == p.dst && rowsMeet(so, sp, do, dp, rb, rows) {
			continue
		}
		p.rows = rig.Rows{SrcOffset: so, DstOffset: do, RowBytes: rb, Rows: rows, SrcPitch: c.pitchArg(sp, rb), DstPitch: c.pitchArg(dp, rb)}
		return p, true
	}
	return p, false
}

// fillRows draws a FillRows.
func (c *randomCopies) fillRows(p rcPart) (rcPart, bool) {
	p.kind = rcFillRows
	p.dst = c.pick()
	dl := uint64(len(p.dst.ref))
	rb, big := c.rowShape()
	if rb > dl {
		rb = 1 + c.r.Uint64N(dl)
		big = false
	}
	dp := rb + c.gap(rb)
	rows := c.rowCount(rb, (dl-rb)/dp+1, big)
	do := uint64(c.offset(int(dl), int(span(rows, dp, rb))))
	p.rows = rig.Rows{DstOffset: do, RowBytes: rb, Rows: rows, DstPitch: c.pitchArg(dp, rb)}
	p.b = byte(c.r.Uint32())
	return p, true
}

// pitches are the part's pitches, 0 taken for its rows' bytes.
func (p *rcPart) pitches() (sp, dp uint64) {
	sp, dp = p.rows.SrcPitch, p.rows.DstPitch
	if sp == 0 {
		sp = p.rows.RowBytes
	}
	if dp == 0 {
		dp = p.rows.RowBytes
	}
	return sp, dp
}

// rig is the part as rig makes it.
func (p *rcPart) rig() rig.Part {
	var part rig.Part
	r := p.rows
	switch p.kind {
	case rcCopy:
		part = rig.Copy(p.si, r.SrcOffset, p.di, r.DstOffset, r.RowBytes)
	case rcCopyRows:
		r.Src, r.Dst = p.si, p.di
		part = rig.CopyRows(r)
	case rcFillBytes:
		part = rig.FillBytes(p.di, r.DstOffset, r.RowBytes, p.b)
	case rcFillRows:
		part = rig.FillRows(p.di, r.DstOffset, r.RowBytes, r.Rows, r.DstPitch, p.b)
	case rcFillUint32:
		part = rig.FillUint32(p.di, r.DstOffset, p.words, p.v)
	case rcFillFloat32:
		part = rig.FillFloat32(p.di, r.DstOffset, p.words, p.f)
	}
	part = part.On(p.q)
	if p.after >= 0 {
		part = part.After(p.after)
	}
	return part
}

// describe is the part with all its arguments, queues naming its queue.
func (p *rcPart) describe(queues []string) string {
	r := p.rows
	var s string
	switch p.kind {
	case rcCopy:
		s = fmt.Sprintf("Copy(from %s [index %d] at %d, to %s [index %d] at %d, %d bytes)", p.src.what, p.si, r.SrcOffset, p.dst.what, p.di, r.DstOffset, r.RowBytes)
	case rcCopyRows:
		s = fmt.Sprintf("CopyRows(%d rows of %d bytes, from %s [index %d] at %d, pitch %d, to %s [index %d] at %d, pitch %d)",
			r.Rows, r.RowBytes, p.src.what, p.si, r.SrcOffset, r.SrcPitch, p.dst.what, p.di, r.DstOffset, r.DstPitch)
	case rcFillBytes:
		s = fmt.Sprintf("FillBytes(%s [index %d], at %d, %d bytes, %#02x)", p.dst.what, p.di, r.DstOffset, r.RowBytes, p.b)
	case rcFillRows:
		s = fmt.Sprintf("FillRows(%s [index %d], at %d, %d rows of %d bytes, pitch %d, %#02x)", p.dst.what, p.di, r.DstOffset, r.Rows, r.RowBytes, r.DstPitch, p.b)
	case rcFillUint32:
		s = fmt.Sprintf("FillUint32(%s [index %d], at %d, %d words, %#08x)", p.dst.what, p.di, r.DstOffset, p.words, p.v)
	case rcFillFloat32:
		s = fmt.Sprintf("FillFloat32(%s [index %d], at %d, %d words, %v, bits %#08x)", p.dst.what, p.di, r.DstOffset, p.words, p.f, math.Float32bits(p.f))
	}
	s += ".On(" + queues[p.q] + ")"
	if p.after >= 0 {
		s += fmt.Sprintf(".After(%d)", p.after)
	}
	return s
}

// apply does the part to the host's copies.
func (p *rcPart) apply() {
	r := p.rows
	sp, dp := p.pitches()
	dst := p.dst.ref
	for i := range r.Rows {
		row := dst[r.DstOffset+i*dp:][:r.RowBytes]
		switch p.kind {
		case rcCopy, rcCopyRows:
			copy(row, p.src.ref[r.SrcOffset+i*sp:][:r.RowBytes])
		case rcFillBytes, rcFillRows:
			for j := range row {
				row[j] = p.b
			}
		case rcFillUint32, rcFillFloat32:
			v := p.v
			if p.kind == rcFillFloat32 {
				v = math.Float32bits(p.f)
			}
			for j := 0; j+4 <= len(row); j += 4 {
				binary.LittleEndian.PutUint32(row[j:], v)
			}
		}
	}
}

// refusal is the documented reason for which dev may refuse part i of
// parts, or "" where none is.
func (c *randomCopies) refusal(parts []rcPart, i int) string {
	if i < 0 || i >= len(parts) {
		return ""
	}
	p := &parts[i]
	switch {
	case (p.kind == rcFillUint32 || p.kind == rcFillFloat32) && (p.dst.b.Address()+p.rows.DstOffset)%4 != 0:
		return "a fill of four-byte words of a lent buffer whose address is not a multiple of 4"
	case p.q == device.Compute:
		c.noCompute = true
		return "a copy or fill on COMPUTE:0"
	}
	return ""
}

// submit takes a step of a submission of one to four parts.
func (c *randomCopies) submit() {
	k := 1
	if c.r.IntN(3) == 0 {
		k = 2 + c.r.IntN(3)
	}
	parts := make([]rcPart, 0, k)
	for len(parts) < k {
		if p, ok := c.part(); ok {
			parts = append(parts, p)
		}
	}
	for i := 1; i < k; i++ {
		if c.r.IntN(5) == 0 {
			parts[i].after = c.r.IntN(i)
			c.afters++
		}
	}
	// The buffers, in a random order, sometimes one of them at two
	// indices and a nil buffer at an index that no ref names.
	var used []*rcBuf
	for i := range parts {
		for _, b := range []*rcBuf{parts[i].src, parts[i].dst} {
			if b != nil && !containsBuf(used, b) {
				used = append(used, b)
			}
		}
	}
	c.r.Shuffle(len(used), func(i, j int) { used[i], used[j] = used[j], used[i] })
	var list []*rig.Buffer
	at := map[*rcBuf][]int{}
	withNil := c.r.IntN(10) == 0
	for i, b := range used {
		if withNil && i == len(used)/2 {
			list = append(list, nil)
		}
		at[b] = append(at[b], len(list))
		list = append(list, b.b)
	}
	dup := c.r.IntN(6) == 0
	if dup {
		b := used[c.r.IntN(len(used))]
		at[b] = append(at[b], len(list))
		list = append(list, b.b)
		c.dups++
	}
	if withNil {
		c.nils++
	}
	rparts := make([]rig.Part, len(parts))
	var desc strings.Builder
	fmt.Fprintf(&desc, "step %d: a submission of %d parts with %d buffers", c.step, len(parts), len(list))
	for i := range parts {
		p := &parts[i]
		if p.src != nil {
			p.si = at[p.src][c.r.IntN(len(at[p.src]))]
		}
		p.di = at[p.dst][c.r.IntN(len(at[p.dst]))]
		rparts[i] = p.rig()
		fmt.Fprintf(&desc, "\n\t\tpart %d: %s", i, p.describe(c.dev.Facts().Queues))
	}
	what := desc.String()
	s, err := rig.NewSubmission(c.dev, rparts...)
	if err != nil {
		c.fatalf("%s: %v", what, err)
	}
	pt, err := s.Take().Submit(c.ctx, list...)
	if err != nil {
		var re *rig.RefusalError
		if errors.As(err, &re) {
			if why := c.refusal(parts, re.Part); why != "" {
				c.refused[why]++
				return
			}
		}
		c.fatalf("%s: %v", what, err)
	}
	c.subs++
	if len(parts) > 1 {
		c.multi++
	}
	c.pending = append(c.pending, pt)
	c.maxPending = max(c.maxPending, len(c.pending))
	wrote := map[*rcBuf][]int{}
	for i := range parts {
		p := &parts[i]
		p.apply()
		c.parts++
		c.kinds[p.kind]++
		c.onQueue[p.q]++
		if p.rows.Rows*p.rows.RowBytes >= 256<<10 {
			c.bigParts++
		}
		if p.rows.Rows != 0 && p.rows.RowBytes != 0 {
			wrote[p.dst] = append(wrote[p.dst], i)
		}
	}
	for _, b := range used {
		if w := wrote[b]; w != nil {
			b.note("%s\n\t\t(parts %v write it)", what, w)
			b.dirty = true
		}
	}
}

// containsBuf reports whether bs holds b.
func containsBuf(bs []*rcBuf, b *rcBuf) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}
