package nvdev

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/gputest"
	"github.com/rig-go/rig/internal/testutil"
	rig "github.com/rig-go/rig/runtime"
)

// The bring-up's acceptance tests on the GPU: copies and fills of 1 B to
// 1 GiB on both queues, a wait on a word another device writes, a loss at a
// shortened hang bound, an open after each fault, the refusals, and no
// libcuda. Each step logs what it saw.

// pattern writes bytes that depend on salt and on their place in b.
func pattern(b []byte, salt uint64) {
	x := salt*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x += 0x9e3779b97f4a7c15
		z := (x ^ x>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		binary.LittleEndian.PutUint64(b[i:], z^z>>31)
	}
	for ; i < len(b); i++ {
		b[i] = byte(salt*31+uint64(i)) ^ 0x5a
	}
}

// invert writes the complement of src into dst.
func invert(dst, src []byte) {
	i := 0
	for ; i+8 <= len(src); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], ^binary.LittleEndian.Uint64(src[i:]))
	}
	for ; i < len(src); i++ {
		dst[i] = ^src[i]
	}
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	const chunk = 1 << 20
	for off := 0; off < len(a); off += chunk {
		end := min(off+chunk, len(a))
		if !bytes.Equal(a[off:end], b[off:end]) {
			for i := off; i < end; i++ {
				if a[i] != b[i] {
					return i
				}
			}
		}
	}
	return -1
}

// notByte is the first index of b that is not v, or -1.
func notByte(b []byte, v byte) int {
	block := bytes.Repeat([]byte{v}, 1<<16)
	for off := 0; off < len(b); off += len(block) {
		end := min(off+len(block), len(b))
		if !bytes.Equal(b[off:end], block[:end-off]) {
			for i := off; i < end; i++ {
				if b[i] != v {
					return i
				}
			}
		}
	}
	return -1
}

// around shows the bytes of b around index i.
func around(b []byte, i int) string {
	lo, hi := max(i-4, 0), min(i+5, len(b))
	return fmt.Sprintf("bytes %d to %d: % x", lo, hi-1, b[lo:hi])
}

// gpuOpen is the opener of GPU 0 that TestGPUCopiesAndFills and
// TestGPURefusedParts use, and bigBytes the size of TestGPUCopiesAndFills's
// largest copies and fills; TestAcceptanceOnFake runs those tests on the
// fake with smaller sizes.
var (
	gpuOpen         = func(c Config) device.Opener { return Open(0, gpuConfig(c)) }
	bigBytes uint64 = 1 << 30
)

// openNamed opens GPU 0 through rig under name (two devices of one GPU
// need two names) and closes it at the test's end.
func openNamed(t testing.TB, name string, c Config) *rig.Device {
	t.Helper()
	needGPU(t)
	o := gpuOpen(c)
	o.Name = name
	t0 := time.Now()
	dev, err := rig.Open(bg, o)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Logf("opened %s in %v (hang %d ms)", name, time.Since(t0), dev.Facts().HangMs)
	t.Cleanup(func() { closeDone(t, dev) })
	return dev
}

// Short names for testutil's helpers, which the tests call often.
var (
	closeDone = testutil.CloseDone
	allocBuf  = testutil.Alloc
)

// resolve loads the test kernels on dev and resolves names.
func resolve(t testing.TB, dev *rig.Device, names ...string) []*rig.Function {
	t.Helper()
	return testutil.Functions(t, dev, cubin(t), names...)
}

// submitWait submits the parts with the buffers and waits for them, both
// within d.
func submitWait(t testing.TB, dev *rig.Device, d time.Duration, parts []rig.Part, bufs ...*rig.Buffer) {
	t.Helper()
	testutil.SubmitWait(t, testutil.Submission(t, dev, parts...).Take(), d, bufs...)
}

// example runs the example on dev: 1,048,576 floats up by a copy,
// doubled by twice, down by a copy, checked.
func example(t testing.TB, dev *rig.Device) {
	t.Helper()
	const n = 1 << 20
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	took := gputest.Twice(t, ctx, dev, cubin(t), n)
	t.Logf("%s: the example doubled %d floats in %v", dev.Name(), n, took)
}

