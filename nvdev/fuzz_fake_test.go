package nvdev

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	rig "github.com/rig-go/rig/runtime"
)

// FuzzFakeSequence drives a device on the fake through rig with a sequence
// of submissions that the input spells, and holds it to a model of the
// buffers' bytes kept in Go. The submissions mix copies (one row or rows,
// with pitches), fills, launches of twice, the driver's copy kernels, and
// Words parts whose entries release a value into a buffer or do nothing,
// on both queues, with Part.After orders, over buffers of Device, Pinned
// and Mapped memory and mapped host memory, at any offset. Between them
// come waits, Uploads and Downloads, big submissions that grow the rings
// (and, on rings of few entries, open the channels anew), and pauses of
// the fake, under which values pile up in flight. The fake runs the
// channels in either order, so that a missing wait between the channels
// shows in the bytes. A flag of a submission turns the device's stamps on
// or off before it, so that timed values, whose stamps add words on each
// channel they enter, meet the rings' ends as untimed ones do.
//
// After each wait every buffer reads (Download) what the model holds, and
// Settle returns the stamps of the timed values reached, in value order,
// each ending no sooner than it starts. A
// submission is refused exactly where the model finds a request out of
// range: NewSubmission's errors match rig.ErrInvalid (a copy past 2^64
// bytes, an After index the submission lacks), and Submit's are
// *rig.RefusalError naming the first part rig refuses (a copy or a ref
// past its buffer) or else the first part the driver never runs (an After
// index not below the part's own, a launch on COPY:0 or of bad
// dimensions, a copy on COMPUTE:0 with no copy engine there, entries of an
// odd number of words, a queue the device lacks). The device is never lost.
func FuzzFakeSequence(f *testing.F) {
	for _, in := range fuzzCorpus() {
		f.Add(in)
	}
	bin := cubin(f)
	c, err := hw.Parse(bin)
	if err != nil {
		f.Fatal(err)
	}
	k, ok := c.Kernel("twice")
	if !ok {
		f.Fatal("no twice in the test cubin")
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		runFuzzSequence(t, in, bin, k.ParamOffset)
	})
}

// fuzzNames numbers the fuzzed devices' names.
var fuzzNames atomic.Uint64

// fuzzBytes reads the input: past its end it reads zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (r *fuzzBytes) more() bool { return r.i < len(r.b) }

func (r *fuzzBytes) u8() uint64 {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return uint64(r.b[r.i-1])
}

func (r *fuzzBytes) u16() uint64 { return r.u8() | r.u8()<<8 }
func (r *fuzzBytes) u24() uint64 { return r.u16() | r.u8()<<16 }
func (r *fuzzBytes) u64() uint64 { return r.u24() | r.u24()<<24 | r.u16()<<48 }

// The kinds of a fuzzed part.
const (
	fpCopy = iota
	fpFill
	fpLaunch
	fpWords
)

// fuzzPart is one part of a fuzzed submission, as the model sees it.
type fuzzPart struct {
	kind  int
	queue int // -1: the part's default
	after int // -1: none
	// A copy or a fill.
	src, dst           int
	srcOff, dstOff     uint64
	rowBytes, rows     uint64
	srcPitch, dstPitch uint64 // 0: the row's bytes
	fill               bool
	b                  byte
	// A launch of twice over groups*threads floats of buffer buf at off.
	buf             int
	off             uint64
	groups, threads uint64
	// Words: entries releases of val into buffer buf at off (where rel),
	// then nops NOP entries; odd adds a word.
	rel     bool
	val     uint64
	entries int
	nops    int
	odd     bool
	slot    int
}

// fuzzBuf is a buffer and the bytes the model says it holds.
type fuzzBuf struct {
	b     *rig.Buffer
	model []byte
	host  []byte // the memory of a MapHost buffer
}

// fuzzRun is one fuzzed sequence on a device of the fake.
type fuzzRun struct {
	t      *testing.T
	ctx    context.Context
	f      *fake
	cfg    Config
	drv    *gpu
	dev    *rig.Device
	twice  *rig.Function
	bufs   []*fuzzBuf
	words  *rig.Buffer // Pinned: the segments Words parts run
	slots  int
	all    []*rig.Buffer // the model's buffers, then words
	points []rig.Point
	paused bool
	// settled is the last value whose stamp Settle returned.
	settled uint64
	kerr    error // what the fake's kernels found wrong
	kmu     sync.Mutex
}

// fuzzSizes are the buffers' sizes, before the few bytes the input adds.
var fuzzSizes = [8]int{1, 8, 64, 200, 4096, 8192 + 24, 65536, 300 << 10}

