package nvdev

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/nvdev/hw"
	rig "github.com/rig-go/rig/runtime"
)

// capture wraps an opener to keep the driver it makes.
func capture(o device.Opener, into **gpu) device.Opener {
	mk := o.Make
	o.Make = func(w *uint64) (device.Driver, error) {
		drv, err := mk(w)
		if err == nil {
			*into = drv.(*gpu)
		}
		return drv, err
	}
	return o
}

// channelState is where each channel of d stands, as the host and USERD
// see them: the entries the host wrote, GPPut and GPGet in USERD, the
// mark, and the notifier.
func channelState(d *gpu) string {
	var b strings.Builder
	fmt.Fprintf(&b, "word %d, last %d", atomic.LoadUint64(d.word), d.last)
	for _, ch := range d.live.Load().ch {
		userd := ptrAt(uintptr(ptrOf(ch.gpPut)) - 0x8c)
		get := atomic.LoadUint32((*uint32)(ptrAt(uintptr(userd) + 0x88)))
		fmt.Fprintf(&b, "; %s: put %d (ring %d), USERD GPPut %d GPGet %d, mark %d of %d, notifier %x",
			ch.name, ch.put, ch.put%ch.entries, atomic.LoadUint32(ch.gpPut), get,
			atomic.LoadUint64(ch.mark), ch.marks, ch.notifierWords())
	}
	return b.String()
}

// TestGPUPeerTwoGPUsMixed runs rigbench's mixed workload by hand on devices of
// GPU 0 and GPU 1 (or two devices of GPU 0), with buffers of Device
// memory (copies through peer views) or of Pinned memory: a fill on A, a copy of it
// into B's buffer on B, an empty launch on B, a copy back on A, eight
// values in flight, for up to 3 s. A point not reached within 2 s fails
// the test with each channel's state, before and after ringing every
// channel's doorbell again.
func TestGPUPeerTwoGPUsMixed(t *testing.T) {
	for _, c := range []struct {
		two  bool
		kind device.Memory
		cfg  Config
	}{{true, device.DeviceMemory, Config{}}, {true, device.PinnedMemory, Config{}},
		{true, device.PinnedMemory, Config{NoOwnRelease: true}}, {false, device.DeviceMemory, Config{}}} {
		two := c.two
		name := fmt.Sprintf("two GPUs, %v buffers", c.kind)
		if !two {
			name = fmt.Sprintf("one GPU, %v buffers", c.kind)
		}
		if c.cfg.NoOwnRelease {
			name += ", no own release"
		}
		t.Run(name, func(t *testing.T) {
			if two {
				needTwoGPUs(t)
			} else {
				needGPU(t)
			}
			var da, db *gpu
			oa, ob := capture(Open(0, c.cfg), &da), Open(0, c.cfg)
			if two {
				ob = Open(1, c.cfg)
			}
			ob.Name = "NV-B"
			ob = capture(ob, &db)
			a, err := rig.Open(bg, oa)
			if err != nil {
				t.Fatal(err)
			}
			defer closeDone(t, a)
			b, err := rig.Open(bg, ob)
			if err != nil {
				t.Fatal(err)
			}
			defer closeDone(t, b)
			img, err := b.LoadImage(cubin(t))
			if err != nil {
				t.Fatal(err)
			}
			empty, err := img.Resolve("empty")
			if err != nil {
				t.Fatal(err)
			}
			const size = 64 << 10
			fill, _ := rig.NewSubmission(a, rig.FillBytes(0, 0, size, 0x5a))
			there, _ := rig.NewSubmission(b, rig.Copy(0, 0, 1, 0, size))
			launch, _ := rig.NewSubmission(b, rig.Launch(empty, 0))
			back, _ := rig.NewSubmission(a, rig.Copy(0, 0, 1, 0, size))
			ba, err := a.Alloc(c.kind, size)
			if err != nil {
				t.Fatal(err)
			}
			bb, err := b.Alloc(c.kind, size)
			if err != nil {
				t.Fatal(err)
			}
			var ring [8]rig.Point
			t0 := time.Now()
			n := 0
			for ; time.Since(t0) < 3*time.Second; n++ {
				if p := ring[n%8]; p.Device() != nil {
					ctx, cancel := context.WithTimeout(bg, 2*time.Second)
					err := p.Wait(ctx)
					cancel()
					if err != nil {
						before := [2]string{channelState(da), channelState(db)}
						for _, x := range []*gpu{da, db} {
							w := atomic.LoadUint64(x.word)
							for v := w + 1; v <= x.last && v <= w+3; v++ {
								before[0] += valueWords(x, v)
							}
						}
						for _, d := range []*gpu{da, db} {
							d.kickMu.Lock()
							if d.flush != nil {
								_ = atomic.LoadUint32(d.flush)
							}
							for _, ch := range d.live.Load().ch {
								d.p.Ring(ch.token)
							}
							d.kickMu.Unlock()
						}
						time.Sleep(100 * time.Millisecond)
						t.Fatalf("submission %d: the point %s:%d: %v\nA before: %s\nB before: %s\nA 100 ms after ringing again: %s\nB 100 ms after ringing again: %s",
							n, p.Device().Name(), p.Value(), err, before[0], before[1], channelState(da), channelState(db))
					}
				}
				var p rig.Point
				switch n % 4 {
				case 0:
					p, err = fill.Take().Submit(bg, ba)
				case 1:
					p, err = there.Take().Submit(bg, ba, bb)
				case 2:
					p, err = launch.Take().Submit(bg)
				default:
					p, err = back.Take().Submit(bg, bb, ba)
				}
				if err != nil {
					t.Fatalf("submission %d: %v", n, err)
				}
				ring[n%8] = p
			}
			t.Logf("%d submissions in %v, every point reached within 2 s; A: %s; B: %s", n, time.Since(t0), channelState(da), channelState(db))
		})
	}
}