// TestGPUCopiesAndFills copies and fills 1 B to 1 GiB on both queues,
// at aligned and unaligned offsets, each checked by the host: a copy goes
// Pinned → Device → Device → Pinned in one submission, so that the host
// checks the three kinds; a fill of Device memory sits in a window the
// submission first copies up and then copies back down, and a fill of
// Pinned memory in a window the host wrote, so that the host checks the
// bytes just outside each fill are untouched. Every case writes fresh
// bytes into its source first, so that a copy that did not run leaves
// bytes of no earlier case. Copies and fills of 256 KiB or more within
// Device memory run as the driver's kernels, the rest on the copy engines.
func TestGPUCopiesAndFills(t *testing.T) {
	dev := openNamed(t, "NV", Config{})
	big := bigBytes
	t0 := time.Now()
	var p1, p2, d1, d2 *rig.Buffer
	for {
		room := int(big + 1<<16)
		var bufs []*rig.Buffer
		var err error
		for _, k := range []device.Memory{device.PinnedMemory, device.PinnedMemory, device.DeviceMemory, device.DeviceMemory} {
			var b *rig.Buffer
			if b, err = dev.Alloc(k, room); err != nil {
				err = fmt.Errorf("%d bytes of %v memory: %w", room, k, err)
				break
			}
			bufs = append(bufs, b)
		}
		if err == nil {
			p1, p2, d1, d2 = bufs[0], bufs[1], bufs[2], bufs[3]
			t.Logf("2 × %d bytes of Pinned and of Device memory allocated in %v", room, time.Since(t0))
			break
		}
		for _, b := range bufs {
			_ = b.Free()
		}
		if big <= 64<<20 {
			t.Fatalf("alloc: %v", err)
		}
		t.Errorf("alloc: %v: the cases of %d bytes are left out, the largest are of 64 MiB", err, big)
		big = 64 << 20
	}
	src, dst := p1.Bytes(), p2.Bytes()
	const margin = 8
	salt := uint64(0)
	var sizes []uint64
	for _, n := range []uint64{1, 3, 4, 5, 4095, 4096, 4097, 1<<20 + 7, 64 << 20} {
		if n < big {
			sizes = append(sizes, n)
		}
	}
	type offs struct{ so, d1, d2, po uint64 }

	copyCase := func(q int, n uint64, o offs) {
		t.Helper()
		salt++
		pattern(src[o.so:o.so+n], salt)
		invert(dst[o.po:o.po+n], src[o.so:o.so+n])
		for i := range uint64(margin) {
			dst[o.po-margin+i], dst[o.po+n+i] = 0xc3, 0xc3
		}
		t1 := time.Now()
		submitWait(t, dev, 60*time.Second, []rig.Part{
			rig.Copy(0, o.so, 1, o.d1, n).On(q),
			rig.Copy(1, o.d1, 2, o.d2, n).On(q),
			rig.Copy(2, o.d2, 3, o.po, n).On(q),
		}, p1, d1, d2, p2)
		el := time.Since(t1)
		what := fmt.Sprintf("queue %d: copy of %d bytes, Pinned+%d → Device+%d → Device+%d → Pinned+%d", q, n, o.so, o.d1, o.d2, o.po)
		if i := firstDiff(dst[o.po:o.po+n], src[o.so:o.so+n]); i >= 0 {
			t.Errorf("%s: byte %d reads 0x%x, want 0x%x (%s; source %s)", what, i, dst[o.po+uint64(i)], src[o.so+uint64(i)],
				around(dst[o.po:o.po+n], i), around(src[o.so:o.so+n], i))
			// Which copy failed: each Device window back down alone.
			for k, b := range []struct {
				buf *rig.Buffer
				off uint64
			}{{d1, o.d1}, {d2, o.d2}} {
				invert(dst[o.po:o.po+n], src[o.so:o.so+n])
				submitWait(t, dev, 60*time.Second, []rig.Part{rig.Copy(0, b.off, 1, o.po, n).On(device.Copy)}, b.buf, p2)
				t.Logf("%s: Device buffer %d read back alone: first difference at %d", what, k+1, firstDiff(dst[o.po:o.po+n], src[o.so:o.so+n]))
			}
			return
		}
		if i := notByte(dst[o.po-margin:o.po], 0xc3); i >= 0 {
			t.Errorf("%s: the copy wrote byte %d before its destination", what, i-margin)
		}
		if i := notByte(dst[o.po+n:o.po+n+margin], 0xc3); i >= 0 {
			t.Errorf("%s: the copy wrote byte %d after its destination", what, i)
		}
		t.Logf("%s in %v (%.2f GB/s a copy): right", what, el, 3*float64(n)/el.Seconds()/1e9)
	}

	fillCase := func(q int, k device.Memory, n, off uint64) {
		t.Helper()
		salt++
		v := byte(0xa0 + salt%64)
		lo, hi := off-margin, off+n+margin
		what := fmt.Sprintf("queue %d: fill of %d bytes of %v memory at +%d with 0x%x", q, n, k, off, v)
		pattern(src[lo:hi], salt)
		var el time.Duration
		if k == device.DeviceMemory {
			// Up, the fill, down.
			invert(dst[lo:hi], src[lo:hi])
			t1 := time.Now()
			submitWait(t, dev, 60*time.Second, []rig.Part{
				rig.Copy(0, lo, 1, lo, hi-lo).On(q),
				rig.FillBytes(1, off, n, v).On(q),
				rig.Copy(1, lo, 2, lo, hi-lo).On(q),
			}, p1, d1, p2)
			el = time.Since(t1)
		} else {
			copy(dst[lo:hi], src[lo:hi])
			t1 := time.Now()
			submitWait(t, dev, 60*time.Second, []rig.Part{rig.FillBytes(0, off, n, v).On(q)}, p2)
			el = time.Since(t1)
		}
		if i := notByte(dst[off:off+n], v); i >= 0 {
			t.Errorf("%s: byte %d reads 0x%x (%s)", what, i, dst[off+uint64(i)], around(dst[off:off+n], i))
			return
		}
		if i := firstDiff(dst[lo:off], src[lo:off]); i >= 0 {
			t.Errorf("%s: the byte %d before the fill reads 0x%x, was 0x%x", what, margin-i, dst[lo+uint64(i)], src[lo+uint64(i)])
		}
		if i := firstDiff(dst[off+n:hi], src[off+n:hi]); i >= 0 {
			t.Errorf("%s: the byte %d after the fill reads 0x%x, was 0x%x", what, i, dst[off+n+uint64(i)], src[off+n+uint64(i)])
		}
		t.Logf("%s in %v: right, the bytes around it untouched", what, el)
	}

	for q := range 2 {
		for _, n := range sizes {
			// Aligned: 4 KiB offsets, a distinct one for each buffer.
			copyCase(q, n, offs{so: 4096, d1: 8192, d2: 12288, po: 16384})
			// Unaligned, the Device buffers alike modulo 16 (the copy
			// kernel's vector path) and not (its byte path).
			copyCase(q, n, offs{so: 4096 + 1, d1: 8192 + 3, d2: 12288 + 3, po: 16384 + 13})
			copyCase(q, n, offs{so: 4096 + 7, d1: 8192 + 5, d2: 12288 + 10, po: 16384 + 2})
			fillCase(q, device.DeviceMemory, n, 4096)
			fillCase(q, device.DeviceMemory, n, 4096+1+uint64(q))
			fillCase(q, device.DeviceMemory, n, 4096+11)
			fillCase(q, device.PinnedMemory, n, 4096)
			fillCase(q, device.PinnedMemory, n, 4096+3)
		}
		// 1 GiB: one copy and one fill on each queue.
		copyCase(q, big, offs{so: 4096 + 5, d1: 8192 + 1, d2: 12288 + 1, po: 16384 + 9})
		if q == device.Compute {
			fillCase(q, device.DeviceMemory, big, 4096+6)
		} else {
			fillCase(q, device.PinnedMemory, big, 4096+6)
		}
	}
	t.Logf("%d cases in %v", salt, time.Since(t0))
	noCUDA(t)
}