func runFuzzSequence(t *testing.T, in []byte, bin []byte, twicePO int) {
	r := &fuzzBytes{b: in}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A sequence that hangs panics, with every goroutine's stack, so that
	// the fuzzer keeps its input.
	dog := time.AfterFunc(30*time.Second, func() {
		buf := make([]byte, 1<<20)
		panic(fmt.Sprintf("the sequence ran for 30 s:\n%s", buf[:runtime.Stack(buf, true)]))
	})
	defer dog.Stop()
	x := &fuzzRun{t: t, ctx: ctx, f: newFake()}
	c0 := r.u8()
	if c0&1 == 0 {
		x.cfg.RingEntries, x.cfg.SegmentBytes, x.cfg.LaunchBytes = 64, 4096, 8192
	}
	x.cfg.SharedGroup = c0&2 != 0
	x.cfg.NoLinkLaunches = c0&4 != 0
	x.cfg.PinnedRings = c0&8 != 0
	if c0&16 != 0 {
		x.cfg.CopyKernels = -1
	}
	x.cfg.NoComputeCopies = c0&32 != 0
	x.cfg.NoOwnRelease = c0&64 != 0
	x.cfg.OneRunqueue = c0&128 != 0
	x.f.onLaunch = func(q hw.Qmd, bank []byte) { x.launch(q, bank, twicePO) }
	sf := &serialFake{fake: x.f}
	op := device.Opener{Name: fmt.Sprintf("NV-fuzz-%d", fuzzNames.Add(1)), Make: func(w *uint64) (device.Driver, error) {
		d, err := makeDevice(w, sf, fakeRM{x.f}, x.cfg)
		if err != nil {
			return nil, err
		}
		x.drv = d
		return d, nil
	}}
	dev, err := rig.Open(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	x.dev = dev
	closed := false
	defer func() {
		if !closed {
			x.resume()
			_ = dev.Close()
			<-dev.Done()
		}
		// The device holds the fake, whose kernels hold x, which holds
		// the buffers, whose cleanups hold the device: a buffer reachable
		// from its cleanup's argument is never collected.
		x.f.mu.Lock()
		x.f.onLaunch = nil
		x.f.mu.Unlock()
		x.bufs, x.all, x.words = nil, nil, nil
	}()
	img, err := dev.LoadImage(bin)
	if err != nil {
		t.Fatal(err)
	}
	if x.twice, err = img.Resolve("twice"); err != nil {
		t.Fatal(err)
	}
	x.setup(r)

	for ops := 0; r.more() && ops < 48; ops++ {
		switch op := r.u8(); op % 8 {
		case 0, 1, 2:
			n := int(1 + r.u8()%4)
			if op%8 == 2 {
				n = int(r.u8() % 9)
			}
			parts := make([]fuzzPart, n)
			for i := range parts {
				parts[i] = x.part(r, i, n)
			}
			x.submit(parts, r.u8())
		case 3:
			x.waitAndCheck(r.u8())
		case 4:
			x.upload(r)
		case 5:
			x.download(r)
		case 6:
			x.big(r)
		case 7:
			switch v := r.u8(); v % 4 {
			case 0, 1:
				x.f.mu.Lock()
				x.f.flip = v%4 == 1
				x.f.mu.Unlock()
			case 2:
				x.pause()
			case 3:
				x.resume()
			}
		}
		x.alive()
	}
	x.resume()
	x.checkAll()
	x.kmu.Lock()
	kerr := x.kerr
	x.kmu.Unlock()
	if kerr != nil {
		t.Fatal(kerr)
	}
	closed = true
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dev.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the device did not give everything back")
	}
	if n := x.f.live(); n != 0 {
		t.Errorf("%d memories left after close", n)
	}
	if n := x.f.objectsOf(x.f.gpu.Channel); n != 0 {
		t.Errorf("%d channels left after close", n)
	}
}

// setup allocates the buffers the input asks for, and fills each with
// bytes the model knows.
func (x *fuzzRun) setup(r *fuzzBytes) {
	t := x.t
	nb := int(2 + r.u8()%3)
	for i := range nb {
		k, s := r.u8(), r.u8()
		size := fuzzSizes[s%8] + int(s>>3)%8 + int(k>>2)%8
		fb := &fuzzBuf{model: make([]byte, size)}
		var err error
		switch k % 4 {
		case 0:
			fb.b, err = x.dev.Alloc(device.DeviceMemory, size)
		case 1:
			fb.b, err = x.dev.Alloc(device.PinnedMemory, size)
		case 2:
			fb.b, err = x.dev.Alloc(device.MappedMemory, size)
		case 3:
			fb.host = make([]byte, size+16)
			off := int(k>>4) % 16
			fb.b, err = x.dev.MapHost(fb.host[off : off+size])
		}
		if err != nil {
			t.Fatalf("buffer %d: %v", i, err)
		}
		for j := range fb.model {
			fb.model[j] = byte(j*31 + i*101 + j>>8)
		}
		if err := rig.Upload(x.ctx, fb.b, 0, fb.model); err != nil {
			t.Fatalf("upload of buffer %d: %v", i, err)
		}
		x.bufs = append(x.bufs, fb)
		x.all = append(x.all, fb.b)
	}
	var err error
	if x.words, err = x.dev.Alloc(device.PinnedMemory, 1<<16); err != nil {
		t.Fatal(err)
	}
	x.all = append(x.all, x.words)
}

// alive fails the test where the device was lost.
func (x *fuzzRun) alive() {
	x.t.Helper()
	if err := x.dev.Err(); err != nil {
		x.t.Fatalf("the device was lost: %+v", err)
	}
}

func (x *fuzzRun) pause() {
	x.f.pause()
	x.paused = true
}

func (x *fuzzRun) resume() {
	if x.paused {
		x.paused = false
		x.f.resume()
	}
}

// length is buffer i's length.
func (x *fuzzRun) length(i int) uint64 { return uint64(len(x.bufs[i].model)) }

