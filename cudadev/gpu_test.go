package cudadev

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/cudadev/cuda"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/internal/timeline"
	rig "github.com/rig-go/rig/runtime"
)

var bg = context.Background()

// TestExampleTwice is the README's example: it doubles x on GPU 0.
func TestExampleTwice(t *testing.T) {
	dev := openRig(t, Config{})
	const n = 1 << 20
	took := gputest.Twice(t, bg, dev, kernels(t, dev.Arch()), n)
	t.Logf("doubled %d floats on %s (%s, %s) in %v", n, dev.Name(), dev.Arch(), dev.Facts().Bus, took)
}

func TestGPUFacts(t *testing.T) {
	dev := openRig(t, Config{})
	f := dev.Facts()
	t.Logf("facts: arch %s, budget %d, queues %v, hang %d ms, maps host %v, L2 %d, bus %s, word in rig's array %v, waits %b",
		f.Arch, f.Budget, f.Queues, f.HangMs, f.MapsHost, f.CacheBytes, f.Bus, f.Word != nil, f.Waits)
	if f.FaultDomain != "cuda" || f.Alignment != 256 || f.CopyEngine != 1 || len(f.Queues) != 2 || f.Completion != device.Store {
		t.Errorf("facts %+v", f)
	}
	if f.Word == nil {
		t.Error("the word is not rig's: the array is not registered")
	}
	rec, ok := rig.Capability(dev, cuda.Key)
	if !ok || rec.Context == 0 || rec.Funcs.LaunchKernel == 0 || rec.Symbol("cuMemcpyAsync") == 0 {
		t.Fatalf("capability %+v", rec)
	}
	t.Logf("CUDA %s", versionString(rec.Version))
	// The limits and the scheduling the open set, read in its context.
	getLimit, getFlags := rec.Symbol("cuCtxGetLimit"), rec.Symbol("cuCtxGetFlags")
	lockThread()
	defer unlockThread()
	var prev uintptr
	tb := loadedTable(t)
	tb.call(tb.cuCtxGetCurrent, uintptr(unsafe.Pointer(&prev)))
	tb.call(tb.cuCtxSetCurrent, rec.Context)
	var lim uint64
	var flags uint32
	tb.call(getLimit, uintptr(unsafe.Pointer(&lim)), limitMaxL2FetchGranularity)
	tb.call(getFlags, uintptr(unsafe.Pointer(&flags)))
	tb.call(tb.cuCtxSetCurrent, prev)
	t.Logf("L2 fetch granularity %d, context flags %#x", lim, flags)
	if lim != 128 {
		t.Errorf("CU_LIMIT_MAX_L2_FETCH_GRANULARITY reads %d", lim)
	}
	if flags&ctxSchedMask != ctxSchedBlockingSync {
		t.Errorf("the context's scheduling is %#x, not blocking sync", flags&ctxSchedMask)
	}
	n, err := Count()
	buses, _ := Buses()
	t.Logf("Count() = %d, %v; Buses() = %v", n, err, buses)
	if n < 1 || len(buses) != n || buses[0] != f.Bus {
		t.Error("Count and Buses disagree with the facts")
	}
	if _, err := rig.Open(bg, GPU(0)); err == nil || !strings.Contains(err.Error(), "open") {
		t.Errorf("a second open of the GPU answered %v", err)
	}
	if _, err := rig.Open(bg, GPU(n)); err == nil || !strings.Contains(err.Error(), "sees no GPU") {
		t.Errorf("an open of GPU %d answered %v", n, err)
	}
}

func loadedTable(t testing.TB) *table {
	tb, err := load()
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestGPUPartsBothQueues runs every part kind on each queue.
func TestGPUPartsBothQueues(t *testing.T) {
	dev := openRig(t, Config{})
	rec, _ := rig.Capability(dev, cuda.Key)
	const n = 1 << 16
	src := alloc(t, dev, device.PinnedMemory, n)
	mid := alloc(t, dev, device.DeviceMemory, n)
	dst := alloc(t, dev, device.PinnedMemory, n)
	word := alloc(t, dev, device.PinnedMemory, 8)
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i * 7)
	}
	for q := 0; q < 2; q++ {
		clear(dst.Bytes())
		// A copy there and back, a fill of part of it, and a C fill that
		// writes the value: cuStreamWriteValue64(stream, arg, value), with
		// the flags 0 that purego passes in the fourth register.
		s := submission(t, dev,
			rig.Copy(0, 0, 1, 0, n).On(q),
			rig.FillBytes(1, 100, 50, 0xab).On(q),
			rig.Copy(1, 0, 2, 0, n).On(q),
			rig.Fill(rec.Funcs.StreamWriteValue64, uintptr(word.Address()), rig.Uses(3, rig.Writes)).On(q),
		)
		p, err := s.Take().Submit(bg, src, mid, dst, word)
		if err != nil {
			t.Fatalf("queue %d: %v", q, err)
		}
		if err := p.Wait(bg); err != nil {
			t.Fatalf("queue %d: %v", q, err)
		}
		want := append([]byte(nil), src.Bytes()...)
		for i := 100; i < 150; i++ {
			want[i] = 0xab
		}
		if !bytes.Equal(dst.Bytes(), want) {
			t.Fatalf("queue %d: the copies and fill moved the wrong bytes", q)
		}
		if got := atomic.LoadUint64(word64(word.Bytes(), 0)); got != p.Value() {
			t.Fatalf("queue %d: the fill wrote %d, want the value %d", q, got, p.Value())
		}
		// Pitched rows: a 2D copy and a 2D fill.
		clear(dst.Bytes())
		s = submission(t, dev,
			rig.CopyRows(rig.Rows{Src: 0, Dst: 1, RowBytes: 100, Rows: 8, SrcPitch: 256, DstPitch: 128}).On(q),
			rig.CopyRows(rig.Rows{Src: 1, Dst: 2, RowBytes: 100, Rows: 8, SrcPitch: 128, DstPitch: 100}).On(q),
		)
		if p, err = s.Take().Submit(bg, src, mid, dst); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(bg); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < 8; r++ {
			if !bytes.Equal(dst.Bytes()[100*r:100*r+100], src.Bytes()[256*r:256*r+100]) {
				t.Fatalf("queue %d: row %d of the 2D copies is wrong", q, r)
			}
		}
	}
	// A launch on COMPUTE:0.
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	st := resolve(t, img, "store64")
	s := submission(t, dev, rig.Launch(st, 16, rig.Write(0, 0)))
	run := s.Take()
	binary.LittleEndian.PutUint64(run.Params(0)[8:], 0xfeed)
	p, err := run.Submit(bg, word)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(bg); err != nil {
		t.Fatal(err)
	}
	if got := atomic.LoadUint64(word64(word.Bytes(), 0)); got != 0xfeed {
		t.Fatalf("store64 wrote %#x", got)
	}
}

