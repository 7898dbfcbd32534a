package rig_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// fuzzInput hands out the integers of a fuzz input, byte by byte: small
// values mostly, and the edges of their types now and then. An exhausted
// input reads as zeros.
type fuzzInput struct{ b []byte }

func (z *fuzzInput) byte() int {
	if len(z.b) == 0 {
		return 0
	}
	v := z.b[0]
	z.b = z.b[1:]
	return int(v)
}

// intEdges are the ints at the edges of what the API takes.
var intEdges = []int{-1, -2, -8, math.MinInt, math.MaxInt, math.MaxInt - 7, math.MaxInt32,
	math.MaxUint32, 1 << 32, 1 << 31, rig.MaxBuffers - 1, rig.MaxBuffers, rig.MaxParams, rig.MaxParams + 1, 48 << 10, 48<<10 + 1}

// int is a value below small, or one of intEdges.
func (z *fuzzInput) int(small int) int {
	b := z.byte()
	if b >= 256-len(intEdges) {
		return intEdges[255-b]
	}
	return b % small
}

var u64Edges = []uint64{math.MaxUint64, math.MaxUint64 - 7, 1 << 63, 1 << 32, 1<<32 - 1, 4096, 257, 256, 252, 250, 200}

// u64 is a value below small, or one of u64Edges.
func (z *fuzzInput) u64(small int) uint64 {
	b := z.byte()
	if b >= 256-len(u64Edges) {
		return u64Edges[255-b]
	}
	return uint64(b % small)
}

// word is eight bytes of the input, little-endian.
func (z *fuzzInput) word() uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(z.byte()) << (8 * i)
	}
	return v
}

// dimEdges are counts of groups or threads that a run refuses or the host
// device never runs: a grid the device runs is at most 8 along each axis,
// so that no input runs for long.
var dimEdges = []int{-1, math.MinInt, math.MaxInt, math.MaxUint32, 1 << 32, 1 << 31, 1025}

func (z *fuzzInput) dim() int {
	b := z.byte()
	if b >= 256-len(dimEdges) {
		return dimEdges[255-b]
	}
	return b % 9
}

var sharedEdges = []int{-1, math.MinInt, math.MaxInt, math.MaxUint32, 1 << 32, 48 << 10, 48<<10 + 1}

func (z *fuzzInput) shared() int {
	b := z.byte()
	if b >= 256-len(sharedEdges) {
		return sharedEdges[255-b]
	}
	return b * 100
}

// fuzzBuf is a buffer of the fuzzed device and the region that holds it.
type fuzzBuf struct {
	b    *rig.Buffer
	kind device.Memory
	n    int    // its length
	base uint64 // the first address of its region
	size int    // the bytes of its region
	off  int    // its first byte's distance from base
}

// fuzzRig is the device a fuzz target submits to, with its functions and
// buffers, opened again after a loss.
type fuzzRig struct {
	d     *rig.Device
	other *rig.Device     // a second device, whose functions d refuses
	fns   []*rig.Function // empty, twice, copy, fill, args, untyped, copy of 32 untyped bytes, other's empty
	bufs  []fuzzBuf
	page  []byte // the pages a MapHost buffer borrows
	fills struct {
		sync.Mutex
		args []uintptr
	}
}

func (fr *fuzzRig) shut() error {
	for _, d := range []*rig.Device{fr.d, fr.other} {
		if d == nil {
			continue
		}
		_ = d.Close()
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			return errors.New("a closed device did not give its memory back")
		}
	}
	fr.d, fr.other, fr.fns, fr.bufs = nil, nil, nil, nil
	return nil
}

func (fr *fuzzRig) open() error {
	if err := fr.shut(); err != nil {
		return err
	}
	var err error
	cfg := hostdev.Config{Ring: 64, Grow: true, MapsHost: true}
	cfg.Name = "fuzzrun-" + itoa(names.Add(1))
	if fr.d, err = rig.Open(context.Background(), hostdev.Open(cfg)); err != nil {
		return err
	}
	cfg.Name = "fuzzrun-" + itoa(names.Add(1))
	if fr.other, err = rig.Open(context.Background(), hostdev.Open(cfg)); err != nil {
		return err
	}
	resolve := func(d *rig.Device, img []byte, names ...string) error {
		im, err := d.LoadImage(img)
		if err != nil {
			return err
		}
		for _, n := range names {
			f, err := im.Resolve(n)
			if err != nil {
				return err
			}
			fr.fns = append(fr.fns, f)
		}
		return nil
	}
	kernels := []string{"empty", "twice", "copy", "fill", "args", "untyped"}
	if err := resolve(fr.d, hostdev.ImageOf(kernels...), kernels...); err != nil {
		return err
	}
	if err := resolve(fr.d, hostdev.ImageOf("copy:32"), "copy"); err != nil {
		return err
	}
	if err := resolve(fr.other, hostdev.ImageOf("empty"), "empty"); err != nil {
		return err
	}
	for _, c := range []struct {
		kind device.Memory
		n    int
	}{{device.PinnedMemory, 256}, {device.PinnedMemory, 256}, {device.DeviceMemory, 256}, {device.MappedMemory, 250}} {
		b, err := fr.d.Alloc(c.kind, c.n)
		if err != nil {
			return err
		}
		fr.bufs = append(fr.bufs, fuzzBuf{b: b, kind: c.kind, n: c.n, base: b.Address(), size: (c.n + 3) &^ 3})
	}
	// A buffer 5 bytes into a page of its own: its region is the page.
	if fr.page == nil {
		const page = 4096
		mem := make([]byte, 3*page)
		skip := (page - int(uintptr(unsafe.Pointer(&mem[0]))%page)) % page
		fr.page = mem[skip : skip+page : skip+page]
	}
	b, err := fr.d.MapHost(fr.page[5:205:205])
	if err != nil {
		return err
	}
	fr.bufs = append(fr.bufs, fuzzBuf{b: b, kind: device.PinnedMemory, n: 200, base: uint64(uintptr(unsafe.Pointer(&fr.page[0]))), size: 4096, off: 5})
	return nil
}