// part reads part i of a submission of n parts.
func (x *fuzzRun) part(r *fuzzBytes, i, n int) fuzzPart {
	nb := len(x.bufs)
	k := r.u8()
	p := fuzzPart{queue: -1, after: -1}
	switch q := r.u8(); q % 16 {
	case 1, 2:
		p.queue = device.Compute
	case 3, 4:
		p.queue = device.Copy
	case 5:
		if q >= 128 {
			p.queue = 2 // no queue of the device
		}
	case 6, 7, 8:
		p.after = int(q>>4) % (n + 1)
	case 9, 10:
		p.after = int(q>>4) % (n + 1)
		p.queue = int(q>>7) ^ device.Copy
	}
	bad := r.u8() // how the part strays out of range, where it does
	switch k % 8 {
	case 0, 1, 2:
		p.kind = fpCopy
		p.src, p.dst = int(r.u8())%nb, int(r.u8())%nb
		ls, ld := x.length(p.src), x.length(p.dst)
		p.rows = 1
		if k%8 == 2 {
			p.rows = 1 + r.u8()%8
			if k&0x80 != 0 {
				p.rows = 1 + r.u16()%600
			}
		}
		p.srcOff, p.dstOff = r.u24()%(ls+1), r.u24()%(ld+1)
		room := min(ls-p.srcOff, ld-p.dstOff) / p.rows
		p.rowBytes = r.u24() % (room + 1)
		if p.rows > 1 {
			ps, pd := r.u8(), r.u8()
			if ps%4 != 0 {
				// Source rows may overlap, which the driver refuses.
				p.srcPitch = max(1, p.rowBytes+ps%16, 4) - 3
			}
			if pd%4 != 0 {
				p.dstPitch = p.rowBytes + pd%16
			}
			// Fit the rows where the pitches allow.
			if e := x.rowsLen(p.rows, p.srcPitch, p.rowBytes); e > ls-p.srcOff {
				p.srcOff = ls - min(e, ls)
			}
			if e := x.rowsLen(p.rows, p.dstPitch, p.rowBytes); e > ld-p.dstOff {
				p.dstOff = ld - min(e, ld)
			}
		}
		switch bad % 32 {
		case 1:
			p.rowBytes++
		case 2:
			p.srcOff = math.MaxUint64 - r.u8()
		case 3:
			p.dstOff += ld
		case 4:
			p.dstPitch = math.MaxUint64 / 2
		}
		if p.src == p.dst && x.overlaps(p) {
			// Overlapping copies in one buffer are left undefined.
			p.dst = (p.dst + 1) % nb
		}
	case 3, 4:
		p.kind, p.fill = fpFill, true
		p.dst = int(r.u8()) % nb
		l := x.length(p.dst)
		p.dstOff = r.u24() % (l + 1)
		p.rowBytes, p.rows, p.b = r.u24()%(l-p.dstOff+1), 1, byte(r.u8())
		switch bad % 32 {
		case 1:
			p.rowBytes++
		case 2:
			p.dstOff = math.MaxUint64 - r.u8()
		case 3:
			p.dstOff += l + 1
		}
	case 5:
		p.kind = fpLaunch
		p.buf = int(r.u8()) % nb
		l := x.length(p.buf)
		p.off = 4 * (r.u16() % (l/4 + 1))
		p.threads = [8]uint64{1, 32, 33, 256, 1024, 7, 3, 64}[r.u8()%8]
		p.groups = 1 + r.u8()%4
		if fl := (l - p.off) / 4; p.groups*p.threads > fl {
			p.groups = fl / p.threads
			if p.groups == 0 {
				p.groups, p.threads = 1, fl
			}
		}
		switch bad % 32 {
		case 1:
			p.groups = 0
		case 2:
			p.threads = 2048
		case 3:
			p.off = l + 4
		case 4:
			p.threads = 0
		}
	case 6, 7:
		p.kind = fpWords
		p.buf = int(r.u8()) % nb
		l := x.length(p.buf)
		p.off = 8 * (r.u16() % (l/8 + 1))
		p.val = r.u64()
		p.entries = int(1 + r.u8()%3)
		p.nops = int(r.u8() % 4)
		p.rel = p.off+8 <= l && (x.bufs[p.buf].b.Address()+p.off)%8 == 0 && x.slots < 1<<16/32-1
		if !p.rel {
			p.entries = 0
		} else {
			x.slots++
			p.slot = x.slots
		}
		p.odd = bad%32 == 1
	}
	return p
}

// rowsLen is the bytes that rows rows of n bytes span, pitch apart (0:
// n), without the offset.
func (x *fuzzRun) rowsLen(rows, pitch, n uint64) uint64 {
	if pitch == 0 {
		pitch = n
	}
	if rows == 0 || n == 0 {
		return 0
	}
	return (rows-1)*pitch + n
}

// overlaps reports whether a copy within one buffer reads bytes it writes.
func (x *fuzzRun) overlaps(p fuzzPart) bool {
	s0, d0 := p.srcOff, p.dstOff
	s1 := s0 + x.rowsLen(p.rows, p.srcPitch, p.rowBytes)
	d1 := d0 + x.rowsLen(p.rows, p.dstPitch, p.rowBytes)
	return s0 < d1 && d0 < s1
}