// TestGPUCopyHugePitch copies rows whose pitch exceeds the GPU's
// CU_DEVICE_ATTRIBUTE_MAX_PITCH: one copy per row.
func TestGPUCopyHugePitch(t *testing.T) {
	r := openRaw(t, Config{})
	pitch := r.d.maxPitch + 64
	t.Logf("max pitch %d", r.d.maxPitch)
	size := int(pitch + 64)
	a, b := r.alloc(device.DeviceMemory, size), r.alloc(device.DeviceMemory, size)
	h := r.alloc(device.PinnedMemory, 128)
	fill := func(dst *region, off uint64, v byte) device.Part {
		return device.Part{Kind: device.CopyRows, Queue: 1, Dst: dst, DstOffset: off, RowBytes: 64, Rows: 1, DstPitch: 64, Filling: true, Byte: v}
	}
	r.submit(nil, fill(a, 0, 1), fill(a, pitch, 2),
		device.Part{Kind: device.CopyRows, Queue: 1, Src: a, Dst: b, RowBytes: 64, Rows: 2, SrcPitch: pitch, DstPitch: pitch},
		device.Part{Kind: device.CopyRows, Queue: 1, Src: b, Dst: h, RowBytes: 64, Rows: 2, SrcPitch: pitch, DstPitch: 64},
	)
	r.wait(r.v)
	for i, c := range h.bytes() {
		if want := byte(1 + i/64); c != want {
			t.Fatalf("byte %d is %d, want %d", i, c, want)
		}
	}
}

