package rig_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// The property test states the core's promise about its answers and hunts
// for a breach under random schedules: many goroutines submit, wait, do,
// upload, download, load images, allocate and free on two host devices
// whose buffers each other's work uses, with contexts that end at random,
// while a device faults or hangs, a shared buffer is freed and the
// devices close at random moments. Whatever the schedule:
//
//   - a nil from Wait or Do comes only for work that ran: the launch or
//     fill of the point recorded that it ran before the answer came, and
//     every earlier value of the device's timeline that the test knows of
//     ran too (values complete in order);
//   - work that answered nil ran after the work it depends on: the last
//     write of its buffer that its goroutine made before, on either device;
//     an Upload or Download that answered nil came after that write too;
//   - no two pieces of work that the hazards order (a write against any
//     use of its buffer) ran at once;
//   - every error is one the documentation names: the context's end (with
//     the context ended), a loss naming a lost device, a close (with a
//     device closing), a freed buffer only where the test freed it;
//   - every call returns, the devices give everything back, nothing stays
//     counted in Waiting, and the answers stay: a point answered nil
//     answers nil once the devices are closed, and one answered a loss or
//     close never answers nil; once closed, a nil answer still comes only
//     for work that ran.
//
// A loss comes only from the injected fault or hang, or from work that
// waits on the other device's point that will never be reached.
//
// Each round is one draw; the plan of each goroutine and the moments of
// the events come from it (the schedule does not). A failure names the
// draw: RIG_PROPERTY_DRAW=n runs that round's plan alone, and
// RIG_PROPERTY_TIME=d runs rounds for d (a minute or more hunts).

// propMaxIDs bounds the ids of a round's work.
const propMaxIDs = 1 << 16

// propFaultID is the id of the launch that faults its device, and
// propHangID of the one that hangs it until its stop.
const (
	propFaultID = propMaxIDs - 1
	propHangID  = propMaxIDs - 2
)

// propRound is the record of one round's work, which the kernel and the
// fill write into.
type propRound struct {
	ran [propMaxIDs]atomic.Bool // the work of the id ran (started)
	// early marks work that ran before the work it depends on had.
	early [propMaxIDs]atomic.Bool
	// overlap marks work that ran while work that the hazards order
	// against it ran.
	overlap [propMaxIDs]atomic.Bool
	// writers and readers count the work that runs now on each buffer.
	writers, readers [propBufs]atomic.Int32
}

// propBufs bounds the buffers of a round.
const propBufs = 64

var propCur atomic.Pointer[propRound]

// propRun records that the work of id ran, on buffer b, writing or not,
// after the work of dep (0 for none).
func propRun(id, dep uint64, b int, writes bool) {
	r := propCur.Load()
	if r == nil || id == 0 || id >= propMaxIDs || b < 0 || b >= propBufs {
		return
	}
	if dep != 0 && dep < propMaxIDs && !r.ran[dep].Load() {
		r.early[id].Store(true)
	}
	if writes {
		if r.writers[b].Add(1) != 1 || r.readers[b].Load() != 0 {
			r.overlap[id].Store(true)
		}
	} else {
		r.readers[b].Add(1)
		if r.writers[b].Load() != 0 {
			r.overlap[id].Store(true)
		}
	}
	r.ran[id].Store(true)
	runtime.Gosched() // a wider window for work that should not overlap
	if writes {
		r.writers[b].Add(-1)
	} else {
		r.readers[b].Add(-1)
	}
}

// propFill is the fill of the property test: its arg holds the id, the
// dependency, the buffer and whether it writes (propArg).
var propFill = hostdev.FillFunc(func(arg uintptr) {
	id, dep, b, writes := propUnarg(uint64(arg))
	propRun(id, dep, b, writes)
})

func propArg(id, dep uint64, b int, writes bool) uint64 {
	w := uint64(0)
	if writes {
		w = 1
	}
	return id | dep<<16 | uint64(b)<<32 | w<<40
}