// fill is the hostdev.FillFunc of the fuzzed Fill parts: it records its
// argument.
func (fr *fuzzRig) fill(arg uintptr) {
	fr.fills.Lock()
	fr.fills.args = append(fr.fills.args, arg)
	fr.fills.Unlock()
}

// works submits a fill of buffer 0 and checks its bytes.
func (fr *fuzzRig) works(ctx context.Context, v byte) error {
	s, err := rig.NewSubmission(fr.d, rig.FillBytes(0, 0, 256, v))
	if err != nil {
		return err
	}
	p, err := s.Take().Submit(ctx, fr.bufs[0].b)
	if err == nil {
		err = p.Wait(ctx)
	}
	if err != nil {
		return err
	}
	for i, c := range fr.bufs[0].b.Bytes() {
		if c != v {
			return errors.New("the fill of a known-good submission left byte " + itoa(int64(i)) + " unfilled")
		}
	}
	return nil
}

// fuzzPart is what the model knows of a part it built.
type fuzzPart struct {
	kind    device.PartKind
	fn      int // index in fuzzRig.fns
	params  int
	refs    []rig.Ref // At resolved from parameter indices
	queue   int
	after   int // the index of the part it runs after, plus 1
	src     int
	dst     int
	srcOff  uint64
	dstOff  uint64
	rowB    uint64
	rows    uint64
	srcP    uint64
	dstP    uint64
	filling bool
	fillB   byte
	fill32  bool // FillUint32: fillV's words
	fillV   uint32
	fillOK  bool // a Fill of fuzzRig.fill
	fillArg uintptr
	words   int

	groups, threads [3]int
	shared          int
	shadow          []byte // the parameters the run should hold
}