// TestGPUImages loads the kernels as a cubin, a fatbin and PTX, and
// refuses a cubin for another GPU.
func TestGPUImages(t *testing.T) {
	dev := openRig(t, Config{})
	x := alloc(t, dev, device.PinnedMemory, 4*256)
	cubin, ok := testkernels.Cubin(dev.Arch())
	if !ok {
		t.Skipf("no test cubin for %s", dev.Arch())
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{{"cubin", cubin}, {"fatbin", testkernels.Fatbin()}, {"PTX", testkernels.PTX()}} {
		name, b := c.name, c.b
		start := time.Now()
		img, err := dev.LoadImage(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		took := time.Since(start)
		twice := resolve(t, img, "twice")
		if again := resolve(t, img, "twice"); again != twice || twice.Params() != 8 {
			t.Fatalf("%s: a second resolve differs, or twice reads %d parameter bytes", name, twice.Params())
		}
		if _, err := img.Resolve("absent"); !errors.Is(err, rig.ErrNoFunction) {
			t.Fatalf("%s: resolving an absent function answered %v", name, err)
		}
		for i := 0; i < 256; i++ {
			binary.LittleEndian.PutUint32(x.Bytes()[4*i:], math.Float32bits(1.5))
		}
		run := submission(t, dev, rig.Launch(twice, 8, rig.ReadWrite(0, 0))).Take()
		run.Threads(0, 256, 1, 1)
		p, err := run.Submit(bg, x)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(bg); err != nil {
			t.Fatal(err)
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(x.Bytes()[4*255:])); got != 3 {
			t.Fatalf("%s: twice made %v of 1.5", name, got)
		}
		if err := img.Unload(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: loaded and placed in %v", name, took)
	}
	if b, _ := testkernels.Cubin("sm_80"); dev.Arch() != "sm_80" {
		_, err := dev.LoadImage(b)
		if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_") {
			t.Fatalf("a cubin for sm_80 answered %v", err)
		}
		t.Logf("sm_80 cubin: %v", err)
	}
}

// TestGPUParams launches kernels of mixed parameter alignment, of 4,000
// and of 32,000 parameter bytes.
func TestGPUParams(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	out := alloc(t, dev, device.PinnedMemory, 4*256)
	ob := out.Bytes()
	i32 := func(i int) int32 { return int32(binary.LittleEndian.Uint32(ob[4*i:])) }

	mixed := resolve(t, img, "mixed")
	if mixed.Params() != 32 {
		t.Fatalf("mixed reads %d parameter bytes, want 32", mixed.Params())
	}
	run := submission(t, dev, rig.Launch(mixed, 32, rig.Write(0, 16))).Take()
	pb := run.Params(0)
	pb[0] = 'A'
	binary.LittleEndian.PutUint16(pb[2:], uint16(0xfffd)) // -3
	binary.LittleEndian.PutUint64(pb[8:], math.Float64bits(12.75))
	binary.LittleEndian.PutUint64(pb[24:], 1<<40+5)
	p, err := run.Submit(bg, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(bg); err != nil {
		t.Fatal(err)
	}
	if i32(0) != 'A' || i32(1) != -3 || i32(2) != 12 || i32(3) != 5 {
		t.Fatalf("mixed wrote %d %d %d %d", i32(0), i32(1), i32(2), i32(3))
	}

	for _, c := range []struct {
		name   string
		params int
		stride int
	}{{"params4000", 4008, 1}, {"params32000", 32008, 7}} {
		f := resolve(t, img, c.name)
		if f.Params() != c.params {
			t.Fatalf("%s reads %d parameter bytes, want %d", c.name, f.Params(), c.params)
		}
		run := submission(t, dev, rig.Launch(f, c.params, rig.Write(0, c.params-8))).Take()
		run.Threads(0, 32, 1, 1)
		pb := run.Params(0)
		for i := 0; i < (c.params-8)/4; i++ {
			binary.LittleEndian.PutUint32(pb[4*i:], uint32(i*3+1))
		}
		p, err := run.Submit(bg, out)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(bg); err != nil {
			t.Fatal(err)
		}
		for th := 0; th < 32; th++ {
			if got, want := i32(th), int32(th*c.stride*3+1); got != want {
				t.Fatalf("%s: out[%d] = %d, want %d", c.name, th, got, want)
			}
		}
	}
}

// TestGPUSharedLocal runs kernels with static and dynamic shared memory,
// and with local memory.
func TestGPUSharedLocal(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	dyn := resolve(t, img, "shared_dynamic")
	t.Logf("shared_dynamic may take %d bytes of dynamic shared memory", dyn.Shared())
	if dyn.Shared() <= 48<<10 {
		t.Errorf("the image did not raise the dynamic shared memory: %d", dyn.Shared())
	}
	n := dyn.Shared() / 4
	x := alloc(t, dev, device.PinnedMemory, 4*n)
	xb := x.Bytes()
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(xb[4*i:], uint32(i))
	}
	stat := resolve(t, img, "shared_static")
	run := submission(t, dev, rig.Launch(stat, 8, rig.ReadWrite(0, 0))).Take()
	run.Threads(0, 1024, 1, 1)
	p, err := run.Submit(bg, x)
	if err == nil {
		err = p.Wait(bg)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1024; i++ {
		if got := binary.LittleEndian.Uint32(xb[4*i:]); got != uint32(1023-i) {
			t.Fatalf("shared_static: x[%d] = %d", i, got)
		}
	}
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(xb[4*i:], uint32(i))
	}
	run = submission(t, dev, rig.Launch(dyn, 12, rig.ReadWrite(0, 0))).Take()
	run.Threads(0, 256, 1, 1)
	run.Shared(0, 4*n)
	binary.LittleEndian.PutUint32(run.Params(0)[8:], uint32(n))
	if p, err = run.Submit(bg, x); err == nil {
		err = p.Wait(bg)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if got := binary.LittleEndian.Uint32(xb[4*i:]); got != uint32(n-1-i) {
			t.Fatalf("shared_dynamic: x[%d] = %d, want %d", i, got, n-1-i)
		}
	}

	loc := resolve(t, img, "local_mem")
	idx := alloc(t, dev, device.PinnedMemory, 4*64)
	out := alloc(t, dev, device.PinnedMemory, 4*64)
	for i := 0; i < 64; i++ {
		binary.LittleEndian.PutUint32(idx.Bytes()[4*i:], uint32(i*5%256))
	}
	run = submission(t, dev, rig.Launch(loc, 16, rig.Read(0, 0), rig.Write(1, 8))).Take()
	run.Threads(0, 64, 1, 1)
	if p, err = run.Submit(bg, idx, out); err == nil {
		err = p.Wait(bg)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		if got, want := int32(binary.LittleEndian.Uint32(out.Bytes()[4*i:])), int32(i*5%256*i); got != want {
			t.Fatalf("local_mem: out[%d] = %d, want %d", i, got, want)
		}
	}
}

// TestGPUGlobals runs kernels that use the image's global and constant
// data, which a test sets through cuModuleGetGlobal.
func TestGPUGlobals(t *testing.T) {
	r := openRaw(t, Config{})
	count, lookup := r.entry("count"), r.entry("lookup")
	out := r.alloc(device.PinnedMemory, 4*64)
	for i := 0; i < 2; i++ {
		r.submit(nil, launch(count, 1, 1, u64s(out.loc.Address)))
		r.wait(r.v)
		if got := binary.LittleEndian.Uint64(out.bytes()); got != uint64(i) {
			t.Fatalf("count's global counter read %d at launch %d", got, i)
		}
	}
	img := r.imgs[0].(*image)
	var table uint64
	var size uint64
	name := []byte("table\x00")
	tb := r.d.t
	lockThread()
	var prev uintptr
	tb.call(tb.cuCtxGetCurrent, uintptr(unsafe.Pointer(&prev)))
	tb.call(tb.cuCtxSetCurrent, r.d.ctx)
	rc := tb.call(tb.cuModuleGetGlobal, uintptr(unsafe.Pointer(&table)), uintptr(unsafe.Pointer(&size)), img.mod, uintptr(unsafe.Pointer(&name[0])))
	tb.call(tb.cuCtxSetCurrent, prev)
	unlockThread()
	if rc != 0 || size != 1024 {
		t.Fatalf("cuModuleGetGlobal(table): %v, %d bytes", tb.err(rc), size)
	}
	vals := r.alloc(device.PinnedMemory, 1024)
	for i := 0; i < 256; i++ {
		binary.LittleEndian.PutUint32(vals.bytes()[4*i:], math.Float32bits(float32(i)/2))
	}
	idx := r.alloc(device.PinnedMemory, 4*64)
	for i := 0; i < 64; i++ {
		binary.LittleEndian.PutUint32(idx.bytes()[4*i:], uint32(255-i))
	}
	tbl := &region{kind: devMem, size: size, loc: device.Location{Address: table, Handle: table}}
	r.submit(nil,
		device.Part{Kind: device.CopyRows, Src: vals, Dst: tbl, RowBytes: 1024, Rows: 1, SrcPitch: 1024, DstPitch: 1024},
		launch(lookup, 1, 64, u64s(idx.loc.Address, out.loc.Address)))
	r.wait(r.v)
	for i := 0; i < 64; i++ {
		if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out.bytes()[4*i:])), float32(255-i)/2; got != want {
			t.Fatalf("lookup: out[%d] = %v, want %v", i, got, want)
		}
	}
}