func propUnarg(a uint64) (id, dep uint64, b int, writes bool) {
	return a & 0xffff, a >> 16 & 0xffff, int(a >> 32 & 0xff), a>>40&1 == 1
}

func init() {
	// test_prop_mark records its run (propRun); bytes 0 to 8 address the
	// buffer it uses, 8 to 16 hold propArg's word. The id propFaultID
	// faults the device instead.
	hostdev.RegisterParams("test_prop_mark", 16, func(k *hostdev.Ctx) {
		a := k.Uint64(8)
		id, dep, b, writes := propUnarg(a)
		switch id {
		case propFaultID:
			k.Fault("the property test's fault")
		case propHangID:
			<-k.Stopped()
			return
		}
		_ = k.Bytes(k.Uint64(0), 8) // the buffer must be live
		propRun(id, dep, b, writes)
	})
}

// propPoint is a point the test submitted, with what its waits answered.
type propPoint struct {
	p      rig.Point
	id     uint64
	nilAns bool // a wait answered nil
	endAns bool // a wait answered a loss or a close
}

// propBuf is a buffer of the round, with its index for the records.
type propBuf struct {
	b   *rig.Buffer
	idx int
}

// propWorld is one round: its devices, shared buffers, submissions and
// what the goroutines recorded.
type propWorld struct {
	draw uint64
	rec  *propRound
	devs [2]*rig.Device
	// shared are the buffers every goroutine may use: three of each
	// device, the first of Pinned memory; one of them may be freed.
	shared []propBuf
	// mark and markRead are per device launch submissions that write and
	// read buffer 0.
	mark, markRead [2]*rig.Submission
	ids            atomic.Uint64
	bufIdx         atomic.Int64
	ops            atomic.Int64
	mu             sync.Mutex
	points         []*propPoint
	bad            atomic.Int64
	firstBad       atomic.Pointer[string]
	// closed records, before each device's Close, that it began.
	closed [2]atomic.Bool
	// freed records, before a shared buffer's Free, that it began.
	freed [propBufs]atomic.Bool
}

func (w *propWorld) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if w.bad.Add(1) == 1 {
		w.firstBad.Store(&msg)
	}
}

func (w *propWorld) newID() uint64 {
	id := w.ids.Add(1)
	if id >= propHangID {
		panic("the property test ran out of ids")
	}
	return id
}

// close closes device i, recording first that its close began.
func (w *propWorld) close(i int) {
	w.closed[i].Store(true)
	_ = w.devs[i].Close()
}

// checkErr checks an error of a call made with ctx: its context's end
// where ctx ended, or an error of a loss, a close, or, where mayFree, a
// freed buffer or unloaded image.
func (w *propWorld) checkErr(what string, ctx context.Context, err error, mayFree bool) {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if cerr := ctx.Err(); cerr == nil || !errors.Is(err, cerr) {
			w.fail("%s answered %v while its context's error is %v", what, err, cerr)
		}
	case errors.Is(err, rig.ErrLost):
		var le *rig.LostError
		if !errors.As(err, &le) {
			w.fail("%s answered %v, which matches ErrLost and is no *LostError", what, err)
			return
		}
		found := false
		for _, d := range w.devs {
			if d.Name() == le.Device {
				found = true
				if d.Err() == nil {
					w.fail("%s answered %v, and %s is not lost", what, err, d.Name())
				}
			}
		}
		if !found {
			w.fail("%s answered the loss of a device of no round: %v", what, err)
		}
	case errors.Is(err, rig.ErrClosed):
		if !w.closed[0].Load() && !w.closed[1].Load() {
			w.fail("%s answered %v, and no device is closing", what, err)
		}
	case mayFree && errors.Is(err, rig.ErrFreed):
	default:
		w.fail("%s answered an error the documentation does not name: %v", what, err)
	}
}

// record keeps a submitted point for the final checks.
func (w *propWorld) record(p rig.Point, id uint64) *propPoint {
	pp := &propPoint{p: p, id: id}
	w.mu.Lock()
	w.points = append(w.points, pp)
	w.mu.Unlock()
	return pp
}

