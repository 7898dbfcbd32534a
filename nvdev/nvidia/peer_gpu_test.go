package nvidia

import (
	"encoding/binary"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
)

// needTwoGPUs skips a test unless RIG_GPU=1 and the machine has two
// NVIDIA GPUs' files (/dev/nvidia0, /dev/nvidia1, ...).
func needTwoGPUs(t testing.TB) {
	t.Helper()
	needGPU(t)
	files, _ := filepath.Glob("/dev/nvidia[0-9]*")
	if len(files) < 2 {
		t.Skipf("the machine has %d NVIDIA GPU file(s) %v: needs two GPUs", len(files), files)
	}
}

// semExecAcquire is NVC86F_SEM_EXECUTE_OPERATION_ACQUIRE: the channel
// waits until the semaphore equals the payload.
const semExecAcquire = 0

// acquire writes at pb the words of a 64-bit semaphore acquire of value at
// the GPU address a, and returns their count.
func acquire(pb []uint32, a, value uint64) int {
	pb[0] = methodInc | 5<<16 | 0<<13 | semAddrLo>>2
	pb[1] = uint32(a)
	pb[2] = uint32(a >> 32)
	pb[3] = uint32(value)
	pb[4] = uint32(value >> 32)
	pb[5] = semExecAcquire | semExecPayload64
	return 6
}

// peerProgram is a pushbuffer written into a test channel's Pinned memory
// from word start; the channel's progress word is Pinned memory's word 16.
type peerProgram struct {
	c        *testChannel
	start, n int
}

func newPeerProgram(c *testChannel, phase int) *peerProgram {
	atomic.StoreUint64(c.progress(), 0)
	return &peerProgram{c: c, start: pbWords + 2048*phase}
}

func (p *peerProgram) release(a, v uint64) { p.n += release(p.c.pw[p.start+p.n:], a, v) }
func (p *peerProgram) acquire(a, v uint64) { p.n += acquire(p.c.pw[p.start+p.n:], a, v) }

// step releases k into the progress word.
func (p *peerProgram) step(k uint64) { p.release(p.c.pinned.Address+64, k) }

// run submits the program and waits until the progress word reads want.
func (p *peerProgram) run(what string, want uint64) {
	p.c.t.Helper()
	t0 := time.Now()
	p.c.submit(p.c.pinned, p.start, p.n)
	p.c.wait(what, p.c.progress(), want)
	p.c.t.Logf("%s: %d words ran in %v", what, p.n, time.Since(t0))
}

// progress is the channel's progress word.
func (c *testChannel) progress() *uint64 { return (*uint64)(unsafe.Pointer(&c.pw[16])) }

// peerValue is the 64-bit value step writes at its i-th word.
func peerValue(step, i int) uint64 { return 0x5eed_0000_0000_00a1 | uint64(step)<<40 | uint64(i)<<8 }