// rigPart is the rig part of p.
func (x *fuzzRun) rigPart(p *fuzzPart) rig.Part {
	var rp rig.Part
	switch p.kind {
	case fpCopy:
		if p.rows == 1 && p.srcPitch == 0 && p.dstPitch == 0 {
			rp = rig.Copy(p.src, p.srcOff, p.dst, p.dstOff, p.rowBytes)
		} else {
			rp = rig.CopyRows(rig.Rows{Src: p.src, Dst: p.dst, SrcOffset: p.srcOff, DstOffset: p.dstOff,
				RowBytes: p.rowBytes, Rows: p.rows, SrcPitch: p.srcPitch, DstPitch: p.dstPitch})
		}
	case fpFill:
		rp = rig.FillBytes(p.dst, p.dstOff, p.rowBytes, p.b)
	case fpLaunch:
		rp = rig.Launch(x.twice, 8, rig.ReadWrite(p.buf, 0).Plus(p.off))
	case fpWords:
		var words []uint32
		refs := []rig.Ref{rig.Uses(len(x.bufs), rig.Reads)}
		if p.rel {
			// The segment, a release of val into the buffer, in a slot of
			// words of its own that no later part writes.
			seg := x.words.Address() + uint64(32*p.slot)
			b := hw.Release(make([]uint32, 0, 8), x.drv.gen, x.bufs[p.buf].b.Address()+p.off, p.val)
			for i, w := range b {
				binary.LittleEndian.PutUint32(x.words.Bytes()[32*p.slot+4*i:], w)
			}
			e0, e1 := hw.Segment(seg, uint32(len(b)), hw.Subroutine, false).Words()
			for range p.entries {
				words = append(words, e0, e1)
			}
			refs = append(refs, rig.Uses(p.buf, rig.Writes))
		}
		for range p.nops {
			words = append(words, 0, 0)
		}
		if p.odd {
			words = append(words, 0)
		}
		rp = rig.Words(words, refs...)
	}
	if p.queue >= 0 {
		rp = rp.On(p.queue)
	}
	if p.after >= 0 {
		rp = rp.After(p.after)
	}
	return rp
}

// end is one past the last byte of rows of n bytes pitch apart from off,
// and whether it lies within 2^64, as rig computes it: off where the rows
// hold no byte, since rig refuses an empty copy or fill past its buffer.
func fuzzEnd(off, rows, pitch, n uint64) (uint64, bool) {
	if rows == 0 || n == 0 {
		return off, true
	}
	if pitch == 0 {
		pitch = n
	}
	if rows > 1 && pitch > (math.MaxUint64-n)/(rows-1) {
		return 0, false
	}
	e := (rows-1)*pitch + n
	if e > math.MaxUint64-off {
		return 0, false
	}
	return e + off, true
}

// queueOf is the queue part p runs on.
func queueOf(p *fuzzPart) int {
	if p.queue >= 0 {
		return p.queue
	}
	if p.kind == fpCopy || p.kind == fpFill {
		return device.Copy
	}
	return device.Compute
}

// asKernel reports whether the driver runs copy part p as its copy kernel.
func (x *fuzzRun) asKernel(p *fuzzPart) bool {
	if x.drv.copyK == nil || (p.kind != fpCopy && p.kind != fpFill) || p.rows == 0 || p.rowBytes == 0 {
		return false
	}
	pitch := func(v uint64) uint64 {
		if v == 0 {
			return p.rowBytes
		}
		return v
	}
	hi, n := bits.Mul64(p.rows, p.rowBytes)
	if hi != 0 || n < kernelMin {
		return false
	}
	if p.rows > 1 && (pitch(p.dstPitch) != p.rowBytes || (!p.fill && pitch(p.srcPitch) != p.rowBytes)) {
		// rig_copy_rows or rig_fill_rows: rows of rowsKernelMin or more,
		// a copy's spans apart where it stays in one buffer.
		if p.rowBytes < rowsKernelMin || !p.fill && p.src == p.dst && x.overlaps(*p) {
			return false
		}
	}
	own := func(i int) bool { return x.bufs[i].b.Kind() == device.DeviceMemory && x.bufs[i].host == nil }
	return own(p.dst) && (p.fill || own(p.src))
}

// verdict is what the model expects of a submission: invalid (rig's
// NewSubmission refuses it), or the part refused (-1: none).
func (x *fuzzRun) verdict(parts []fuzzPart) (invalid bool, refused int) {
	n := len(parts)
	for i := range parts {
		p := &parts[i]
		if p.after >= n || p.after >= i {
			return true, -1 // After of no earlier part
		}
		if p.kind == fpCopy || p.kind == fpFill {
			if _, ok := fuzzEnd(p.dstOff, p.rows, p.dstPitch, p.rowBytes); !ok {
				return true, -1
			}
			if _, ok := fuzzEnd(p.srcOff, p.rows, p.srcPitch, p.rowBytes); !ok && !p.fill {
				return true, -1
			}
		}
	}
	// rig's checks of the buffers, part by part.
	for i := range parts {
		p := &parts[i]
		switch p.kind {
		case fpCopy, fpFill:
			if e, _ := fuzzEnd(p.srcOff, p.rows, p.srcPitch, p.rowBytes); !p.fill && e > x.length(p.src) {
				return false, i
			}
			if e, _ := fuzzEnd(p.dstOff, p.rows, p.dstPitch, p.rowBytes); e > x.length(p.dst) {
				return false, i
			}
		case fpLaunch:
			if p.off > x.length(p.buf) {
				return false, i
			}
		}
	}
	// The driver's.
	for i := range parts {
		p := &parts[i]
		q := queueOf(p)
		if q != device.Compute && q != device.Copy {
			return false, i
		}
		switch p.kind {
		case fpLaunch:
			if q != device.Compute || p.groups == 0 || p.threads == 0 || p.threads > 1024 {
				return false, i
			}
		case fpCopy, fpFill:
			if !p.fill && p.rows > 1 && p.srcPitch != 0 && p.srcPitch < p.rowBytes {
				return false, i // rows read that overlap
			}
			if q == device.Compute && x.cfg.NoComputeCopies && p.rows != 0 && p.rowBytes != 0 && !x.asKernel(p) {
				return false, i
			}
		case fpWords:
			if p.odd {
				return false, i
			}
		}
	}
	return false, -1
}