// answered checks a wait's answer on pp, whose work depends on dep.
func (w *propWorld) answered(what string, ctx context.Context, pp *propPoint, err error) {
	if err == nil {
		pp.nilAns = true
		if !w.rec.ran[pp.id].Load() {
			w.fail("%s of id %d (value %d of %s) answered nil for work that did not run", what, pp.id, pp.p.Value(), pp.p.Device().Name())
		}
		return
	}
	if errors.Is(err, rig.ErrLost) || errors.Is(err, rig.ErrClosed) {
		pp.endAns = true
	}
	if errors.Is(err, rig.ErrFreed) {
		w.fail("%s answered %v, which no wait answers", what, err)
		return
	}
	w.checkErr(what, ctx, err, false)
}

// propCtx returns a context that is live, ended already, ends after a
// random while, or is cancelled by another goroutine soon.
func propCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	return rig.RandomCtx(rng, 3, 300*time.Microsecond)
}

// gor is one goroutine's state: its rng, its own buffers, and the id of
// its last write of each buffer (the work its later uses depend on).
type gor struct {
	w      *propWorld
	rng    *rand.Rand
	own    []propBuf
	lastWr map[int]uint64
	mine   []*propPoint
}

func (g *gor) buffer() propBuf {
	if len(g.own) > 0 && g.rng.IntN(3) == 0 {
		return g.own[g.rng.IntN(len(g.own))]
	}
	return g.w.shared[g.rng.IntN(len(g.w.shared))]
}

// hostBuffer is a buffer that the goroutine may copy to and from on the
// host: one of its own, or a shared one of Device memory, which Upload
// and Download copy through the device's queues. (Two goroutines' host
// copies of one Pinned buffer at once race, as any two writes do.)
func (g *gor) hostBuffer() propBuf {
	if len(g.own) > 0 && g.rng.IntN(2) == 0 {
		return g.own[g.rng.IntN(len(g.own))]
	}
	for {
		b := g.w.shared[g.rng.IntN(len(g.w.shared))]
		if b.b.Kind() == device.DeviceMemory {
			return b
		}
	}
}

// step makes one random call.
func (g *gor) step() {
	w, rng := g.w, g.rng
	defer w.ops.Add(1)
	switch n := rng.IntN(100); {
	case n < 40:
		g.launch()
	case n < 55:
		g.fill()
	case n < 65:
		g.waitOld()
	case n < 73:
		g.upload()
	case n < 81:
		g.download()
	case n < 90:
		g.allocOrFree()
	default:
		g.image()
	}
}

// launch submits a mark on a random device, writing or reading a buffer,
// and waits for it (Submit and Wait, or Do), or leaves it.
func (g *gor) launch() {
	w, rng := g.w, g.rng
	di := rng.IntN(2)
	b := g.buffer()
	writes := rng.IntN(3) != 0
	s := w.mark[di]
	if !writes {
		s = w.markRead[di]
	}
	id := w.newID()
	dep := g.lastWr[b.idx]
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0)[8:], propArg(id, dep, b.idx, writes))
	ctx, cancel := propCtx(rng)
	defer cancel()
	what := fmt.Sprintf("launch %d on %s", id, w.devs[di].Name())
	var p rig.Point
	var err error
	do := rng.IntN(3) == 0
	if do {
		p, err = r.Do(ctx, b.b)
	} else {
		p, err = r.Submit(ctx, b.b)
	}
	g.submitted(what, ctx, p, id, err, do, writes, b)
}

// fill submits a fill through a submission of its own.
func (g *gor) fill() {
	w, rng := g.w, g.rng
	di := rng.IntN(2)
	b := g.buffer()
	writes := rng.IntN(2) == 0
	id := w.newID()
	dep := g.lastWr[b.idx]
	acc := rig.Reads
	if writes {
		acc = rig.Writes
	}
	s, err := rig.NewSubmission(w.devs[di], rig.Fill(propFill, uintptr(propArg(id, dep, b.idx, writes)), rig.Uses(0, acc)))
	if err != nil {
		w.fail("NewSubmission of a fill: %v", err)
		return
	}
	ctx, cancel := propCtx(rng)
	defer cancel()
	what := fmt.Sprintf("fill %d on %s", id, w.devs[di].Name())
	do := rng.IntN(2) == 0
	var p rig.Point
	if do {
		p, err = s.Take().Do(ctx, b.b)
	} else {
		p, err = s.Take().Submit(ctx, b.b)
	}
	g.submitted(what, ctx, p, id, err, do, writes, b)
}