// FuzzRun builds a submission of every kind of part from fuzzed integers
// (buffer indices, offsets, lengths, rows, pitches, parameter bytes and
// indices, queues, Afters), sets fuzzed groups, threads, shared memory and
// parameters on a run, and submits it against small buffers of a host
// device in fuzzed order, aliases and nils among them. A model predicts
// each outcome: the run's own errors match ErrInvalid, a refused part is
// a *RefusalError that names it, and work that runs leaves exactly the
// bytes the model computes, which Download reads back. A device that
// was not lost runs a known-good submission afterwards.
func FuzzRun(f *testing.F) {
	// A copy, a fill, launches of args and fill with their parameters set
	// by index, and a Fill; the run's buffers in order. A second run of
	// the submission, through Do, sets only the fill's count.
	f.Add([]byte{
		2, 0, 8, 1, 16, 32, 0,
		4, 0, 100, 20, 7, 0,
		7, 4, 0, 0, 1, 40, 0,
		1, 3, 0, 0, 3, 0, 0,
		5, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0,
		6,
		2, 3, 2, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 1,
		2, 4, 4, 1, 2, 3, 4, 5, 6, 7, 8, 2,
		2, 5, 6, 3, 9, 8, 7,
		3, 4, 1, 20, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 5, 2, 1, 0xab,
		2, 0, 2, 1, 1, 1,
		4, 0, 1, 2, 3, 1,
		1, 3, 4, 1, 30, 0, 0, 0, 0, 0, 0, 0, 0,
		5, 0, 1, 2, 3, 4, 0})
	// Rows between Device and borrowed memory, a launch of copy within a
	// buffer, and a copy on the other queue of what it wrote.
	f.Add([]byte{
		3, 2, 4, 3, 1, 10, 5, 12, 20, 1, 0,
		7, 2, 1, 0, 4, 1, 0, 1, 0, 0, 100, 0,
		2, 0, 100, 1, 0, 50, 0,
		4, 3, 0, 8, 1, 0,
		0, 0, 0, 0, 0,
		2,
		1, 4, 2, 50, 0, 0, 0, 0, 0, 0, 0, 0,
		1, 0, 1, 1, 1, 0,
		5, 0, 1, 2, 3, 4})
	// Words, a Fill of a function of another type, a part after itself,
	// and a launch on the copy queue.
	f.Add([]byte{6, 2, 1, 0, 6, 3, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 2, 1, 0, 0, 0, 2, 1, 0, 0, 0, 0, 1, 1, 0})
	// Edges: indices and offsets past every limit.
	f.Add([]byte{0, 4, 255, 1, 3, 0, 250, 0, 2, 255, 254, 253, 252, 255, 0, 4, 1, 250, 1, 2, 0, 0, 9, 255, 250, 0, 10, 0, 249})
	f.Add([]byte{2, 0, 255, 1, 0, 248, 0, 3, 0, 1, 0, 0, 255, 2, 251, 250, 0, 9, 1, 0, 254, 255, 255, 1, 1, 2, 0})
	fr := &fuzzRig{}
	f.Cleanup(func() {
		if err := fr.shut(); err != nil {
			f.Error(err)
		}
	})
	if err := fr.open(); err != nil {
		f.Fatal(err)
	}
	salt := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		if fr.d.Err() != nil {
			if err := fr.open(); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// Each buffer starts each round with bytes of its own.
		mem := make([][]byte, len(fr.bufs))
		reset := func() {
			salt++
			for k, fb := range fr.bufs {
				mem[k] = make([]byte, fb.n)
				for j := range mem[k] {
					mem[k][j] = byte(k*37 + j*7 + salt)
				}
				if err := rig.Upload(ctx, fb.b, 0, mem[k]); err != nil {
					t.Fatalf("upload to buffer %d: %v", k, err)
				}
			}
			fr.fills.Lock()
			fr.fills.args = fr.fills.args[:0]
			fr.fills.Unlock()
		}
		reset()

		z := &fuzzInput{b: data}
		nb := len(fr.bufs)
		var parts []rig.Part
		var model []fuzzPart
		// ref makes a ref to a buffer index, and the model's copy of it,
		// whose At a ref by parameter takes from fn's layout (-2 where fn
		// has no such parameter, which NewSubmission refuses).
		ref := func(fn int) (r, m rig.Ref) {
			buf := z.int(nb + 1)
			arg, at := false, 0
			switch z.byte() % 8 {
			case 0:
				r = rig.Read(buf, z.int(48))
			case 1:
				r = rig.Write(buf, z.int(48))
			case 2:
				r = rig.ReadWrite(buf, z.int(48))
			case 3, 4, 5:
				k := z.int(8)
				r = []func(int, int) rig.Ref{rig.ReadArg, rig.WriteArg, rig.ReadWriteArg}[z.byte()%3](buf, k)
				arg, at = true, -2
				if fn >= 0 && fn < len(fr.fns) {
					if l := fr.fns[fn].Layout(); k >= 0 && k < len(l) {
						at = l[k].Offset
					}
				}
			case 6:
				r = rig.Uses(buf, rig.Access(z.byte()%5))
			case 7:
				r = rig.Ref{Buf: buf, At: z.int(48), Offset: z.u64(64), Access: rig.Access(z.byte() % 5)}
			}
			past := false
			if z.byte()%3 == 0 {
				off := z.u64(260)
				_, c := bits.Add64(r.Offset, off, 0)
				past = c != 0
				r = r.Plus(off)
			}
			m = r
			if arg {
				m.At = at
			}
			if past {
				// Offsets whose sum passes 2^64: NewSubmission
				// refuses the ref, as it does one at byte -2.
				m.At = -2
			}
			return r, m
		}
		refs := func(fn int) ([]rig.Ref, []rig.Ref) {
			var rs, ms []rig.Ref
			for range z.byte() % 4 {
				r, m := ref(fn)
				rs, ms = append(rs, r), append(ms, m)
			}
			return rs, ms
		}
		pickFn := func() (*rig.Function, int) {
			switch c := z.byte() % 11; {
			case c < len(fr.fns):
				return fr.fns[c], c
			case c == 8:
				return nil, -1
			case c == 9:
				return &rig.Function{}, -1
			default:
				return fr.fns[4], 4 // args, whose parameters are all set by index
			}
		}
		for len(z.b) > 0 && len(parts) < 5 {
			var p rig.Part
			m := fuzzPart{src: -1, dst: -1, fn: -1}
			switch z.byte() % 8 {
			case 0:
				fn, k := pickFn()
				m.fn, m.kind, m.queue = k, device.Launch, device.Compute
				m.params = z.int(48)
				var rs []rig.Ref
				rs, m.refs = refs(k)
				p = rig.Launch(fn, m.params, rs...)
			case 1, 7:
				fn, k := pickFn()
				m.fn, m.kind, m.queue = k, device.Launch, device.Compute
				if k >= 0 {
					m.params = fr.fns[k].Params()
				}
				var rs []rig.Ref
				rs, m.refs = refs(k)
				// Most kernels address a buffer by their parameter 0.
				if z.byte()%2 == 0 {
					r := rig.ReadWriteArg(z.int(nb+1), 0).Plus(z.u64(64))
					rs = append([]rig.Ref{r}, rs...)
					mr := r
					mr.At = -2
					if k >= 0 && len(fr.fns[k].Layout()) > 0 {
						mr = r
						mr.At = fr.fns[k].Layout()[0].Offset
					}
					m.refs = append([]rig.Ref{mr}, m.refs...)
				}
				p = rig.Kernel(fn, rs...)
			case 2:
				m.kind, m.queue = device.CopyRows, device.Copy
				m.src, m.srcOff, m.dst, m.dstOff, m.rowB = z.int(nb+1), z.u64(256), z.int(nb+1), z.u64(256), z.u64(256)
				m.rows, m.srcP, m.dstP = 1, m.rowB, m.rowB
				p = rig.Copy(m.src, m.srcOff, m.dst, m.dstOff, m.rowB)
			case 3:
				m.kind, m.queue = device.CopyRows, device.Copy
				rw := rig.Rows{Src: z.int(nb + 1), Dst: z.int(nb + 1), SrcOffset: z.u64(128), DstOffset: z.u64(128),
					RowBytes: z.u64(64), Rows: z.u64(8), SrcPitch: z.u64(80), DstPitch: z.u64(80)}
				m.src, m.dst, m.srcOff, m.dstOff, m.rowB, m.rows, m.srcP, m.dstP = rw.Src, rw.Dst, rw.SrcOffset, rw.DstOffset, rw.RowBytes, rw.Rows, rw.SrcPitch, rw.DstPitch
				if m.srcP == 0 {
					m.srcP = m.rowB
				}
				if m.dstP == 0 {
					m.dstP = m.rowB
				}
				p = rig.CopyRows(rw)
			case 4:
				m.kind, m.queue, m.filling = device.CopyRows, device.Copy, true
				m.dst, m.dstOff, m.rowB, m.fillB = z.int(nb+1), z.u64(256), z.u64(256), byte(z.byte())
				m.rows, m.dstP = 1, m.rowB
				p = rig.FillBytes(m.dst, m.dstOff, m.rowB, m.fillB)
				if z.byte()%2 == 0 {
					// Rows with gaps, or overlapping rows.
					m.rowB, m.rows, m.dstP = z.u64(64), z.u64(8), z.u64(80)
					p = rig.FillRows(m.dst, m.dstOff, m.rowB, m.rows, m.dstP, m.fillB)
					if m.dstP == 0 {
						m.dstP = m.rowB
					}
				} else if z.byte()%2 == 0 {
					// Four-byte words from a multiple of 4.
					m.fill32, m.fillV = true, uint32(z.word())
					m.dstOff = 4 * z.u64(64)
					words := z.u64(64)
					m.rowB, m.rows, m.dstP = 4*words, 1, 4*words
					p = rig.FillUint32(m.dst, m.dstOff, words, m.fillV)
				}
			case 5:
				m.kind, m.queue = device.Fill, device.Copy
				m.fillArg = uintptr(z.word())
				var fn any
				switch z.byte() % 5 {
				case 0, 1:
					fn, m.fillOK = hostdev.FillFunc(fr.fill), true
				case 2:
					fn = hostdev.FillFunc(nil)
				case 3:
					fn = func(uintptr) {}
				}
				var rs []rig.Ref
				rs, m.refs = refs(-1)
				p = rig.Fill(fn, m.fillArg, rs...)
			case 6:
				m.kind, m.queue = device.Words, device.Compute
				m.words = z.byte() % 4
				var rs []rig.Ref
				rs, m.refs = refs(-1)
				p = rig.Words(make([]uint32, m.words), rs...)
			}
			if m.kind == device.CopyRows {
				m.refs = []rig.Ref{rig.Uses(m.src, rig.Reads), rig.Uses(m.dst, rig.Writes)}
				if m.filling {
					m.refs = m.refs[1:]
				}
			}
			switch z.byte() % 6 {
			case 1:
				m.queue = z.int(3)
				p = p.On(m.queue)
			case 2:
				a := z.int(len(parts) + 1)
				m.after = a + 1
				p = p.After(a)
			}
			parts = append(parts, p)
			model = append(model, m)
		}
		s, err := rig.NewSubmission(fr.d, parts...)
		if err != nil {
			if !errors.Is(err, rig.ErrInvalid) || err.Error() == "" {
				t.Fatalf("NewSubmission's error does not match ErrInvalid: %v", err)
			}
			if err := fr.works(ctx, 0x5a); err != nil {
				t.Fatalf("after a refused submission, the device fails a known-good one: %v", err)
			}
			return
		}
		// NewSubmission checked what the model leaves unresolved.
		nbuf := 0
		for i := range model {
			m := &model[i]
			for _, r := range m.refs {
				if r.At < -1 || r.Buf < 0 || r.Buf >= rig.MaxBuffers {
					t.Fatalf("part %d: NewSubmission took a ref the model refuses: %+v", i, r)
				}
				nbuf = max(nbuf, r.Buf+1)
			}
		}
		// A run is taken, set and submitted; what input is left takes
		// the submission's runs again, which start as new ones do.
		for round := 0; round == 0 || (len(z.b) > 0 && round < 3); round++ {
			if round > 0 {
				reset()
			}
			for i := range model {
				m := &model[i]
				m.groups, m.threads, m.shared = [3]int{1, 1, 1}, [3]int{1, 1, 1}, 0
				m.shadow = make([]byte, max(m.params, 0))
			}
			if !fuzzRound(t, ctx, fr, s, model, nbuf, z, mem) {
				return
			}
		}
	})
}