// apply runs the parts on the model, in order: rig orders every two parts
// that use a buffer one of them writes, and the parts of no such pair
// touch no byte in common.
func (x *fuzzRun) apply(parts []fuzzPart) {
	for i := range parts {
		p := &parts[i]
		switch p.kind {
		case fpCopy, fpFill:
			sp, dp := p.srcPitch, p.dstPitch
			if sp == 0 {
				sp = p.rowBytes
			}
			if dp == 0 {
				dp = p.rowBytes
			}
			dst := x.bufs[p.dst].model
			for r := range p.rows {
				if p.rowBytes == 0 {
					break
				}
				row := dst[p.dstOff+r*dp : p.dstOff+r*dp+p.rowBytes]
				if p.fill {
					for j := range row {
						row[j] = p.b
					}
				} else {
					copy(row, x.bufs[p.src].model[p.srcOff+r*sp:])
				}
			}
		case fpLaunch:
			m := x.bufs[p.buf].model
			for j := range p.groups * p.threads {
				a := p.off + 4*j
				v := math.Float32frombits(binary.LittleEndian.Uint32(m[a:]))
				binary.LittleEndian.PutUint32(m[a:], math.Float32bits(2*v))
			}
		case fpWords:
			if p.rel && p.entries > 0 {
				binary.LittleEndian.PutUint64(x.bufs[p.buf].model[p.off:], p.val)
			}
		}
	}
}