// TestGPUWaitOtherDevice runs, on two devices of GPU 0 (NV and NV-B), a
// copy of device B that reads a buffer of device A which A's slow work
// writes: rig maps A's buffer for B (a view of the same addresses) and
// puts a GPU-side wait on A's word into B's submission, which then returns
// at once and holds B's copy channel until A's value is reached. The slow
// work is a kernel of many atomic additions on one counter, then a spin
// that the host releases after a delay.
func TestGPUWaitOtherDevice(t *testing.T) {
	needGPU(t)
	const n = 4 << 20
	// setup opens A and B, and gives A's source (a pattern), A's Device
	// buffer x (filled with 0xee) and B's destination (the pattern's
	// complement).
	setup := func(t *testing.T) (a, b *rig.Device, src, x, dst *rig.Buffer) {
		a = openNamed(t, "NV", Config{Hang: 30 * time.Second})
		b = openNamed(t, "NV-B", Config{Hang: 30 * time.Second})
		t.Logf("A's word %p, B's waits %v (GPU-side on other devices' words: %v)", a.Word(), b.Facts().Waits, b.Facts().Waits.Has(device.WaitStores))
		if a.Word() == nil || !b.Facts().Waits.Has(device.WaitStores) {
			t.Fatal("B cannot wait on A's word on the GPU")
		}
		src, x, dst = allocBuf(t, a, device.PinnedMemory, n), allocBuf(t, a, device.DeviceMemory, n), allocBuf(t, b, device.PinnedMemory, n)
		pattern(src.Bytes(), 77)
		invert(dst.Bytes(), src.Bytes())
		submitWait(t, a, 10*time.Second, []rig.Part{rig.FillBytes(0, 0, n, 0xee)}, x)
		return
	}
	// submitB submits B's copy of x into dst, and returns its point, or
	// fails the test where the submission does not return within 2 s (a
	// wait on the host for A's point), after calling release.
	submitB := func(t *testing.T, b *rig.Device, x, dst *rig.Buffer, release func()) rig.Point {
		return submitWithin(t, b, 2*time.Second, release, []rig.Part{rig.Copy(0, 0, 1, 0, n)}, x, dst)
	}
	// check waits for B's point, and checks that A's point was reached
	// then and that B copied A's data.
	check := func(t *testing.T, pa, pb rig.Point, src, dst *rig.Buffer, t0 time.Time) {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		if err := pb.Wait(ctx); err != nil {
			t.Fatalf("B's point: %+v", err)
		}
		aDone := pa.Reached()
		t.Logf("B's point reached %v after A's work started; A's point reached then: %v", time.Since(t0), aDone)
		if !aDone {
			t.Error("B's copy completed before A's work")
		}
		if err := pa.Wait(ctx); err != nil {
			t.Fatalf("A's point: %+v", err)
		}
		if i := firstDiff(dst.Bytes(), src.Bytes()); i >= 0 {
			t.Fatalf("B's copy differs from A's data at byte %d: %s, want %s", i, around(dst.Bytes(), i), around(src.Bytes(), i))
		}
		t.Logf("B's copy holds A's data (%d bytes)", n)
	}

	t.Run("kernel", func(t *testing.T) {
		a, b, src, x, dst := setup(t)
		count := resolve(t, a, "count")[0]
		out := allocBuf(t, a, device.PinnedMemory, 8)
		// 2^28 atomic additions on one counter, then the copy into x on
		// the same queue.
		s, err := rig.NewSubmission(a, rig.Launch(count, 8, rig.Write(0, 0)), rig.Copy(1, 0, 2, 0, n).On(device.Compute))
		if err != nil {
			t.Fatal(err)
		}
		run := s.Take()
		run.Groups(0, 1<<18, 1, 1)
		run.Threads(0, 1024, 1, 1)
		t0 := time.Now()
		pa, err := run.Submit(bg, out, src, x)
		if err != nil {
			t.Fatal(err)
		}
		pb := submitB(t, b, x, dst, func() {})
		if pa.Reached() {
			t.Logf("A's work ended within %v, before B's submission returned: this run does not show the wait", time.Since(t0))
		} else {
			t.Logf("A's work still runs %v after it started; B's point reached: %v", time.Since(t0), pb.Reached())
		}
		check(t, pa, pb, src, dst, t0)
		t.Logf("A's kernel of 2^28 additions and copy took %v at most; the counter read %d", time.Since(t0), binary.LittleEndian.Uint64(out.Bytes()))
	})

	t.Run("spin", func(t *testing.T) {
		a, b, src, x, dst := setup(t)
		spin := resolve(t, a, "spin_until")[0]
		flag := allocBuf(t, a, device.PinnedMemory, 8)
		word := (*uint64)(unsafe.Pointer(&flag.Bytes()[0]))
		atomic.StoreUint64(word, 0)
		released := false
		var tRelease time.Time
		release := func() {
			if !released {
				released = true
				tRelease = time.Now()
				atomic.StoreUint64(word, 1)
			}
		}
		defer release() // before the cleanups close the devices
		s, err := rig.NewSubmission(a, rig.Launch(spin, 8, rig.Read(0, 0)), rig.Copy(1, 0, 2, 0, n).On(device.Compute))
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		pa, err := s.Take().Submit(bg, flag, src, x)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if pa.Reached() {
			t.Fatal("A's spin ended before the host wrote the flag")
		}
		pb := submitB(t, b, x, dst, release)
		time.Sleep(200 * time.Millisecond)
		aNow, bNow := pa.Reached(), pb.Reached()
		t.Logf("200 ms after B's submission: A's point reached %v, B's %v; B's destination unchanged: %v",
			aNow, bNow, firstDiff(dst.Bytes()[:4096], src.Bytes()[:4096]) == 0)
		if aNow || bNow {
			t.Fatal("work ran before the host released A's spin")
		}
		release()
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		if err := pa.Wait(ctx); err != nil {
			t.Fatalf("A's point after the flag (the spin did not see the host's write?): %+v", err)
		}
		t.Logf("A's point reached %v after the host wrote the flag", time.Since(tRelease))
		check(t, pa, pb, src, dst, t0)
		t.Logf("B's point reached within %v of the flag", time.Since(tRelease))
	})
	noCUDA(t)
}