// setFlag ends spin_until kernels waiting on the flag.
func setFlag(b []byte) { atomic.StoreUint64(word64(b, 0), 1) }

// TestGPUWaits checks the order between the two streams, within a value
// and between values, and waits on words that another writer stores.
func TestGPUWaits(t *testing.T) {
	r := openRaw(t, Config{})
	spin, store := r.entry("spin_until"), r.entry("store64")
	flag := r.alloc(device.PinnedMemory, 8)
	dst := r.alloc(device.PinnedMemory, 64)
	t.Cleanup(func() { setFlag(flag.bytes()) })
	// The observable work on COPY:0: a C fill that writes the value into
	// dst (cuStreamWriteValue64, a stream memory operation).
	mark := device.Part{Kind: device.Fill, Queue: 1, FillFn: r.d.t.cuStreamWriteValue64, FillArg: uintptr(dst.loc.Address)}
	marked := func() uint64 { return atomic.LoadUint64(word64(dst.bytes(), 0)) }
	check := func(what string, want uint64) {
		t.Helper()
		if got := marked(); got != want {
			t.Fatalf("%s: the fill's word reads %d, want %d", what, got, want)
		}
	}
	spinning := launch(spin, 1, 1, u64s(flag.loc.Address))
	clear(dst.bytes())
	clear(flag.bytes())

	// Between values: value 2's fill on COPY:0 runs after value 1's spin
	// on COMPUTE:0.
	r.submit(nil, spinning)
	v := r.submit(nil, mark)
	r.d.Commit(v)
	time.Sleep(50 * time.Millisecond)
	check("a value on the other stream, while the last spins", 0)
	setFlag(flag.bytes())
	r.wait(v)
	check("after the spin", v)

	// Within a value: a part after a part on the other stream waits for
	// it; without After, it runs beside it.
	atomic.StoreUint64(word64(flag.bytes(), 0), 0)
	after := mark
	after.After = 1
	prev := v
	v = r.submit(nil, spinning, after)
	r.d.Commit(v)
	time.Sleep(50 * time.Millisecond)
	check("a part after a spinning part", prev)
	setFlag(flag.bytes())
	r.wait(v)
	check("after the spin", v)

	atomic.StoreUint64(word64(flag.bytes(), 0), 0)
	v = r.submit(nil, spinning, mark)
	r.d.Commit(v)
	deadline := time.Now().Add(5 * time.Second)
	for marked() != v && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	check("a part beside a spinning part on the other stream", v)
	setFlag(flag.bytes())
	r.wait(v)

	// Waits on words of rig's array that another writer stores, in
	// circular order across the wrap of 64-bit values.
	slot, w, err := timeline.Take()
	if err != nil {
		t.Fatal(err)
	}
	defer timeline.Give(slot)
	const top = ^uint64(0)
	for i, c := range []struct {
		start, wait, then uint64
	}{
		{10, 20, 20}, {top - 16, 5, 6}, {top - 3, top - 1, 2}, {3, 1, 3}, {top, 0, 0}, {1 << 63, 0, 5},
	} {
		atomic.StoreUint64(w, c.start)
		// A mark no value of the device's reaches, in a dst that no
		// earlier value's fill left a mark in: the device's values start
		// where its word's slot was left.
		mark := 1<<62 + uint64(i)
		clear(dst.bytes())
		waits := []device.Wait{{Word: w, Value: c.wait}, {Word: w, Value: c.wait - 1}}
		if i%2 == 1 {
			waits = waits[:1] // one wait is one cuStreamWaitValue64
		}
		v := r.submit(waits, launch(store, 1, 1, u64s(dst.loc.Address, mark)))
		r.d.Commit(v)
		reached := device.AtLeast(c.start, c.wait)
		time.Sleep(20 * time.Millisecond)
		got := binary.LittleEndian.Uint64(dst.bytes())
		if (got == mark) != reached {
			t.Fatalf("word %#x, wait for %#x: the work ran %v before the word moved", c.start, c.wait, got == mark)
		}
		atomic.StoreUint64(w, c.then)
		r.wait(v)
		if got := binary.LittleEndian.Uint64(dst.bytes()); got != mark {
			t.Fatalf("word %#x, wait for %#x: the work did not run", c.then, c.wait)
		}
	}
}