// pollWord waits, at most a second, until the 8 bytes of b at off read v,
// and returns what they read last.
func pollWord(b []byte, off int, v uint64) (uint64, bool) {
	t0 := time.Now()
	w := (*uint64)(unsafe.Pointer(&b[off]))
	for {
		got := atomic.LoadUint64(w)
		if got == v || time.Since(t0) > time.Second {
			return got, got == v
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// TestGPUPeerTwo opens paths on GPU 0 (A) and GPU 1 (B), checks that each
// reaches the other, and maps memory of B for A: A's channel writes B's
// Device memory through the view (64-bit semaphore releases over the link)
// and B's channel reads it at its own addresses (semaphore acquires, one
// progress step each); B writes and A reads through the view; A writes B's
// Mapped memory, which the host reads through B's BAR, and reads what the
// host wrote there; A writes B's Pinned memory. A progress word short of its
// goal names the first acquire that never saw its value. Run it with
// RIG_GPU=1 on a machine of two GPUs.
func TestGPUPeerTwo(t *testing.T) {
	needTwoGPUs(t)
	open := func(i int) *Client {
		t0 := time.Now()
		p, err := Open(i, nil)
		if err != nil {
			t.Fatalf("Open(%d): %v", i, err)
		}
		t.Logf("GPU %d open in %v: driver %s, bus %s, uuid %x, %s %s, device 0x%x", i, time.Since(t0), p.DriverVersion(),
			p.Bus(), p.UUID(), p.GPU().Name, p.GPU().Arch(), p.Device())
		t.Cleanup(func() {
			if err := p.Close(); err != nil {
				t.Errorf("Close of GPU %d: %v", i, err)
			}
		})
		return p
	}
	a, b := open(0), open(1)
	l, err := a.linkTo(1)
	if err != nil {
		t.Fatalf("the RM's P2P capabilities of GPU 0 and GPU 1: %v", err)
	}
	t.Logf("the RM's P2P capabilities of GPU 0 and GPU 1: %v", l)
	t.Logf("GPU 0 reaches GPU 1: %v; GPU 1 reaches GPU 0: %v", a.Reaches(1), b.Reaches(0))
	if !a.Reaches(1) || !b.Reaches(0) {
		t.Fatalf("the GPUs do not reach each other's memory (the RM's P2P capabilities %v)", l)
	}

	ca := newChannel(t, a)
	defer ca.close()
	cb := newChannel(t, b)
	defer cb.close()
	t.Logf("channels: A 0x%x token 0x%x, B 0x%x token 0x%x", ca.ch, ca.token, cb.ch, cb.token)

	alloc := func(p *Client, k device.Memory, n int) *Memory {
		t.Helper()
		m, err := p.Alloc(k, n)
		if err != nil {
			t.Fatalf("GPU %d: Alloc(%v, %d): %v", p.Index(), k, n, err)
		}
		t.Logf("GPU %d: %d bytes of %v memory at 0x%x, handle 0x%x", p.Index(), n, k, m.Address, m.Handle)
		t.Cleanup(func() {
			if err := p.Free(m); err != nil {
				t.Errorf("GPU %d: Free of %v memory at 0x%x: %v", p.Index(), k, m.Address, err)
			}
		})
		return m
	}
	view := func(m *Memory) *Memory {
		t.Helper()
		t0 := time.Now()
		v, err := a.MapPeer(m)
		if err != nil {
			t.Fatalf("GPU 0: MapPeer of GPU 1's %v memory at 0x%x: %v", m.Kind, m.Address, err)
		}
		t.Logf("GPU 0: MapPeer of GPU 1's %v memory at 0x%x in %v: view at 0x%x, handle 0x%x, borrowed %v",
			m.Kind, m.Address, time.Since(t0), v.Address, v.Handle, v.Borrowed)
		// Registered after m's free, so it runs first.
		t.Cleanup(func() {
			if err := a.Free(v); err != nil {
				t.Errorf("GPU 0: Free of the view at 0x%x: %v", v.Address, err)
			}
		})
		return v
	}

	// Device memory of B, 2 MiB pages: words at both ends and across pages.
	const xBytes = 8<<20 + 4096
	x := alloc(b, device.DeviceMemory, xBytes)
	vx := view(x)
	offs := []uint64{0, 8, 2<<20 - 8, 2 << 20, 4<<20 + 64, 8 << 20, xBytes - 8}

	p := newPeerProgram(ca, 0)
	for i, off := range offs {
		p.release(vx.Address+off, peerValue(1, i))
	}
	p.step(1)
	p.run("GPU 0 writes GPU 1's Device memory through the view", 1)

	p = newPeerProgram(cb, 0)
	for i, off := range offs {
		p.acquire(x.Address+off, peerValue(1, i))
		p.step(uint64(i + 1))
	}
	p.run("GPU 1 reads at its own addresses what GPU 0 wrote (progress k: word k never read its value)", uint64(len(offs)))

	p = newPeerProgram(cb, 1)
	for i, off := range offs {
		p.release(x.Address+off, peerValue(2, i))
	}
	p.step(1)
	p.run("GPU 1 writes its Device memory", 1)

	p = newPeerProgram(ca, 1)
	for i, off := range offs {
		p.acquire(vx.Address+off, peerValue(2, i))
		p.step(uint64(i + 1))
	}
	p.run("GPU 0 reads through the view what GPU 1 wrote (progress k: word k never read its value)", uint64(len(offs)))

	// Mapped memory of B: the host reads A's writes through B's BAR, and
	// A reads the host's.
	const yBytes = 64 << 10
	y := alloc(b, device.MappedMemory, yBytes)
	vy := view(y)
	yOffs := []uint64{0, 4096, yBytes - 8}
	p = newPeerProgram(ca, 2)
	for i, off := range yOffs {
		p.release(vy.Address+off, peerValue(3, i))
	}
	p.step(1)
	p.run("GPU 0 writes GPU 1's Mapped memory through the view", 1)
	yb := y.Bytes()
	for i, off := range yOffs {
		if got, ok := pollWord(yb, int(off), peerValue(3, i)); !ok {
			t.Errorf("GPU 1's Mapped memory at +0x%x reads 0x%x through its BAR, not 0x%x", off, got, peerValue(3, i))
		}
	}
	t.Logf("the host read GPU 0's %d words in GPU 1's Mapped memory through GPU 1's BAR", len(yOffs))
	binary.LittleEndian.PutUint64(yb[128:], peerValue(4, 0))
	if f := b.Flush(); f != nil {
		_ = atomic.LoadUint32(f) // the host's write reaches GPU 1 first
	}
	p = newPeerProgram(ca, 3)
	p.acquire(vy.Address+128, peerValue(4, 0))
	p.step(1)
	p.run("GPU 0 reads through the view what the host wrote through GPU 1's BAR", 1)

	// Pinned memory of B: host pages, mapped for A as MapHost maps them.
	z := alloc(b, device.PinnedMemory, 4096)
	vz := view(z)
	if vz.Host != z.Host || vz.Kind != device.PinnedMemory {
		t.Errorf("the view of Pinned memory: host 0x%x kind %v, the memory's host 0x%x", vz.Host, vz.Kind, z.Host)
	}
	p = newPeerProgram(ca, 4)
	p.release(vz.Address+8, peerValue(5, 0))
	p.step(1)
	p.run("GPU 0 writes GPU 1's Pinned memory through the view", 1)
	if got, ok := pollWord(z.Bytes(), 8, peerValue(5, 0)); !ok {
		t.Errorf("GPU 1's Pinned memory reads 0x%x, not 0x%x", got, peerValue(5, 0))
	}

	for _, q := range []*Client{a, b} {
		if err := q.Check(); err != nil {
			t.Errorf("GPU %d: Check: %v", q.Index(), err)
		}
	}
	t.Logf("GPU 0 and GPU 1 wrote and read each other's memory; memories live: GPU 0 %d, GPU 1 %d", a.live, b.live)
}

// TestGPUPeerReachesOne checks Reaches on one GPU: the GPU itself, no GPU
// past the machine's, no negative GPU.
func TestGPUPeerReachesOne(t *testing.T) {
	needGPU(t)
	p, err := Open(0, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer p.Close()
	gpus, _ := ListGPUs(sysfsPCI)
	if !p.Reaches(0) || p.Reaches(len(gpus)+1) || p.Reaches(-1) {
		t.Errorf("reaches: itself %v, GPU %d %v", p.Reaches(0), len(gpus)+1, p.Reaches(len(gpus)+1))
	}
	for i := 1; i < len(gpus); i++ {
		l, err := p.linkTo(i)
		t.Logf("GPU 0 and GPU %d: reaches %v; the RM's P2P capabilities %v, %v", i, p.Reaches(i), l, err)
	}
}