// TestGPUHang spins past a hang bound of 300 ms: the device is lost with
// "no progress for 300 ms", every waiter wakes with the loss, and once it
// closed, rig.Open(GPU(0)) opens the GPU again and runs the salt's
// example twice. The flag is never written: the stop ends the spin.
func TestGPUHang(t *testing.T) {
	needGPU(t)
	o := Open(0, Config{Hang: 300 * time.Millisecond})
	dev, err := rig.Open(bg, o)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			closeDone(t, dev)
		}
	}()
	if h := dev.Facts().HangMs; h != 300 {
		t.Errorf("the device's hang bound is %d ms", h)
	}
	spin := resolve(t, dev, "spin_until")[0]
	flag := allocBuf(t, dev, device.PinnedMemory, 8)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&flag.Bytes()[0])), 0)
	s, _ := rig.NewSubmission(dev, rig.Launch(spin, 8, rig.Read(0, 0)))
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	t0 := time.Now()
	p, err := s.Take().Submit(ctx, flag)
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	errs := make(chan error, waiters)
	for range waiters {
		go func() { errs <- p.Wait(ctx) }()
	}
	err = p.Wait(ctx)
	el := time.Since(t0)
	t.Logf("the spin's wait answered after %v: %+v", el, err)
	if !errors.Is(err, rig.ErrLost) || !strings.Contains(err.Error(), "no progress for 300 ms") {
		t.Fatalf("the spin's wait answered %v, want the loss of no progress for 300 ms", err)
	}
	if el < 300*time.Millisecond {
		t.Errorf("lost after %v, before the hang bound", el)
	}
	for i := range waiters {
		select {
		case e := <-errs:
			if !errors.Is(e, rig.ErrLost) {
				t.Errorf("waiter %d woke with %v", i, e)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d did not wake within 5 s of the loss", i)
		}
	}
	t.Logf("%d other waiters woke with the loss; the device's error: %v", waiters, dev.Err())
	closed = true
	if !closeDone(t, dev) {
		// rig keeps the name until the device gave everything back: try
		// the GPU under another name, to tell the two apart.
		o2 := GPU(0)
		o2.Name = "NV-after-hang"
		if d2, err := rig.Open(bg, o2); err != nil {
			t.Fatalf("an open of GPU 0 under another name: %v", err)
		} else {
			example(t, d2)
			closeDone(t, d2)
		}
		return
	}
	again, err := rig.Open(bg, GPU(0))
	if err != nil {
		t.Fatalf("rig.Open(GPU(0)) after the hang: %v", err)
	}
	defer closeDone(t, again)
	example(t, again)
	example(t, again)
	noCUDA(t)
}