// fuzzRound takes a run of s, sets it from z, submits it and checks the
// answer and the buffers' bytes against the model, mem. It returns false
// where the device was lost.
func fuzzRound(t *testing.T, ctx context.Context, fr *fuzzRig, s *rig.Submission, model []fuzzPart, nbuf int, z *fuzzInput, mem [][]byte) bool {
	nb := len(fr.bufs)
	r := s.Take()
	invalid := false
	// part says whether i names a part of the run.
	part := func(i int) bool { return i >= 0 && i < len(model) }
	// launch is whether part i is a launch, whose dimensions a run sets.
	launch := func(i int) bool { return part(i) && model[i].kind == device.Launch }
	// param is the bytes of parameter k of part i where a setter of
	// size bytes succeeds, or nil where it is an error.
	param := func(i, k, size int) []byte {
		if !part(i) || model[i].kind != device.Launch {
			return nil
		}
		l := fr.fns[model[i].fn].Layout()
		if k < 0 || k >= len(l) || l[k].Size != size || l[k].Offset+size > len(model[i].shadow) {
			return nil
		}
		return model[i].shadow[l[k].Offset : l[k].Offset+size]
	}
	set := func(i, k, size int, v []byte) {
		if b := param(i, k, size); b != nil {
			copy(b, v)
		} else {
			invalid = true
		}
	}
	dims := func(x, y, z int) bool {
		for _, n := range []int{x, y, z} {
			if n < 0 || n > math.MaxUint32 {
				return false
			}
		}
		return true
	}
	for range z.byte() % 10 {
		i := z.int(len(model) + 1)
		var le [8]byte
		switch z.byte() % 12 {
		case 0, 1:
			x, y, zz := z.dim(), z.dim(), z.dim()
			if z.byte()%2 == 0 {
				r.Groups(i, x, y, zz)
				if launch(i) && dims(x, y, zz) {
					model[i].groups = [3]int{x, y, zz}
				} else {
					invalid = true
				}
			} else {
				r.Threads(i, x, y, zz)
				if launch(i) && dims(x, y, zz) {
					model[i].threads = [3]int{x, y, zz}
				} else {
					invalid = true
				}
			}
		case 2:
			n := z.shared()
			r.Shared(i, n)
			if launch(i) && n >= 0 && n <= math.MaxUint32 {
				model[i].shared = n
			} else {
				invalid = true
			}
		case 3:
			k, v := z.int(8), z.word()
			binary.LittleEndian.PutUint32(le[:], uint32(v))
			switch z.byte() % 3 {
			case 0:
				r.SetUint32(i, k, uint32(v))
			case 1:
				r.SetInt32(i, k, int32(v))
			case 2:
				r.SetFloat32(i, k, math.Float32frombits(uint32(v)))
			}
			set(i, k, 4, le[:4])
		case 4:
			k, v := z.int(8), z.word()
			binary.LittleEndian.PutUint64(le[:], v)
			switch z.byte() % 3 {
			case 0:
				r.SetUint64(i, k, v)
			case 1:
				r.SetInt64(i, k, int64(v))
			case 2:
				r.SetFloat64(i, k, math.Float64frombits(v))
			}
			set(i, k, 8, le[:])
		case 5, 6:
			k, n := z.int(8), z.byte()%10
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(z.byte())
			}
			r.SetBytes(i, k, b)
			set(i, k, n, b)
		case 7, 8:
			// A buffer's address, or a count, as 8 bytes at byte j.
			j := z.int(48)
			v := z.word()
			if z.byte()%2 == 0 && v%8 < uint64(nb) {
				fb := fr.bufs[v%8]
				v = fb.b.Address() + v>>8%uint64(fb.n+8)
			} else if z.byte()%2 == 0 {
				v %= 300
			}
			b := r.Params(i)
			if !part(i) {
				invalid = true
			}
			if part(i) && len(b) != len(model[i].shadow) {
				t.Fatalf("Params(%d) holds %d bytes, want %d", i, len(b), len(model[i].shadow))
			}
			if j >= 0 && j <= len(b)-8 {
				binary.LittleEndian.PutUint64(b[j:], v)
				binary.LittleEndian.PutUint64(model[i].shadow[j:], v)
			}
		case 9, 10:
			j, v := z.int(48), byte(z.byte())
			b := r.Params(i)
			if !part(i) {
				invalid = true
			}
			if j >= 0 && j < len(b) {
				b[j] = v
				model[i].shadow[j] = v
			}
		case 11:
			// The run's parameters are the model's.
			if part(i) {
				if b := r.Params(i); !bytes.Equal(b, model[i].shadow) && !(len(b) == 0 && len(model[i].shadow) == 0) {
					t.Fatalf("part %d's parameters are %x, want %x", i, b, model[i].shadow)
				}
			}
		}
	}
	for i := range model {
		if b := r.Params(i); !bytes.Equal(b, model[i].shadow) && !(len(b) == 0 && len(model[i].shadow) == 0) {
			t.Fatalf("part %d's parameters are %x, want %x", i, b, model[i].shadow)
		}
	}
	// The buffers the run is submitted with: indices into fr.bufs, or
	// -1 for nil.
	var list []int
	var given []*rig.Buffer
	for range z.byte() % 7 {
		c := z.byte() % (nb + 1)
		if c == nb {
			list, given = append(list, -1), append(given, nil)
		} else {
			list, given = append(list, c), append(given, fr.bufs[c].b)
		}
	}

	// The model's answer.
	const (
		wantRun = iota
		wantInvalid
		wantRefusal
	)
	want, refused, why := wantRun, -1, ""
	if invalid {
		want, why = wantInvalid, "a setter's error"
	} else if len(list) < nbuf {
		want, why = wantInvalid, "too few buffers"
	} else if slices.ContainsFunc(model, func(m fuzzPart) bool {
		// A nil buffer at an index that no ref names is no error.
		return slices.ContainsFunc(m.refs, func(r rig.Ref) bool { return list[r.Buf] < 0 })
	}) {
		want, why = wantInvalid, "a nil buffer"
	}
	buf := func(i int) fuzzBuf { return fr.bufs[list[i]] }
	if want == wantRun {
	bind:
		for i, m := range model {
			for _, rf := range m.refs {
				if rf.Offset > uint64(buf(rf.Buf).n) {
					refused = i
					break bind
				}
			}
			if m.kind == device.CopyRows {
				if !m.filling {
					if end, ok := fuzzRowsEnd(m.srcOff, m.rows, m.srcP, m.rowB); !ok || end > uint64(buf(m.src).n) {
						refused = i
						break bind
					}
				}
				if end, ok := fuzzRowsEnd(m.dstOff, m.rows, m.dstP, m.rowB); !ok || end > uint64(buf(m.dst).n) {
					refused = i
					break bind
				}
			}
		}
		if refused < 0 {
			for i, m := range model {
				if !fuzzRuns(i, m, fr) {
					refused = i
					break
				}
			}
		}
		if refused >= 0 {
			want, why = wantRefusal, "a part the model refuses"
		}
	}

	// What the work does, where it runs.
	known, mayLose := true, false
	var wantFills []uintptr
	if want == wantRun {
		queues := map[int]bool{}
		for _, m := range model {
			queues[m.queue] = true
		}
		cross := len(queues) > 1
		// region finds the buffer whose region holds n bytes at a,
		// and where they lie in its view; n is positive.
		region := func(a, n uint64) (k int, at uint64, inRegion, inView bool) {
			for k, fb := range fr.bufs {
				if a < fb.base || n > uint64(fb.size) || a-fb.base > uint64(fb.size)-n {
					continue
				}
				rel := a - fb.base
				if rel < uint64(fb.off) || n > uint64(fb.n) || rel-uint64(fb.off) > uint64(fb.n)-n {
					return k, 0, true, false
				}
				return k, rel - uint64(fb.off), true, true
			}
			return -1, 0, false, false
		}
		// access checks that part i states its use of n bytes at a
		// and returns where they lie in the model, or nil where the
		// model cannot tell what the work leaves there.
		access := func(i int, a, n uint64, w bool) []byte {
			k, at, inRegion, inView := region(a, n)
			if !inRegion {
				mayLose, known = true, false
				return nil
			}
			if !inView {
				known = false
				return nil
			}
			if cross {
				stated := false
				for _, rf := range model[i].refs {
					if list[rf.Buf] == k && (rf.Access&rig.Writes != 0 || !w) {
						stated = true
					}
				}
				if !stated {
					known = false
					return nil
				}
			}
			return mem[k][at : at+n]
		}
		for i, m := range model {
			switch m.kind {
			case device.CopyRows:
				if m.rows == 0 || m.rowB == 0 {
					continue
				}
				dst := mem[list[m.dst]][m.dstOff:]
				if m.filling {
					for row := range m.rows {
						b := dst[row*m.dstP : row*m.dstP+m.rowB]
						for j := range b {
							b[j] = m.fillB
							if m.fill32 {
								b[j] = byte(m.fillV >> (8 * (j % 4)))
							}
						}
					}
					continue
				}
				src := mem[list[m.src]][m.srcOff:]
				if m.rows == 1 || (m.srcP == m.rowB && m.dstP == m.rowB) {
					copy(dst[:m.rows*m.rowB], src[:m.rows*m.rowB])
					continue
				}
				for row := range m.rows {
					copy(dst[row*m.dstP:row*m.dstP+m.rowB], src[row*m.srcP:row*m.srcP+m.rowB])
				}
			case device.Fill:
				wantFills = append(wantFills, m.fillArg)
			case device.Launch:
				p := slices.Clone(m.shadow)
				for _, rf := range m.refs {
					if rf.At >= 0 {
						binary.LittleEndian.PutUint64(p[rf.At:], buf(rf.Buf).b.Address()+rf.Offset)
					}
				}
				g, th := m.groups, m.threads
				threads := g[0] * g[1] * g[2] * th[0] * th[1] * th[2]
				u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(p[off:]) }
				switch m.fn {
				case 1: // twice
					a, n := u64(0), uint64(4*g[0]*th[0])
					if a%4 != 0 {
						mayLose, known = true, false
						continue
					}
					x := access(i, a, n, true)
					if x == nil {
						continue
					}
					if g[1]*g[2] > 1 {
						known = false
						continue
					}
					for e := 0; e < len(x); e += 4 {
						v := math.Float32frombits(binary.LittleEndian.Uint32(x[e:]))
						for range th[1] * th[2] {
							v *= 2
						}
						binary.LittleEndian.PutUint32(x[e:], math.Float32bits(v))
					}
				case 2, 6: // copy
					dst, src, n := u64(0), u64(8), u64(16)
					if n == 0 {
						continue
					}
					d, s := access(i, dst, n, true), access(i, src, n, false)
					if d == nil || s == nil {
						continue
					}
					if dst < src+n && src < dst+n && dst != src && threads > 1 {
						known = false
						continue
					}
					copy(d, s)
				case 3: // fill
					dst, n, v := u64(0), u64(8), p[16]
					if n == 0 {
						continue
					}
					if d := access(i, dst, n, true); d != nil {
						for j := range d {
							d[j] = v
						}
					}
				case 4: // args
					a := u64(0)
					if _, _, in, _ := region(a, 64); !in {
						mayLose, known = true, false
						continue
					}
					if d := access(i, a, uint64(len(p)-8), true); d != nil {
						copy(d, p[8:])
					}
				}
			}
		}
	}

	var err error
	if z.byte()%2 == 0 {
		var pt rig.Point
		if pt, err = r.Submit(ctx, given...); err == nil {
			err = pt.Wait(ctx)
		}
	} else {
		_, err = r.Do(ctx, given...)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the submission neither ran nor was refused: %v", err)
	}
	if err != nil && err.Error() == "" {
		t.Fatalf("an error of no words: %#v", err)
	}
	var re *rig.RefusalError
	switch want {
	case wantInvalid:
		if !errors.Is(err, rig.ErrInvalid) {
			t.Fatalf("want an error matching ErrInvalid (%s), have %v", why, err)
		}
	case wantRefusal:
		if !errors.As(err, &re) || re.Part != refused {
			t.Fatalf("want part %d refused, have %v", refused, err)
		}
	case wantRun:
		if err != nil && !(mayLose && errors.Is(err, rig.ErrLost)) {
			t.Fatalf("want the work to run, have %v", err)
		}
	}
	// The run went back to its submission: a second Submit is an error.
	if _, err2 := r.Submit(ctx, given...); !errors.Is(err2, rig.ErrInvalid) {
		t.Fatalf("a second Submit of a run: %v", err2)
	}
	if want != wantRun || err != nil {
		if fr.d.Err() != nil {
			if want != wantRun {
				t.Fatalf("an error of a submission that did not run lost the device: %v", fr.d.Err())
			}
			return false
		}
	}
	if want == wantRun && err == nil && known {
		for k, fb := range fr.bufs {
			got := make([]byte, fb.n)
			if err := rig.Download(ctx, got, fb.b, 0); err != nil {
				t.Fatalf("download of buffer %d: %v", k, err)
			}
			if !bytes.Equal(got, mem[k]) {
				for j := range got {
					if got[j] != mem[k][j] {
						t.Fatalf("buffer %d holds %#x at byte %d, and the model %#x\nhave %x\nwant %x", k, got[j], j, mem[k][j], got, mem[k])
					}
				}
			}
		}
		fr.fills.Lock()
		have := slices.Clone(fr.fills.args)
		fr.fills.Unlock()
		slices.Sort(have)
		slices.Sort(wantFills)
		if !slices.Equal(have, wantFills) {
			t.Fatalf("the fills ran with %v, want %v", have, wantFills)
		}
	}
	if fr.d.Err() != nil {
		if !mayLose {
			t.Fatalf("the device was lost: %v", fr.d.Err())
		}
		return false
	}
	if err := fr.works(ctx, byte(len(z.b))); err != nil {
		t.Fatalf("afterwards, the device fails a known-good submission: %v", err)
	}
	return true
}