// submitted checks what a Submit or Do answered, and waits where it was a
// Submit that returned a point.
func (g *gor) submitted(what string, ctx context.Context, p rig.Point, id uint64, err error, do, writes bool, b propBuf) {
	w, rng := g.w, g.rng
	if p.Device() == nil {
		// Nothing submitted.
		if err == nil {
			w.fail("%s returned the zero Point and no error", what)
			return
		}
		w.checkErr(what+": Submit", ctx, err, w.freed[b.idx].Load())
		return
	}
	pp := w.record(p, id)
	g.mine = append(g.mine, pp)
	if writes {
		g.lastWr[b.idx] = id
	}
	if do {
		w.answered(what+": Do", ctx, pp, err)
		return
	}
	if err != nil {
		// A Submit that returned a point and an error: the loss its
		// submission caused.
		if !errors.Is(err, rig.ErrLost) {
			w.fail("%s: Submit returned a point and %v", what, err)
		}
		return
	}
	if rng.IntN(4) == 0 {
		return // waited for later, or never
	}
	w.answered(what+": Wait", ctx, pp, p.Wait(ctx))
}

// waitOld waits again for one of the goroutine's earlier points.
func (g *gor) waitOld() {
	if len(g.mine) == 0 {
		return
	}
	pp := g.mine[g.rng.IntN(len(g.mine))]
	ctx, cancel := propCtx(g.rng)
	defer cancel()
	err := pp.p.Wait(ctx)
	if pp.nilAns && err != nil && ctx.Err() == nil {
		g.w.fail("id %d answered nil, then %v", pp.id, err)
	}
	if pp.endAns && err == nil {
		g.w.fail("id %d answered a loss or close, then nil", pp.id)
	}
	g.w.answered(fmt.Sprintf("a later wait on id %d", pp.id), ctx, pp, err)
}

// upload writes the buffer from the host; a nil answer comes only after
// the goroutine's last write of it ran.
func (g *gor) upload() {
	w := g.w
	b := g.hostBuffer()
	dep := g.lastWr[b.idx]
	ctx, cancel := propCtx(g.rng)
	defer cancel()
	err := rig.Upload(ctx, b.b, 0, []uint64{uint64(g.rng.IntN(1000))})
	if err == nil {
		if dep != 0 && !w.rec.ran[dep].Load() {
			w.fail("an Upload answered nil before id %d, the last write of its buffer, ran", dep)
		}
		return
	}
	w.checkErr("Upload", ctx, err, w.freed[b.idx].Load())
}

// download reads the buffer to the host; a nil answer comes only after
// the goroutine's last write of it ran.
func (g *gor) download() {
	w := g.w
	b := g.hostBuffer()
	dep := g.lastWr[b.idx]
	ctx, cancel := propCtx(g.rng)
	defer cancel()
	dst := make([]uint64, 1)
	err := rig.Download(ctx, dst, b.b, 0)
	if err == nil {
		if dep != 0 && !w.rec.ran[dep].Load() {
			w.fail("a Download answered nil before id %d, the last write of its buffer, ran", dep)
		}
		return
	}
	w.checkErr("Download", ctx, err, w.freed[b.idx].Load())
}