// submit submits the parts and checks the answer against the model. Under
// a pause a submission that must wait for the device's progress resumes
// it.
func (x *fuzzRun) submit(parts []fuzzPart, flags uint64) {
	t := x.t
	t.Helper()
	if x.paused {
		words := 0
		for _, p := range parts {
			words += p.entries + p.nops
		}
		if len(parts) > 4 || words > 4 {
			x.resume()
		}
	}
	if flags&0x10 != 0 {
		x.dev.SetTimed(!x.dev.Timed())
	}
	rps := make([]rig.Part, len(parts))
	for i := range parts {
		rps[i] = x.rigPart(&parts[i])
	}
	invalid, refused := x.verdict(parts)
	s, err := rig.NewSubmission(x.dev, rps...)
	if invalid {
		if !errors.Is(err, rig.ErrInvalid) {
			t.Fatalf("NewSubmission of %+v: %v, want an error matching ErrInvalid", parts, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("NewSubmission of %+v: %v", parts, err)
	}
	for {
		run := s.Take()
		for i, p := range parts {
			if p.kind == fpLaunch {
				run.Groups(i, int(p.groups), 1, 1)
				run.Threads(i, int(p.threads), 1, 1)
			}
		}
		ctx := x.ctx
		cancel := func() {}
		if x.paused {
			ctx, cancel = context.WithTimeout(x.ctx, 20*time.Millisecond)
		}
		pt, err := run.Submit(ctx, x.all...)
		cancel()
		if err != nil && x.paused && errors.Is(err, context.DeadlineExceeded) {
			// The device has no room while paused: nothing was
			// submitted.
			x.resume()
			continue
		}
		if refused >= 0 {
			var re *rig.RefusalError
			if !errors.As(err, &re) || re.Part != refused {
				t.Fatalf("submit of %+v: %v, want the refusal of part %d", parts, err, refused)
			}
			return
		}
		if err != nil {
			t.Fatalf("submit of %+v: %v", parts, err)
		}
		x.points = append(x.points, pt)
		break
	}
	x.apply(parts)
	if flags%4 == 1 {
		x.waitAndCheck(0)
	}
}

// waitAndCheck waits for a point (the latest where pick is 0) and checks
// every buffer's bytes against the model.
func (x *fuzzRun) waitAndCheck(pick uint64) {
	x.t.Helper()
	x.resume()
	if len(x.points) > 0 {
		p := x.points[len(x.points)-1-int(pick%uint64(len(x.points)))]
		if err := p.Wait(x.ctx); err != nil {
			x.t.Fatalf("wait: %v", err)
		}
	}
	x.checkAll()
	x.settle()
}

// settle checks the stamps Settle returns: in value order, after those it
// returned before, none ending before it starts.
func (x *fuzzRun) settle() {
	x.t.Helper()
	st, err := x.dev.Settle(nil)
	if err != nil {
		x.t.Fatalf("settle: %v", err)
	}
	for _, s := range st {
		if x.settled != 0 && !device.AtLeast(s.Value, x.settled+1) {
			x.t.Fatalf("settle returned value %d after value %d", s.Value, x.settled)
		}
		if s.End < s.Start {
			x.t.Fatalf("the stamp of value %d ends at %d, before its start at %d", s.Value, s.End, s.Start)
		}
		x.settled = s.Value
	}
}

// checkAll checks every buffer's bytes against the model.
func (x *fuzzRun) checkAll() {
	x.t.Helper()
	for i, fb := range x.bufs {
		got := make([]byte, len(fb.model))
		if err := rig.Download(x.ctx, got, fb.b, 0); err != nil {
			x.t.Fatalf("download of buffer %d: %v", i, err)
		}
		if !bytes.Equal(got, fb.model) {
			j := 0
			for got[j] == fb.model[j] {
				j++
			}
			k := len(got) - 1
			for got[k] == fb.model[k] {
				k--
			}
			x.t.Fatalf("buffer %d (%s, %d bytes): bytes %d to %d differ from the model: got %x, want %x", i,
				fb.b.Kind(), len(got), j, k, got[j:min(k+1, j+32)], fb.model[j:min(k+1, j+32)])
		}
	}
}

// upload writes bytes the input spells into a buffer; one out of range is
// an error matching ErrInvalid.
func (x *fuzzRun) upload(r *fuzzBytes) {
	x.t.Helper()
	x.resume()
	i := int(r.u8()) % len(x.bufs)
	fb := x.bufs[i]
	l := uint64(len(fb.model))
	off := r.u24() % (l + 2)
	n := r.u24() % (l + 2)
	b := make([]byte, n)
	v := byte(r.u8())
	for j := range b {
		b[j] = v + byte(j)
	}
	err := rig.Upload(x.ctx, fb.b, int(off), b)
	if off+n > l {
		if !errors.Is(err, rig.ErrInvalid) {
			x.t.Fatalf("upload of %d bytes at %d of a buffer of %d: %v, want an error matching ErrInvalid", n, off, l, err)
		}
		return
	}
	if err != nil {
		x.t.Fatalf("upload: %v", err)
	}
	copy(fb.model[off:], b)
}

// download reads bytes of a buffer and checks them against the model; a
// range out of the buffer is an error matching ErrInvalid.
func (x *fuzzRun) download(r *fuzzBytes) {
	x.t.Helper()
	x.resume()
	i := int(r.u8()) % len(x.bufs)
	fb := x.bufs[i]
	l := uint64(len(fb.model))
	off := r.u24() % (l + 2)
	n := r.u24() % (l + 2)
	got := make([]byte, n)
	err := rig.Download(x.ctx, got, fb.b, int(off))
	if off+n > l {
		if !errors.Is(err, rig.ErrInvalid) {
			x.t.Fatalf("download of %d bytes at %d of a buffer of %d: %v, want an error matching ErrInvalid", n, off, l, err)
		}
		return
	}
	if err != nil {
		x.t.Fatalf("download: %v", err)
	}
	if !bytes.Equal(got, fb.model[off:off+n]) {
		x.t.Fatalf("download of %d bytes at %d of buffer %d: differs from the model", n, off, i)
	}
}

// big submits a submission of many parts: fills, launches, Words of many
// entries, or all three, which outgrow small rings.
func (x *fuzzRun) big(r *fuzzBytes) {
	kind := r.u8()
	n := int(50 + r.u16()%400)
	var parts []fuzzPart
	nb := uint64(len(x.bufs))
	if kind%4 == 0 || kind%4 == 3 {
		for i := range n {
			d := int(uint64(i) % nb)
			l := x.length(d)
			off := (uint64(i) * 7) % l
			q := int((kind>>2 + uint64(i)) % 2)
			if x.cfg.NoComputeCopies {
				q = device.Copy
			}
			parts = append(parts, fuzzPart{kind: fpFill, queue: q, after: -1, dst: d, dstOff: off, rowBytes: min(l-off, 1+uint64(i)%13), rows: 1, fill: true, b: byte(i)})
		}
	}
	if kind%4 == 1 || kind%4 == 3 {
		k := 10 + n%40
		for i := range k {
			d := int(uint64(i) % nb)
			if x.length(d) < 4 {
				continue
			}
			parts = append(parts, fuzzPart{kind: fpLaunch, queue: -1, after: -1, buf: d,
				off: 4 * (uint64(i*5) % (x.length(d) / 4)), groups: 1, threads: 1})
		}
	}
	if kind%4 == 2 || kind%4 == 3 {
		parts = append(parts, fuzzPart{kind: fpWords, queue: int(kind>>2) % 2, after: -1, nops: 64 + n})
	}
	x.submit(parts, 1)
}

// launch runs a launch on the fake: the driver's copy kernels, as their
// source does it thread by thread, or else twice.
func (x *fuzzRun) launch(q hw.Qmd, bank []byte, twicePO int) {
	f := x.f
	g, b := q.Grid(), q.Block()
	threads := uint64(g[0]) * uint64(b[0]) * uint64(g[1]) * uint64(b[1]) * uint64(g[2]) * uint64(b[2])
	if k := x.drv.copyK; k != nil && (q.Program() == k.copy.Code || q.Program() == k.fill.Code) {
		fill := q.Program() == k.fill.Code
		po := k.copy.Data.(*kfunc).l.Kernel.ParamOffset
		if fill {
			po = k.fill.Data.(*kfunc).l.Kernel.ParamOffset
		}
		dstA := binary.LittleEndian.Uint64(bank[po:])
		arg := binary.LittleEndian.Uint64(bank[po+8:])
		n := binary.LittleEndian.Uint64(bank[po+16:])
		dst := f.mem(dstA, n)
		var src []byte
		if !fill {
			src = f.mem(arg, n)
		}
		if dst == nil || (!fill && src == nil) {
			x.kernelErr(fmt.Errorf("a copy kernel of %d bytes from 0x%x to 0x%x outside the fake's memory", n, arg, dstA))
			return
		}
		if err := copyKernel(dst, src, dstA, arg, n, threads, fill); err != nil {
			x.kernelErr(err)
		}
		return
	}
	if k := x.drv.copyK; k != nil && (q.Program() == k.copyRows.Code || q.Program() == k.fillRows.Code) {
		fill := q.Program() == k.fillRows.Code
		e := k.copyRows
		if fill {
			e = k.fillRows
		}
		po := e.Data.(*kfunc).l.Kernel.ParamOffset
		u := func(i int) uint64 { return binary.LittleEndian.Uint64(bank[po+8*i:]) }
		dstA, arg, n, rows, dp := u(0), u(1), u(2), u(3), u(4)
		sp := uint64(0)
		if !fill {
			sp = u(5)
		}
		xt := uint64(g[0]) * uint64(b[0])
		for r := range rows {
			sa := arg
			if !fill {
				sa = arg + r*sp
			}
			dst := f.mem(dstA+r*dp, n)
			var src []byte
			if !fill {
				src = f.mem(sa, n)
			}
			if dst == nil || (!fill && src == nil) {
				x.kernelErr(fmt.Errorf("a rows kernel's row %d outside the fake's memory", r))
				return
			}
			if err := copyKernel(dst, src, dstA+r*dp, sa, n, xt, fill); err != nil {
				x.kernelErr(err)
			}
		}
		return
	}
	xa := binary.LittleEndian.Uint64(bank[twicePO:])
	xs := f.mem(xa, 4*threads)
	if xs == nil {
		x.kernelErr(fmt.Errorf("twice over %d floats at 0x%x outside the fake's memory", threads, xa))
		return
	}
	for i := range threads {
		v := math.Float32frombits(binary.LittleEndian.Uint32(xs[4*i:]))
		binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(2*v))
	}
}

func (x *fuzzRun) kernelErr(err error) {
	x.kmu.Lock()
	if x.kerr == nil {
		x.kerr = err
	}
	x.kmu.Unlock()
}

// copyKernel runs rig_copy (or rig_fill, whose byte is arg) of kernels/copy.cu
// over threads threads, each its own loop: dst and src are the n bytes at
// GPU addresses dstA and arg. It refuses a 16-byte access that is not
// aligned to 16 bytes, which faults on the GPU.
func copyKernel(dst, src []byte, dstA, arg, n, threads uint64, fill bool) error {
	head := (16 - dstA&15) & 15
	head = min(head, n)
	if !fill && arg&15 != dstA&15 {
		for tid := range threads {
			for i := tid; i < n; i += threads {
				dst[i] = src[i]
			}
		}
		return nil
	}
	body := (n - head) / 16
	if body > 0 && ((dstA+head)&15 != 0 || (!fill && (arg+head)&15 != 0)) {
		return fmt.Errorf("a copy kernel's vectors at 0x%x from 0x%x are not aligned", dstA+head, arg+head)
	}
	tail := head + body*16
	for tid := range threads {
		for i := tid; i < body; i += threads {
			at := head + 16*i
			if fill {
				for j := range uint64(16) {
					dst[at+j] = byte(arg)
				}
			} else {
				copy(dst[at:at+16], src[at:at+16])
			}
		}
		for _, j := range []uint64{tid, tail + tid} {
			if (j == tid && tid < head) || (j == tail+tid && tid < n-tail) {
				if fill {
					dst[j] = byte(arg)
				} else {
					dst[j] = src[j]
				}
			}
		}
	}
	return nil
}

// fuzzSpell spells an input for runFuzzSequence.
type fuzzSpell []byte

func (s *fuzzSpell) b(vs ...uint64) *fuzzSpell {
	for _, v := range vs {
		*s = append(*s, byte(v))
	}
	return s
}

func (s *fuzzSpell) u16(v uint64) *fuzzSpell { return s.b(v, v>>8) }
func (s *fuzzSpell) u24(v uint64) *fuzzSpell { return s.b(v, v>>8, v>>16) }

// The spelled operations: each takes the bytes that follow it.
const (
	opParts  = 0 // count byte (1 + c%4 parts), then each part, then flags (1: wait; 0x10: stamps toggled first)
	opWait   = 3 // pick
	opUp     = 4 // buffer, offset (3 bytes), length (3 bytes), first byte
	opDown   = 5 // buffer, offset (3 bytes), length (3 bytes)
	opBig    = 6 // kind, count (2 bytes)
	opSwitch = 7 // 0, 1: the fake runs the channels first to last, last to first; 2 pause; 3 resume
)

// copyOf spells a copy of one row: kind 0, queue byte q, no straying.
func (s *fuzzSpell) copyOf(q, src, dst, so, do, n uint64) *fuzzSpell {
	return s.b(0, q, 0, src, dst).u24(so).u24(do).u24(n)
}

// fillOf spells a fill.
func (s *fuzzSpell) fillOf(q, dst, off, n, v uint64) *fuzzSpell {
	return s.b(3, q, 0, dst).u24(off).u24(n).b(v)
}

// launchOf spells a launch of twice over groups of the threads of index
// ti (1, 32, 33, 256, 1024, 7, 3, 64) at float f of buffer buf.
func (s *fuzzSpell) launchOf(q, buf, f, ti, groups uint64) *fuzzSpell {
	return s.b(5, q, 0, buf).u16(f).b(ti, groups-1)
}

// wordsOf spells Words releasing v at word w of buffer buf, with 1+e
// entries and nops NOP entries.
func (s *fuzzSpell) wordsOf(q, buf, w, v, e, nops uint64) *fuzzSpell {
	return s.b(6, q, 0, buf).u16(w).u24(v).u24(v>>24).u16(v>>48).b(e, nops)
}

// fuzzCorpus is the inputs the plain test runs: a few that spell each
// operation, and some of random bytes.
func fuzzCorpus() [][]byte {
	var ins [][]byte
	add := func(s *fuzzSpell) { ins = append(ins, *s) }

	// Small rings; a Device, a Pinned, a Mapped buffer and mapped host
	// memory at byte 5 of a page; parts of every kind on both queues,
	// with Afters; waits, a Download and an Upload.
	s := &fuzzSpell{}
	s.b(0, 2, 0, 4, 1, 3, 2, 4, 0x53, 2)
	s.b(opParts, 2).copyOf(0, 0, 1, 3, 1, 150).fillOf(3, 2, 7, 1001, 0x5a).launchOf(0, 0, 3, 2, 3).b(1)
	s.b(opParts, 3)
	s.b(2, 1, 0, 2, 3, 3).u24(10).u24(0).u24(7).b(1, 3) // rows: 4 of 7 bytes, pitches 5 and 10
	s.wordsOf(6, 2, 3, 0x0123456789abcdef, 1, 2)
	s.fillOf(1, 0, 1, 4000, 9)
	s.copyOf(9|1<<4, 0, 3, 0, 2, 60).b(0)
	s.b(opWait, 0, opDown, 0).u24(0).u24(100)
	s.b(opUp, 2).u24(17).u24(33).b(1)
	s.b(opWait, 0)
	add(s)

	// Big submissions of each kind on small rings: the segment rings and
	// the launch ring grow, the channels open anew.
	s = &fuzzSpell{}
	s.b(0, 0, 0, 4, 1, 4)
	s.b(opBig, 0).u16(300).b(opBig, 1).u16(30).b(opBig, 2).u16(100).b(opBig, 3).u16(200)
	s.b(opParts, 0).copyOf(0, 0, 1, 0, 0, 4096).b(1)
	add(s)

	// Timed values on small rings: the stamps on, parts on both queues,
	// big submissions that grow the rings, the stamps off again.
	s = &fuzzSpell{}
	s.b(0, 0, 0, 4, 1, 4)
	s.b(opParts, 2).fillOf(1, 0, 0, 100, 1).copyOf(3, 0, 1, 0, 0, 64).launchOf(0, 1, 0, 1, 1).b(0x10)
	for i := range uint64(6) {
		s.b(opParts, 0).fillOf(1+2*(i%2), 0, i, 50, i).b(0)
	}
	s.b(opBig, 3).u16(120)
	s.b(opParts, 0).launchOf(0, 1, 4, 0, 1).b(0x11)
	s.b(opParts, 0).copyOf(3, 0, 1, 0, 0, 100).b(1)
	add(s)

	// Default rings: the copy kernels between two Device buffers of 300
	// KiB, aligned and not, a fill, a kernel's copy on COMPUTE:0, and
	// copies by the copy engine from Pinned memory.
	for _, c0 := range []uint64{1, 1 | 32} {
		s = &fuzzSpell{}
		s.b(c0, 1, 0, 7, 0, 7, 1, 7)
		s.b(opParts, 3).copyOf(0, 2, 0, 0, 0, 300<<10).copyOf(0, 0, 1, 16, 32, 280<<10).
			fillOf(0, 1, 5, 256<<10, 0x77).copyOf(1, 1, 0, 3, 5, 270<<10).b(1)
		s.b(opParts, 1).copyOf(1, 0, 1, 0, 0, 290<<10).copyOf(1, 2, 1, 0, 0, 1000).b(1)
		add(s)
	}

	// Rows with gaps between them, 140,000 bytes each, between two Device
	// buffers: by the kernel of rows, on COPY:0, and with no copy engine
	// on COMPUTE:0 (NoComputeCopies) by the kernel there too.
	for _, c := range []struct{ c0, q uint64 }{{1, 0}, {1 | 32, 1}} {
		s = &fuzzSpell{}
		s.b(c.c0, 1, 0, 7, 0, 7, 1, 7)
		s.b(opParts, 0).b(2, 3-2*c.q, 0, 0, 1, 1).u24(0).u24(0).u24(140000).b(0, 3).b(1)
		s.b(opWait, 0)
		add(s)
	}

	// Paused: values pile up in flight; the fake runs the channels last to
	// first, then resumes.
	s = &fuzzSpell{}
	s.b(4, 1, 0, 4, 1, 4)
	s.b(opSwitch, 1, opSwitch, 2)
	for i := range uint64(3) {
		s.b(opParts, 2).fillOf(1, 0, i, 100, i).copyOf(3, 0, 1, 0, 0, 500).launchOf(2, 1, i, 1, 1).b(0)
	}
	s.b(opSwitch, 3, opWait, 1, opWait, 0)
	add(s)

	// Refusals and invalid submissions between valid ones: an After the
	// submission lacks, a copy past its buffer, a launch on COPY:0, a
	// queue the device lacks, entries of an odd number of words, an
	// offset past 2^64.
	s = &fuzzSpell{}
	s.b(0, 0, 1, 3, 1, 3)
	s.b(opParts, 1).fillOf(0, 0, 0, 10, 1).copyOf(6|2<<4, 0, 1, 0, 0, 10).b(0)
	s.b(opParts, 0).b(0, 0, 1, 0, 1).u24(0).u24(0).u24(100).b(0)
	s.b(opParts, 0).launchOf(3, 0, 0, 0, 1).b(0)
	s.b(opParts, 1).fillOf(0, 0, 0, 10, 1).fillOf(5|1<<7, 0, 0, 10, 1).b(0)
	s.b(opParts, 0).b(6, 0, 1, 0).u16(0).u24(0).u24(0).u16(0).b(0, 0).b(0)
	s.b(opParts, 0).b(3, 0, 2, 0).u24(0).u24(10).b(1, 0).b(0)
	s.b(opParts, 0).fillOf(0, 1, 3, 50, 2).b(1)
	add(s)

	// A shared group's subcontext, launches not linked, rings in Pinned
	// memory, no launch releasing its own value.
	s = &fuzzSpell{}
	s.b(2|4|8|64, 1, 0, 4, 1, 4, 2, 3)
	s.b(opParts, 3).launchOf(0, 0, 0, 3, 2).launchOf(0, 0, 512, 1, 1).copyOf(0, 0, 1, 0, 0, 2048).fillOf(1, 2, 1, 100, 3).b(1)
	s.b(opParts, 1).launchOf(0, 1, 0, 4, 1).launchOf(0, 1, 4, 0, 1).b(1)
	add(s)

	rnd := rand.New(rand.NewPCG(1, 2))
	for range 12 {
		b := make([]byte, 60+rnd.IntN(200))
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		ins = append(ins, b)
	}
	return ins
}