// ptrOf is p's address.
func ptrOf(p *uint32) uintptr { return uintptr(unsafe.Pointer(p)) }

// valueWords decodes what each channel of d runs for value v (the words
// between the records of v-1 and v) and names each semaphore it acquires
// or releases, with what the memory there holds now.
func valueWords(d *gpu, v uint64) string {
	var b strings.Builder
	from, to := d.recs[(v-1)%records], d.recs[v%records]
	for q, ch := range d.live.Load().ch {
		n := len(ch.seg)
		words := make([]uint32, 0, 64)
		for i := from.seg[q]; i < to.seg[q] && len(words) < 4096; i++ {
			words = append(words, atomic.LoadUint32(&ch.seg[i%uint64(n)]))
		}
		ws, err := hw.Decode(words)
		fmt.Fprintf(&b, "\n    value %d on %s: %d words (entries %d to %d)", v, ch.name, len(words), from.put[q], to.put[q])
		if err != nil {
			fmt.Fprintf(&b, ", %v", err)
		}
		var addr, payload uint64
		for _, w := range ws {
			switch {
			case w.Subchannel == hw.SubHost && w.Method == hw.HostSemAddrLo:
				addr = addr&^0xffffffff | uint64(w.Value)
			case w.Subchannel == hw.SubHost && w.Method == hw.HostSemAddrHi:
				addr = addr&0xffffffff | uint64(w.Value)<<32
			case w.Subchannel == hw.SubHost && w.Method == hw.HostSemPayloadLo:
				payload = payload&^0xffffffff | uint64(w.Value)
			case w.Subchannel == hw.SubHost && w.Method == hw.HostSemPayloadHi:
				payload = payload&0xffffffff | uint64(w.Value)<<32
			case w.Subchannel == hw.SubHost && w.Method == hw.HostSemExecute:
				fmt.Fprintf(&b, "\n      host semaphore op %#x at %#x payload %d: %s", w.Value, addr, payload, hostView(d, addr))
			case w.Subchannel == hw.SubCopy && (w.Method == hw.CopySemaphoreA || w.Method == hw.CopySemaphoreB || w.Method == hw.CopySemaphorePayload || w.Method == hw.CopySemaphorePayloadUpper || w.Method == hw.CopyLaunchDMA):
				fmt.Fprintf(&b, "\n      copy method %#x = %#x", w.Method, w.Value)
			case w.Subchannel == hw.SubCompute:
				fmt.Fprintf(&b, "\n      compute method %#x = %#x", w.Method, w.Value)
			}
		}
	}
	return b.String()
}

// hostView is what the host reads at GPU address a of d: a word of rig's
// array, or of the device's channels' marks.
func hostView(d *gpu, a uint64) string {
	if d.array != nil && a >= d.array.Address && a+8 <= d.array.Address+uint64(d.arrayBytes) {
		h := d.arrayBase + uintptr(a-d.array.Address)
		return fmt.Sprintf("rig's array word %d holds %d", (h-d.arrayBase)/8, atomic.LoadUint64((*uint64)(ptrAt(h))))
	}
	for _, ch := range d.live.Load().ch {
		if a == ch.markGPU {
			return fmt.Sprintf("the %s mark holds %d", ch.name, atomic.LoadUint64(ch.mark))
		}
	}
	return "not a word the test reads"
}