// allocOrFree allocates a buffer of the goroutine's own on a random
// device, or frees one.
func (g *gor) allocOrFree() {
	w, rng := g.w, g.rng
	if len(g.own) > 0 && rng.IntN(2) == 0 {
		i := rng.IntN(len(g.own))
		if err := g.own[i].b.Free(); err != nil {
			w.fail("Free: %v", err)
		}
		g.own = append(g.own[:i], g.own[i+1:]...)
		return
	}
	idx := int(w.bufIdx.Add(1)) - 1
	if idx >= propBufs {
		return
	}
	kind := device.DeviceMemory
	if rng.IntN(2) == 0 {
		kind = device.PinnedMemory
	}
	d := w.devs[rng.IntN(2)]
	b, err := d.Alloc(kind, 64)
	if err != nil {
		if !errors.Is(err, rig.ErrClosed) && !errors.Is(err, rig.ErrLost) {
			w.fail("Alloc: %v", err)
		}
		return
	}
	g.own = append(g.own, propBuf{b: b, idx: idx})
}

// image loads an image of the mark, launches it once and unloads it.
func (g *gor) image() {
	w, rng := g.w, g.rng
	di := rng.IntN(2)
	d := w.devs[di]
	img, err := d.LoadImage(hostdev.ImageOf("test_prop_mark"))
	if err != nil {
		w.checkErr("LoadImage", context.Background(), err, false)
		return
	}
	defer func() {
		if err := img.Unload(); err != nil {
			w.checkErr("Unload", context.Background(), err, false)
		}
	}()
	f, err := img.Resolve("test_prop_mark")
	if err != nil {
		w.checkErr("Resolve", context.Background(), err, false)
		return
	}
	s, err := rig.NewSubmission(d, rig.Launch(f, 16, rig.Write(0, 0)))
	if err != nil {
		w.fail("NewSubmission: %v", err)
		return
	}
	b := g.buffer()
	id := w.newID()
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0)[8:], propArg(id, g.lastWr[b.idx], b.idx, true))
	ctx, cancel := propCtx(rng)
	defer cancel()
	p, err := r.Do(ctx, b.b)
	g.submitted(fmt.Sprintf("image launch %d on %s", id, d.Name()), ctx, p, id, err, true, true, b)
}

// propOpen opens a host device for the property test.
// Where domain is not empty, the devices share a fault domain. A device
// that keeps a word of its own (OwnWord) makes the other's work wait for
// its points on the host.
func propOpen(t *testing.T, rng *rand.Rand, name, domain string, hang time.Duration) *rig.Device {
	t.Helper()
	c := hostdev.Config{Name: name, Ring: 8 + rng.IntN(64), Grow: rng.IntN(2) == 0, OwnWord: rng.IntN(4) == 0, FaultDomain: domain, Hang: hang}
	d, err := rig.Open(context.Background(), hostdev.Open(c))
	if err != nil {
		t.Fatal(err)
	}
	d.SetWaitSpin(time.Duration(rng.IntN(3)) * 10 * time.Microsecond)
	return d
}