// TestGPUFaultKernels runs each fault kernel in turn on a device of its own:
// the device is lost with the fault the channels report, and once it
// closed, a new rig.Open(GPU(0)) runs the example.
func TestGPUFaultKernels(t *testing.T) {
	needGPU(t)
	for _, name := range []string{"fault_illegal_address", "fault_misaligned", "trap"} {
		t.Run(name, func(t *testing.T) {
			// A hang bound, so that a fault no channel reports still ends.
			dev, err := rig.Open(bg, Open(0, Config{Hang: 10 * time.Second}))
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					closeDone(t, dev)
				}
			}()
			fn := resolve(t, dev, name)[0]
			var parts []rig.Part
			var bufs []*rig.Buffer
			if fn.Params() >= 8 {
				parts = []rig.Part{rig.Launch(fn, fn.Params(), rig.Write(0, 0))}
				bufs = []*rig.Buffer{allocBuf(t, dev, device.PinnedMemory, 4096)}
			} else {
				parts = []rig.Part{rig.Launch(fn, fn.Params())}
			}
			s, err := rig.NewSubmission(dev, parts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, 30*time.Second)
			defer cancel()
			t0 := time.Now()
			p, err := s.Take().Submit(ctx, bufs...)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Wait(ctx)
			t.Logf("%s: the wait answered after %v: %+v", name, time.Since(t0), err)
			if !errors.Is(err, rig.ErrLost) {
				t.Fatalf("%s: the wait answered %v, want the device's loss", name, err)
			}
			var f *device.Fault
			if !errors.As(err, &f) {
				t.Errorf("%s: the loss carries no fault of the device (no channel reported it): %v", name, err)
			}
			closed = true
			if !closeDone(t, dev) {
				t.FailNow()
			}
			again, err := rig.Open(bg, GPU(0))
			if err != nil {
				t.Fatalf("rig.Open(GPU(0)) after %s: %v", name, err)
			}
			defer closeDone(t, again)
			example(t, again)
		})
	}
	noCUDA(t)
}