// fuzzRowsEnd is one past the last byte of rows rows of n bytes, pitch
// apart, from off, and whether it lies within 2^64; off for no bytes, as
// the runtime checks an empty copy's offset against its buffer. It
// counts in big integers, apart from the runtime's own arithmetic, which
// the model checks.
func fuzzRowsEnd(off, rows, pitch, n uint64) (uint64, bool) {
	if rows == 0 || n == 0 {
		return off, true
	}
	u := func(v uint64) *big.Int { return new(big.Int).SetUint64(v) }
	end := u(rows - 1)
	end.Mul(end, u(pitch)).Add(end, u(n)).Add(end, u(off))
	if !end.IsUint64() {
		return 0, false
	}
	return end.Uint64(), true
}

// fuzzRuns reports whether the host device runs part i, m, of a run whose
// buffers are bound: the limits of hostdev's Room.
func fuzzRuns(i int, m fuzzPart, fr *fuzzRig) bool {
	if m.after > i {
		return false
	}
	switch m.kind {
	case device.Words:
		return false
	}
	if m.queue < 0 || m.queue > 1 {
		return false
	}
	switch m.kind {
	case device.Launch:
		if m.queue != device.Compute {
			return false
		}
		g, t := m.groups, m.threads
		for a := range 3 {
			if g[a] == 0 || t[a] == 0 {
				return false
			}
		}
		if g[0] > math.MaxInt32 || g[1] > 65535 || g[2] > 65535 {
			return false
		}
		hi, per := bits.Mul64(uint64(t[0])*uint64(t[1]), uint64(t[2]))
		if t[2] > 64 || hi != 0 || per > hostdev.MaxThreads {
			return false
		}
		if m.shared > hostdev.MaxShared {
			return false
		}
		if len(m.shadow) < fr.fns[m.fn].Params() {
			return false
		}
	case device.CopyRows:
		if m.rows > 1 && m.rowB > 0 && m.dstP < m.rowB {
			return false
		}
		// Rows read with a source pitch under their length overlap, and
		// every driver refuses them, as CUDA does.
		if !m.filling && m.rows > 1 && m.rowB > 0 && m.srcP < m.rowB {
			return false
		}
	case device.Fill:
		return m.fillOK
	}
	return true
}