// propRoundRun runs the round of draw with goroutines goroutines of each
// calls each, and checks the promise.
func propRoundRun(t *testing.T, draw uint64, goroutines, each int) {
	rng := rand.New(rand.NewPCG(draw, 0x70726f70))
	rec := &propRound{}
	propCur.Store(rec)
	defer propCur.Store(nil)
	w := &propWorld{draw: draw, rec: rec}
	domain := ""
	if rng.IntN(4) == 0 {
		domain = fmt.Sprintf("prop-%d", draw)
	}
	// A device with a hang bound, where one is, hangs at a random moment
	// and is lost for it.
	hangs := rng.IntN(3) - 1
	for i := range w.devs {
		var hang time.Duration
		if i == hangs {
			hang = time.Duration(50+rng.IntN(100)) * time.Millisecond
		}
		w.devs[i] = propOpen(t, rng, fmt.Sprintf("prop-%d-%d-%d", draw, i, names.Add(1)), domain, hang)
	}
	defer func() {
		for i := range w.devs {
			w.close(i)
		}
	}()
	for i, d := range w.devs {
		f := fn(t, d, "test_prop_mark")
		w.mark[i] = sub(t, d, rig.Launch(f, 16, rig.Write(0, 0)))
		w.markRead[i] = sub(t, d, rig.Launch(f, 16, rig.Read(0, 0)))
		for k := range 3 {
			kind := device.DeviceMemory
			if k == 0 {
				kind = device.PinnedMemory
			}
			idx := int(w.bufIdx.Add(1)) - 1
			w.shared = append(w.shared, propBuf{b: alloc(t, d, kind, 64), idx: idx})
		}
	}

	var wg sync.WaitGroup
	for gi := range goroutines {
		salt := rng.Uint64()
		wg.Go(func() {
			g := &gor{w: w, rng: rand.New(rand.NewPCG(salt, uint64(gi))), lastWr: map[int]uint64{}}
			for range each {
				g.step()
			}
			for _, b := range g.own {
				_ = b.b.Free()
			}
		})
	}
	// The events, each once a random share of the calls was made: a
	// fault of one device, and the close of one or both.
	total := int64(goroutines * each)
	var events sync.WaitGroup
	at := func(do func()) {
		share := rng.Int64N(total)
		events.Go(func() {
			for w.ops.Load() < share {
				time.Sleep(100 * time.Microsecond)
			}
			do()
		})
	}
	plan := rng.IntN(8)
	if plan&1 != 0 {
		d := rng.IntN(2)
		at(func() {
			r := w.mark[d].Take()
			binary.LittleEndian.PutUint64(r.Params(0)[8:], propFaultID)
			_, _ = r.Submit(context.Background(), w.shared[3*d].b)
		})
	}
	if hangs >= 0 {
		at(func() {
			r := w.mark[hangs].Take()
			binary.LittleEndian.PutUint64(r.Params(0)[8:], propHangID)
			_, _ = r.Submit(context.Background(), w.shared[3*hangs].b)
		})
	}
	if rng.IntN(2) == 0 {
		// A shared buffer of Device memory, none that the fault uses.
		b := w.shared[1+3*rng.IntN(2)+rng.IntN(2)]
		at(func() {
			w.freed[b.idx].Store(true)
			if err := b.b.Free(); err != nil {
				w.fail("Free of a shared buffer: %v", err)
			}
		})
	}
	if plan&2 != 0 {
		i := rng.IntN(2)
		at(func() { w.close(i) })
	}
	if plan&4 != 0 {
		i := rng.IntN(2)
		at(func() { w.close(i) })
	}
	propEnds(t, draw, &wg, "the goroutines' calls")
	events.Wait()

	for _, d := range w.devs {
		if n := d.Waiting(); n != 0 {
			w.fail("%s counts %d waiters after every wait returned", d.Name(), n)
		}
	}
	for i := range w.devs {
		w.close(i)
	}
	var done sync.WaitGroup
	for _, d := range w.devs {
		done.Go(func() { <-d.Done() })
	}
	propEnds(t, draw, &done, "the devices' close")
	for _, d := range w.devs {
		if used, _ := d.Budget(); used != 0 {
			w.fail("%s's budget counts %d bytes after its close", d.Name(), used)
		}
		// A loss comes only from the injected fault or hang (of a device
		// with a hang bound, which its work's waits on the other device
		// may reach too), the other device's fault in their fault domain,
		// or from work that waits on the other device's point that will
		// never be reached.
		var le *rig.LostError
		if errors.As(d.Err(), &le) && !strings.Contains(le.Cause, "the property test's fault") && !strings.Contains(le.Cause, "will never be reached") &&
			!strings.Contains(le.Cause, "in fault domain") && !(d.Facts().HangMs > 0 && strings.Contains(le.Cause, "no progress")) {
			w.fail("%s was lost: %v", d.Name(), le)
		}
	}
	w.final()
	var nils int
	for _, pp := range w.points {
		if pp.nilAns {
			nils++
		}
	}
	t.Logf("draw %d: plan %d, hangs %d, domain %q, %d points, %d answered nil, %s: %v, %s: %v", draw, plan, hangs,
		domain, len(w.points), nils, w.devs[0].Name(), w.devs[0].Err(), w.devs[1].Name(), w.devs[1].Err())
	if n := w.bad.Load(); n > 0 {
		t.Fatalf("draw %d (RIG_PROPERTY_DRAW=%d replays its plan, with -short as here: %v): %d broken answers, the first: %s", draw, draw, testing.Short(), n, *w.firstBad.Load())
	}
}