// TestGPUHostMemory reads back, on the host, Pinned and MapHost buffers
// that kernels wrote, and maps one range twice.
func TestGPUHostMemory(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	store := resolve(t, img, "store64")
	s := submission(t, dev, rig.Launch(store, 16, rig.Write(0, 0)))
	write := func(b *rig.Buffer, v uint64) {
		t.Helper()
		run := s.Take()
		binary.LittleEndian.PutUint64(run.Params(0)[8:], v)
		p, err := run.Submit(bg, b)
		if err == nil {
			err = p.Wait(bg)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	pin := alloc(t, dev, device.PinnedMemory, 64)
	write(pin, 0x1234)
	if got := atomic.LoadUint64(word64(pin.Bytes(), 0)); got != 0x1234 {
		t.Fatalf("Pinned reads %#x", got)
	}
	mem := make([]byte, 3*os.Getpagesize())
	b1, err := dev.MapHost(mem[8:100])
	if err != nil {
		t.Fatal(err)
	}
	b2, err := dev.MapHost(mem[200:300])
	if err != nil {
		t.Fatal(err)
	}
	hosts.mu.Lock()
	n := len(hosts.ranges)
	counts := 0
	for _, rg := range hosts.ranges {
		counts += rg.count
	}
	hosts.mu.Unlock()
	write(b1, 0x55)
	write(b2, 0x66)
	if binary.LittleEndian.Uint64(mem[8:]) != 0x55 || binary.LittleEndian.Uint64(mem[200:]) != 0x66 {
		t.Fatalf("MapHost memory reads %#x and %#x", binary.LittleEndian.Uint64(mem[8:]), binary.LittleEndian.Uint64(mem[200:]))
	}
	_ = b1.Free()
	write(b2, 0x77)
	if binary.LittleEndian.Uint64(mem[200:]) != 0x77 {
		t.Fatal("the second mapping failed after the first's free")
	}
	_ = b2.Free()
	t.Logf("%d ranges, %d regions over them while both were mapped", n, counts)
	// Inside Pinned memory: counted against the range its Alloc locked.
	pb := pin.Bytes()
	b3, err := dev.MapHost(pb[16:32])
	if err != nil {
		t.Fatal(err)
	}
	write(b3, 0x99)
	if got := binary.LittleEndian.Uint64(pb[16:]); got != 0x99 {
		t.Fatalf("a mapping inside Pinned memory reads %#x", got)
	}
	_ = b3.Free()
	// CUDA maps no GPU memory for the host: the facts say so, and rig
	// returns at once, with no rounds of reclamation.
	if m, err := dev.Alloc(device.MappedMemory, 64); err == nil || !errors.Is(err, device.ErrNoMemory) || !strings.Contains(err.Error(), "no Mapped memory") {
		t.Errorf("Mapped memory answered %v, %v", m, err)
	}
}

// TestGPURefusals submits each launch the GPU refuses, and checks the
// refusal names the part and that nothing was submitted.
func TestGPURefusals(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	empty := resolve(t, img, "empty")
	noop := rig.FillBytes(0, 0, 4, 0)
	buf := alloc(t, dev, device.DeviceMemory, 64)
	for _, c := range []struct {
		name string
		part rig.Part
		set  func(r *rig.Run)
		why  string
	}{
		{"queue 1", rig.Launch(empty, 0).On(1), nil, "COPY:0"},
		{"0 groups", rig.Launch(empty, 0), func(r *rig.Run) { r.Groups(1, 0, 1, 1) }, "0 groups"},
		{"0 threads", rig.Launch(empty, 0), func(r *rig.Run) { r.Threads(1, 32, 0, 1) }, "0 threads"},
		{"grid", rig.Launch(empty, 0), func(r *rig.Run) { r.Groups(1, 1, 1<<20, 1) }, "MAX_GRID_DIM_Y"},
		{"block", rig.Launch(empty, 0), func(r *rig.Run) { r.Threads(1, 2048, 1, 1) }, "MAX_BLOCK_DIM_X"},
		{"threads", rig.Launch(empty, 0), func(r *rig.Run) { r.Threads(1, 32, 32, 2) }, "threads per group"},
		{"shared", rig.Launch(empty, 0), func(r *rig.Run) { r.Shared(1, empty.Shared()+1) }, "dynamic shared memory"},
		{"words", rig.Words([]uint32{0, 0}), nil, "words"},
		{"fill", rig.Fill("not a function", 0), nil, "C function pointer"},
	} {
		s := submission(t, dev, noop, c.part)
		run := s.Take()
		if c.set != nil {
			c.set(run)
		}
		last := dev.Last()
		_, err := run.Submit(bg, buf)
		var re *rig.RefusalError
		if !errors.As(err, &re) || !errors.Is(err, rig.ErrRefused) || re.Part != 1 || !strings.Contains(re.Reason, c.why) {
			t.Errorf("%s: answered %v, want a refusal of part 1 naming %q", c.name, err, c.why)
			continue
		}
		if dev.Last() != last {
			t.Errorf("%s: the refused submission took a value", c.name)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestGPUGraph launches graphs through the capability: 1,000 chained
// kernel nodes, and a graph of memset, memcpy, kernel and event nodes,
// updated in place.
func TestGPUGraph(t *testing.T) {
	dev := openRig(t, Config{})
	rec, _ := rig.Capability(dev, cuda.Key)
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	empty := resolve(t, img, "empty")
	g, err := rec.Graphs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	var prev []cuda.Node
	for i := 0; i < 1000; i++ {
		n, err := g.Kernel(cuda.Kernel{Func: empty.Entry().Code, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}}, prev...)
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		prev = []cuda.Node{n}
	}
	x, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Upload(); err != nil {
		t.Fatal(err)
	}
	s := submission(t, dev, rig.Fill(x, 0).On(0))
	p, err := s.Take().Submit(bg)
	if err == nil {
		err = p.Wait(bg)
	}
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const runs = 20
	for i := 0; i < runs; i++ {
		if p, err = s.Take().Submit(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(bg); err != nil {
		t.Fatal(err)
	}
	t.Logf("a graph of 1,000 chained empty kernels through a fill: %.0f ns per kernel", float64(time.Since(start).Nanoseconds())/(runs*1000))
	_ = x.Destroy()
	_ = g.Destroy()

	// memset -> memcpy -> kernel -> event record, on COPY:0.
	store := resolve(t, img, "store64")
	dv := alloc(t, dev, device.DeviceMemory, 1024)
	host := alloc(t, dev, device.PinnedMemory, 1024)
	word := alloc(t, dev, device.PinnedMemory, 8)
	ev, err := rec.Graphs.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	g, err = rec.Graphs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := g.Memset(cuda.Memset{Dst: dv.Address(), Value: 1, RowBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := g.Copy(cuda.Copy{Dst: host.Address(), Src: dv.Address(), RowBytes: 1024}, ms)
	if err != nil {
		t.Fatal(err)
	}
	kn, err := g.Kernel(cuda.Kernel{Func: store.Entry().Code, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: u64s(word.Address(), 11)}, mc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.EventRecord(ev, kn); err != nil {
		t.Fatal(err)
	}
	x, err = g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	s = submission(t, dev, rig.Fill(x, 0, rig.Uses(0, rig.Writes), rig.Uses(1, rig.Writes), rig.Uses(2, rig.Writes)))
	launchGraph := func(what string, b byte, v uint64) {
		t.Helper()
		p, err := s.Take().Submit(bg, dv, host, word)
		if err == nil {
			err = p.Wait(bg)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range host.Bytes() {
			if c != b {
				t.Fatalf("%s: byte %d reads %d, want %d", what, i, c, b)
			}
		}
		if got := atomic.LoadUint64(word64(word.Bytes(), 0)); got != v {
			t.Fatalf("%s: the kernel node wrote %d, want %d", what, got, v)
		}
	}
	launchGraph("first launch", 1, 11)
	if err := x.SetMemset(ms, cuda.Memset{Dst: dv.Address(), Value: 2, RowBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetKernel(kn, cuda.Kernel{Func: store.Entry().Code, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: u64s(word.Address(), 22)}); err != nil {
		t.Fatal(err)
	}
	launchGraph("after the updates", 2, 22)
	// The graph keeps the image's module after rig unloads it; no new
	// graph records its functions.
	if err := img.Unload(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	launchGraph("after the image's unload", 2, 22)
	g2, err := rec.Graphs.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Kernel(cuda.Kernel{Func: store.Entry().Code, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: u64s(word.Address(), 1)}); err == nil {
		t.Error("a new graph recorded a function of an unloaded image")
	}
	_ = g2.Destroy()
	_ = x.Destroy()
	_ = g.Destroy()
	_ = rec.Graphs.DestroyEvent(ev)
}

// TestGPUHang loses a device whose kernel spins past a shortened hang
// bound, then ends the kernel: the device gives everything back, and the
// GPU opens again.
func TestGPUHang(t *testing.T) {
	needGPU(t)
	dev, err := rig.Open(bg, Open(0, Config{Hang: 300 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	spin := resolve(t, img, "spin_until")
	flag, err := dev.Alloc(device.PinnedMemory, 8)
	if err != nil {
		t.Fatal(err)
	}
	fb := flag.Bytes()
	released := false
	defer func() {
		if !released {
			setFlag(fb)
		}
	}()
	p, err := submission(t, dev, rig.Launch(spin, 8, rig.Read(0, 0))).Take().Submit(bg, flag)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.Wait(bg)
	if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), "no progress") {
		t.Fatalf("the spin answered %v", err)
	}
	t.Logf("lost after %v: %v", time.Since(start), err)
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	// An open waits for the stopped work while its context allows.
	octx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	if _, err := rig.Open(octx, GPU(0)); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still runs") {
		t.Errorf("an open while the stopped work spins answered %v", err)
	}
	cancel()
	setFlag(fb)
	select {
	case <-dev.Done():
		released = true // the flag's memory is freed
	case <-time.After(10 * time.Second):
		t.Fatal("the device did not give everything back after its work ended")
	}
	again := openRig(t, Config{})
	if again.Facts().HangMs != 30000 {
		t.Errorf("the default hang bound is %d ms", again.Facts().HangMs)
	}
}

// TestGPUProfile stamps timed values and settles them on the host's clock.
func TestGPUProfile(t *testing.T) {
	dev := openRig(t, Config{})
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	empty := resolve(t, img, "empty")
	buf := alloc(t, dev, device.DeviceMemory, 1<<20)
	s := submission(t, dev, rig.Launch(empty, 0), rig.FillBytes(0, 0, 1<<20, 1).On(1))
	dev.SetTimed(true)
	before := device.Now()
	var p rig.Point
	const n = 20
	for i := 0; i < n; i++ {
		if p, err = s.Take().Submit(bg, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(bg); err != nil {
		t.Fatal(err)
	}
	after := device.Now()
	dev.SetTimed(false)
	stamps, err := dev.Settle(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stamps) != n {
		t.Fatalf("%d stamps, want %d", len(stamps), n)
	}
	for i, st := range stamps {
		if i > 0 && st.Value != stamps[i-1].Value+1 {
			t.Fatalf("stamps out of order: %d after %d", st.Value, stamps[i-1].Value)
		}
		if st.Start > st.End || st.Start < before-20_000 || st.End > after+20_000 {
			t.Fatalf("stamp %d: %d..%d outside %d..%d", i, st.Start, st.End, before, after)
		}
	}
	t.Logf("first stamp %+v, last %+v", stamps[0], stamps[n-1])
}

// TestGPUOwnWord opens a device with a word outside rig's array: the
// device keeps a word of its own, read through Signaled.
func TestGPUOwnWord(t *testing.T) {
	needGPU(t)
	w := new(uint64)
	*w = 41
	drv, err := GPU(0).Make(w)
	if err != nil {
		t.Fatal(err)
	}
	d := drv.(*gpu)
	if d.Facts().Word != nil || d.Facts().OwnWord == nil || d.Signaled() != 41 {
		t.Fatalf("own word: facts word %v, own %v, signaled %d", d.Facts().Word, d.Facts().OwnWord, d.Signaled())
	}
	code, err := d.Image(kernels(t, d.facts.Arch))
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.Entry(code.Loaded, "empty")
	if err != nil {
		t.Fatal(err)
	}
	s := device.Submission{Value: 42, Parts: []device.Part{launch(e, 1, 32, nil)}}
	if a := d.Submit(&s); a.Kind != device.Pending {
		t.Fatalf("submit answered %+v", a)
	}
	if a := d.Commit(42); a.Kind != device.Committed {
		t.Fatalf("commit answered %+v", a)
	}
	end := time.Now().Add(5 * time.Second)
	for d.Signaled() != 42 && time.Now().Before(end) {
		_ = d.Sleep(41, 10*time.Millisecond)
	}
	if d.Signaled() != 42 {
		t.Fatalf("the own word reads %d", d.Signaled())
	}
	_ = d.Stop("")
	_ = d.Unload(code.Loaded)
	_ = d.Free(d.Facts().OwnWord)
}

// TestGPUDMA exports Device memory as a dma-buf, or returns why not.
func TestGPUDMA(t *testing.T) {
	r := openRaw(t, Config{})
	g := r.alloc(device.DeviceMemory, 2<<20)
	dma, err := r.d.DMA(g, r.d.facts.Bus)
	t.Logf("dma of 2 MiB of Device memory for %s: %+v, %v", r.d.facts.Bus, dma, err)
	if err == nil {
		if dma.Kind != device.DMABuf || dma.FD < 0 {
			t.Fatalf("dma answered %+v", dma)
		}
		_ = closeFD(dma.FD)
	} else if !strings.Contains(err.Error(), "DMA_BUF") && !strings.Contains(err.Error(), "CUDA_ERROR") {
		t.Errorf("the refusal names no cause: %v", err)
	}
	if _, err := r.d.DMA(g, "zz"); err == nil || !strings.Contains(err.Error(), "zz") {
		t.Errorf("dma for no bus address answered %v", err)
	}
	if _, err := r.d.DMA(g, "0000:ff:1f.7"); err == nil || !strings.Contains(err.Error(), "0000:ff:1f.7") {
		t.Errorf("dma for an absent function answered %v", err)
	}
	if r.d.dmaDevice != 0 {
		odd := r.alloc(device.DeviceMemory, 1000)
		if _, err := r.d.DMA(odd, r.d.facts.Bus); err == nil || !strings.Contains(err.Error(), "pages") {
			t.Errorf("dma of 1000 bytes answered %v", err)
		}
	}
}

// TestGPUNoAlloc checks that the hot path allocates nothing in steady
// state, through the driver and through rig.
func TestGPUNoAlloc(t *testing.T) {
	r := openRaw(t, Config{})
	e := r.entry("store64")
	out := r.alloc(device.PinnedMemory, 8)
	s := device.Submission{Parts: []device.Part{launch(e, 1, 1, u64s(out.loc.Address, 7)),
		{Kind: device.CopyRows, Queue: 1, Dst: out, Filling: true, RowBytes: 4, Rows: 1, DstPitch: 4, After: 1}}}
	step := func() {
		r.v++
		s.Value = r.v
		if a := r.d.Room(&s); a.Kind != device.RoomOK {
			t.Fatal(a.Reason)
		}
		if a := r.d.Submit(&s); a.Kind == device.Failed {
			t.Fatal(a.Reason)
		}
		r.d.Commit(r.v)
	}
	step()
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("room + submit + commit allocate %v times a value", n)
	}
	r.wait(r.v)

	dev := openRigAfter(t, r)
	img, err := dev.LoadImage(kernels(t, dev.Arch()))
	if err != nil {
		t.Fatal(err)
	}
	empty := resolve(t, img, "empty")
	sub := submission(t, dev, rig.Launch(empty, 0))
	var p rig.Point
	rstep := func() {
		run := sub.Take()
		run.Threads(0, 32, 1, 1)
		p, err = run.Submit(bg)
		if err != nil {
			t.Fatal(err)
		}
	}
	rstep()
	if n := testing.AllocsPerRun(1000, rstep); n != 0 {
		t.Errorf("rig's Take + Submit allocate %v times a value", n)
	}
	if err := p.Wait(bg); err != nil {
		t.Fatal(err)
	}
}

// openRigAfter stops the raw device r and opens GPU 0 through rig.
func openRigAfter(t *testing.T, r *raw) *rig.Device {
	r.close()
	return openRig(t, Config{})
}

// TestGPUHostToHost copies between two host regions while earlier work
// runs. CUDA copies host to host with the calling thread once the stream's
// earlier work completed, so Submit waits for that work: the test states
// how long, and checks the bytes.
func TestGPUHostToHost(t *testing.T) {
	r := openRaw(t, Config{})
	spin := r.entry("spin_until")
	flag := r.alloc(device.PinnedMemory, 8)
	src, dst := r.alloc(device.PinnedMemory, 1<<20), r.alloc(device.PinnedMemory, 1<<20)
	t.Cleanup(func() { setFlag(flag.bytes()) })
	for i := range src.bytes() {
		src.bytes()[i] = byte(i / 4096)
	}
	r.submit(nil, launch(spin, 1, 1, u64s(flag.loc.Address)))
	done := make(chan uint64, 1)
	start := time.Now()
	go func() {
		done <- r.submit(nil,
			device.Part{Kind: device.CopyRows, Queue: 1, Src: src, Dst: dst, RowBytes: 1 << 19, Rows: 1, SrcPitch: 1 << 19, DstPitch: 1 << 19},
			device.Part{Kind: device.CopyRows, Queue: 1, Src: src, Dst: dst, SrcOffset: 1 << 19, DstOffset: 1 << 19, RowBytes: 1000, Rows: 128, SrcPitch: 4096, DstPitch: 4096})
	}()
	var v uint64
	select {
	case v = <-done:
		t.Logf("a host-to-host copy behind a spinning kernel submitted in %v", time.Since(start))
	case <-time.After(300 * time.Millisecond):
		setFlag(flag.bytes())
		v = <-done
		t.Logf("a host-to-host copy behind a spinning kernel waited in Submit until the kernel ended (%v)", time.Since(start))
	}
	setFlag(flag.bytes())
	r.wait(v)
	for i := 0; i < 1<<19; i++ {
		if dst.bytes()[i] != src.bytes()[i] {
			t.Fatalf("byte %d differs", i)
		}
	}
	for row := 0; row < 128; row++ {
		o := 1<<19 + row*4096
		if !bytes.Equal(dst.bytes()[o:o+1000], src.bytes()[o:o+1000]) {
			t.Fatalf("row %d differs", row)
		}
	}
}

// TestGPULoneLaunches submits values of one launch each, the values
// Submit makes with fewest steps (submitLaunch): each returns Pending
// until the last write of the word is 64 values back, then Committed; a
// value that ends on the copy stream sends the next lone launch the whole
// way, after the copy; every launch runs, in order.
func TestGPULoneLaunches(t *testing.T) {
	r := openRaw(t, Config{})
	e := r.entry("store64")
	out := r.alloc(device.PinnedMemory, 8)
	host := word64(out.bytes(), 0)
	written := r.v
	lone := func(x uint64) {
		t.Helper()
		s := device.Submission{Value: r.v + 1, Parts: []device.Part{launch(e, 1, 1, u64s(out.loc.Address, x))}}
		if a := r.d.Room(&s); a.Kind != device.RoomOK {
			t.Fatalf("room: %+v", a)
		}
		r.v++
		want := device.Pending
		if r.v-written >= wordsCommittedLater {
			want, written = device.Committed, r.v
		}
		if a := r.d.Submit(&s); a.Kind != want {
			t.Fatalf("value %d answered %v (%s), want %v", r.v, a.Kind, a.Reason, want)
		}
	}
	for x := uint64(1); x <= 150; x++ {
		lone(x)
	}
	r.wait(r.v)
	if got := atomic.LoadUint64(host); got != 150 {
		t.Fatalf("the last of 150 launches stored %d, want 150", got)
	}
	// A fill on the copy stream, then a lone launch: it runs after the fill.
	r.submit(nil, device.Part{Kind: device.CopyRows, Queue: device.Copy, Dst: out, Filling: true, Byte: 0xab, RowBytes: 8, Rows: 1, DstPitch: 8})
	written = r.v
	if r.d.end != device.Copy {
		t.Fatalf("the fill ended on stream %d", r.d.end)
	}
	lone(1000)
	if r.d.end != device.Compute {
		t.Fatalf("the launch ended on stream %d", r.d.end)
	}
	lone(1001)
	r.wait(r.v)
	if got := atomic.LoadUint64(host); got != 1001 {
		t.Fatalf("the launches after the fill stored %#x, want 1001", got)
	}
}