// FuzzMemory moves fuzzed slices of every size of element to and from
// fuzzed offsets of small buffers of each kind of memory, nil and zero
// Buffers among them: a range outside the buffer is an error matching
// ErrInvalid that changes nothing, and any other lands exactly where the
// model puts it. It also allocates and maps buffers of fuzzed kinds and
// lengths, which are refused with an error or hold what is uploaded.
func FuzzMemory(f *testing.F) {
	f.Add([]byte{0, 0, 4, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 100, 3, 5, 3, 250, 2, 1, 1, 4, 1, 3, 0, 4, 196, 3, 9, 9, 9, 9, 9, 9})
	f.Add([]byte{240, 1, 99, 0, 4, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 0, 50, 241, 3, 10, 0, 0, 5, 1, 2, 3, 4, 5, 1, 2, 5})
	f.Add([]byte{242, 2, 255, 244, 7, 250, 246, 0, 249, 243, 200, 0, 241, 0, 3})
	f.Add([]byte{1, 2, 255, 4, 0, 1, 253, 0, 2, 0, 5, 254, 1, 3, 6, 0, 0, 4, 3, 120, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	fr := &fuzzRig{}
	f.Cleanup(func() {
		if err := fr.shut(); err != nil {
			f.Error(err)
		}
	})
	if err := fr.open(); err != nil {
		f.Fatal(err)
	}
	salt := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		if fr.d.Err() != nil {
			t.Fatalf("the device was lost: %v", fr.d.Err())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		salt++
		mem := make([][]byte, len(fr.bufs))
		for k, fb := range fr.bufs {
			mem[k] = make([]byte, fb.n)
			for j := range mem[k] {
				mem[k][j] = byte(k*41 + j*3 + salt)
			}
			if err := rig.Upload(ctx, fb.b, 0, mem[k]); err != nil {
				t.Fatalf("upload to buffer %d: %v", k, err)
			}
		}
		z := &fuzzInput{b: data}
		for len(z.b) > 0 {
			op := z.byte()
			if op >= 240 {
				if err := fuzzAlloc(ctx, fr, z, op); err != nil {
					t.Fatal(err)
				}
				continue
			}
			k := z.byte() % (len(fr.bufs) + 2)
			var b *rig.Buffer
			var m []byte
			switch {
			case k < len(fr.bufs):
				b, m = fr.bufs[k].b, mem[k]
			case k == len(fr.bufs):
				b = nil
			default:
				b = &rig.Buffer{}
			}
			off, count := z.int(260), z.byte()
			up := op&1 == 0
			var err error
			switch op >> 1 % 6 {
			case 0:
				err = fuzzMove[uint8](ctx, z, b, m, off, count, up)
			case 1:
				err = fuzzMove[int16](ctx, z, b, m, off, count, up)
			case 2:
				err = fuzzMove[float32](ctx, z, b, m, off, count, up)
			case 3:
				err = fuzzMove[uint64](ctx, z, b, m, off, count, up)
			case 4:
				err = fuzzMove[float64](ctx, z, b, m, off, count, up)
			case 5:
				err = fuzzMove[complex128](ctx, z, b, m, off, count, up)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for k, fb := range fr.bufs {
			got := make([]byte, fb.n)
			if err := rig.Download(ctx, got, fb.b, 0); err != nil {
				t.Fatalf("download of buffer %d: %v", k, err)
			}
			if !bytes.Equal(got, mem[k]) {
				t.Fatalf("buffer %d holds\n%x\nand the model\n%x", k, got, mem[k])
			}
		}
		if err := fr.works(ctx, byte(salt)); err != nil {
			t.Fatalf("afterwards, the device fails a known-good submission: %v", err)
		}
	})
}

// fuzzMove uploads count elements of T, of fuzzed values, to b at byte off,
// or downloads them from there, where m is the model of b's bytes (nil
// for a nil or zero Buffer). It returns what the answer got wrong.
func fuzzMove[T rig.Element](ctx context.Context, z *fuzzInput, b *rig.Buffer, m []byte, off, count int, up bool) error {
	s := make([]T, count)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), count*int(unsafe.Sizeof(*new(T))))
	for j := range raw {
		raw[j] = byte(z.byte())
	}
	before := slices.Clone(raw)
	fits := m != nil && off >= 0 && off <= len(m) && len(raw) <= len(m)-off
	var err error
	if up {
		err = rig.Upload(ctx, b, off, s)
	} else {
		err = rig.Download(ctx, s, b, off)
	}
	what := "download"
	if up {
		what = "upload"
	}
	switch {
	case !fits:
		if !errors.Is(err, rig.ErrInvalid) || err.Error() == "" {
			return errors.New("an " + what + " of " + itoa(int64(len(raw))) + " bytes at byte " + itoa(int64(max(off, 0))) + " outside the buffer: the error does not match ErrInvalid")
		}
		if !bytes.Equal(raw, before) {
			return errors.New("a refused " + what + " changed its slice")
		}
	case err != nil:
		return errors.New("an " + what + " within the buffer: " + err.Error())
	case up:
		copy(m[off:], raw)
	case !bytes.Equal(raw, m[off:off+len(raw)]):
		return errors.New("a download read bytes that the model does not hold")
	}
	return nil
}

// allocEdges are lengths past what a buffer holds.
var allocEdges = []int{0, -1, -4, math.MinInt, math.MaxInt, math.MaxInt - 2, math.MaxInt - 3, 1 << 40}

// fuzzAlloc allocates a buffer of a fuzzed kind and length, or maps a
// fuzzed part of a page of host memory, and moves bytes through it.
func fuzzAlloc(ctx context.Context, fr *fuzzRig, z *fuzzInput, op int) error {
	var b *rig.Buffer
	var err error
	n := 0
	if op%2 == 0 {
		kind := device.Memory(z.byte() % 5)
		if c := z.byte(); c >= 256-len(allocEdges) {
			n = allocEdges[255-c]
		} else {
			n = c + 1
		}
		b, err = fr.d.Alloc(kind, n)
		if err != nil {
			if n >= 1 && n <= 256 && kind <= device.MappedMemory {
				return errors.New("an alloc of " + itoa(int64(n)) + " bytes: " + err.Error())
			}
			if err.Error() == "" || !(errors.Is(err, rig.ErrInvalid) || errors.Is(err, rig.ErrOutOfMemory)) {
				return errors.New("a refused alloc of " + itoa(int64(max(n, 0))) + " bytes: the error matches neither ErrInvalid nor ErrOutOfMemory")
			}
			return nil
		}
		if n < 1 || n > 256 {
			return errors.New("an alloc of a length out of range succeeded")
		}
	} else {
		mem := make([]byte, 2*4096)
		lo := z.byte() * 20
		n = min(z.byte()*20, len(mem)-lo)
		b, err = fr.d.MapHost(mem[lo : lo+n])
		if n == 0 {
			if !errors.Is(err, rig.ErrInvalid) {
				return errors.New("a map of no bytes: the error does not match ErrInvalid")
			}
			return nil
		}
		if err != nil {
			return errors.New("a map of " + itoa(int64(n)) + " bytes: " + err.Error())
		}
	}
	defer b.Free()
	if b.Len() != n {
		return errors.New("a buffer of " + itoa(int64(b.Len())) + " bytes, and " + itoa(int64(n)) + " asked")
	}
	m := make([]byte, n)
	for i := range m {
		m[i] = byte(i*13 + op)
	}
	if err := rig.Upload(ctx, b, 0, m); err != nil {
		return err
	}
	for range 2 {
		up := z.byte()%2 == 0
		if err := fuzzMove[uint8](ctx, z, b, m, z.int(260), z.byte(), up); err != nil {
			return err
		}
	}
	got := make([]byte, n)
	if err := rig.Download(ctx, got, b, 0); err != nil {
		return err
	}
	if !bytes.Equal(got, m) {
		return errors.New("a new buffer does not hold what was uploaded")
	}
	return nil
}