// final checks every point once the devices gave everything back: its
// answer now agrees with the earlier ones, a nil only for work that ran,
// after the work it depends on, overlapping none that the hazards order
// against it, and after every earlier value of its device that the test
// knows of.
func (w *propWorld) final() {
	ctx := context.Background()
	byDev := map[*rig.Device][]*propPoint{}
	for _, pp := range w.points {
		err := pp.p.Wait(ctx)
		switch {
		case pp.nilAns && err != nil:
			w.fail("id %d (value %d of %s) answered nil, then %v once closed", pp.id, pp.p.Value(), pp.p.Device().Name(), err)
		case pp.endAns && err == nil:
			w.fail("id %d (value %d of %s) answered a loss or close, then nil once closed", pp.id, pp.p.Value(), pp.p.Device().Name())
		}
		if err != nil {
			continue
		}
		if !w.rec.ran[pp.id].Load() {
			w.fail("id %d (value %d of %s) answers nil once closed, and did not run", pp.id, pp.p.Value(), pp.p.Device().Name())
		}
		if w.rec.early[pp.id].Load() {
			w.fail("id %d (value %d of %s) answers nil, and ran before the work it depends on", pp.id, pp.p.Value(), pp.p.Device().Name())
		}
		byDev[pp.p.Device()] = append(byDev[pp.p.Device()], pp)
	}
	for id := range w.rec.overlap {
		if w.rec.overlap[id].Load() {
			w.fail("id %d ran while work that its buffer's hazards order against it ran", id)
		}
	}
	// In order: every value the test knows of below a value answered nil
	// ran.
	for _, pp := range w.points {
		for _, q := range byDev[pp.p.Device()] {
			if pp.p.Value() < q.p.Value() && !w.rec.ran[pp.id].Load() {
				w.fail("value %d of %s answers nil, and value %d (id %d) before it did not run", q.p.Value(), q.p.Device().Name(), pp.p.Value(), pp.id)
				break
			}
		}
	}
}

// propEnds waits for wg as stressEnds does, naming the draw that replays
// the round where it does not end.
func propEnds(t *testing.T, draw uint64, wg *sync.WaitGroup, what string) {
	t.Helper()
	stressEnds(t, wg, fmt.Sprintf("draw %d (RIG_PROPERTY_DRAW=%d replays it): %s", draw, draw, what))
}

// propGoroutines is the goroutines of the round of draw: 64 with -short,
// and from 64 to 864 otherwise, so that a draw replays its round.
func propGoroutines(draw uint64) int {
	if testing.Short() {
		return 64
	}
	return 64 + int(draw%5)*200
}

// TestPropertyAnswersTruthful runs rounds of the property test: ten by
// default, two with -short, the round of one draw with RIG_PROPERTY_DRAW,
// and rounds for a while with RIG_PROPERTY_TIME.
func TestPropertyAnswersTruthful(t *testing.T) {
	const each = 8
	rounds := 10
	if testing.Short() {
		rounds = 2
	}
	if s := os.Getenv("RIG_PROPERTY_DRAW"); s != "" {
		draw, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RIG_PROPERTY_DRAW=%q: %v", s, err)
		}
		propRoundRun(t, draw, propGoroutines(draw), each)
		return
	}
	base := uint64(time.Now().UnixNano())
	if s := os.Getenv("RIG_PROPERTY_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("RIG_PROPERTY_TIME=%q: %v", s, err)
		}
		end := time.Now().Add(d)
		for i := uint64(0); time.Now().Before(end); i++ {
			propRoundRun(t, base+i, propGoroutines(base+i), each)
		}
		return
	}
	for i := range uint64(rounds) {
		propRoundRun(t, base+i, propGoroutines(base+i), each)
	}
}