// TestGPURefusedParts submits each part the device never runs: rig returns a
// *RefusalError naming the part, with the driver's reason; nothing is
// submitted (Last unchanged, the buffers unused); the device works after.
func TestGPURefusedParts(t *testing.T) {
	dev := openNamed(t, "NV", Config{})
	noCopies := openNamed(t, "NV-no-compute-copies", Config{NoComputeCopies: true})
	empty := resolve(t, dev, "empty")[0]
	cases := []struct {
		name  string
		dev   *rig.Device
		parts []rig.Part
		set   func(r *rig.Run)
		part  int
		why   string
	}{
		{"launch on COPY:0", dev, []rig.Part{rig.Launch(empty, 0).On(device.Copy)}, nil, 0, "COPY:0"},
		{"copy on COMPUTE:0 without its copy engine", noCopies, []rig.Part{rig.Copy(0, 0, 1, 0, 64).On(device.Compute)}, nil, 0, "no copy engine"},
		{"fill on COMPUTE:0 without its copy engine", noCopies, []rig.Part{rig.FillBytes(1, 0, 0, 1), rig.FillBytes(1, 0, 64, 1).On(device.Compute)}, nil, 1, "no copy engine"},
		{"queue 5", dev, []rig.Part{rig.Launch(empty, 0).On(5)}, nil, 0, "neither queue"},
		{"zero groups", dev, []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Groups(0, 0, 1, 1) }, 0, "size 0"},
		{"zero threads", dev, []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Threads(0, 1, 0, 1) }, 0, "size 0"},
		{"too many threads", dev, []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Threads(0, 64, 32, 1) }, 0, "threads"},
		{"too much dynamic shared memory", dev, []rig.Part{rig.Launch(empty, 0)}, func(r *rig.Run) { r.Shared(0, 1<<20) }, 0, "shared"},
		{"odd words", dev, []rig.Part{rig.Launch(empty, 0), rig.Words([]uint32{1, 2, 3})}, nil, 1, "odd"},
	}
	bufs := map[*rig.Device][2]*rig.Buffer{}
	for _, d := range []*rig.Device{dev, noCopies} {
		bufs[d] = [2]*rig.Buffer{allocBuf(t, d, device.PinnedMemory, 4096), allocBuf(t, d, device.PinnedMemory, 4096)}
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			s, err := rig.NewSubmission(c.dev, c.parts...)
			if err != nil {
				t.Fatalf("NewSubmission: %v", err)
			}
			x, y := bufs[c.dev][0], bufs[c.dev][1]
			before := c.dev.Last()
			r := s.Take()
			if c.set != nil {
				c.set(r)
			}
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			p, err := r.Submit(ctx, x, y)
			t.Logf("%s on %s: %v", c.name, c.dev.Name(), err)
			var ref *rig.RefusalError
			if !errors.Is(err, rig.ErrRefused) || !errors.As(err, &ref) {
				if err == nil {
					_ = p.Wait(ctx)
				}
				t.Fatalf("the answer %v, want a refusal", err)
			}
			if ref.Part != c.part || !strings.Contains(ref.Reason, c.why) {
				t.Errorf("a refusal of part %d (%q), want part %d with a reason naming %q", ref.Part, ref.Reason, c.part, c.why)
			}
			if c.dev.Last() != before || x.LastUse().Device() != nil || y.LastUse().Device() != nil {
				t.Errorf("the refused submission took a value (last %d, was %d) or marked its buffers", c.dev.Last().Value(), before.Value())
			}
		})
	}
	// Both devices still work: a launch, a copy and a fill.
	for _, d := range []*rig.Device{dev, noCopies} {
		x, y := bufs[d][0], bufs[d][1]
		pattern(x.Bytes(), 5)
		parts := []rig.Part{rig.Copy(0, 0, 1, 0, 4096), rig.FillBytes(1, 100, 10, 0x42)}
		if d == dev {
			parts = append(parts, rig.Launch(empty, 0))
		}
		submitWait(t, d, 10*time.Second, parts, x, y)
		want := bytes.Clone(x.Bytes())
		copy(want[100:110], bytes.Repeat([]byte{0x42}, 10))
		if i := firstDiff(y.Bytes(), want); i >= 0 {
			t.Errorf("%s after the refusals: byte %d reads 0x%x, want 0x%x", d.Name(), i, y.Bytes()[i], want[i])
		}
		t.Logf("%s ran a copy and a fill after the refusals (last value %d)", d.Name(), d.Last().Value())
	}
	noCUDA(t)
}

// TestGPUNoCUDA checks that libcuda is not mapped into the process;
// TestMain checks again once every test of the binary ran.
func TestGPUNoCUDA(t *testing.T) {
	needGPU(t)
	noCUDA(t)
	t.Log("libcuda is not mapped into the process")
}
