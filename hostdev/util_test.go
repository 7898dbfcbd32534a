package hostdev

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/device"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The test kernels.
func init() {
	// test.index counts, in the uint32 array at 0, each thread's global
	// index, and faults where an id lies outside its dims.
	RegisterParams("test.index", 8, func(k *Ctx) {
		for a := range 3 {
			if k.Group[a] < 0 || k.Group[a] >= k.Groups[a] || k.Thread[a] < 0 || k.Thread[a] >= k.Threads[a] {
				k.Fault("id outside dims")
			}
		}
		i, _ := k.global()
		c := (*uint32)(unsafe.Pointer(&k.Bytes(k.Uint64(0)+4*i[1], 4)[0]))
		atomic.AddUint32(c, 1)
	})
	// test.log appends the uint64 at 0 to the log, after sleeping for the
	// nanoseconds at 8.
	RegisterParams("test.log", 16, func(k *Ctx) {
		if ns := k.Uint64(8); ns > 0 {
			time.Sleep(time.Duration(ns))
		}
		logAppend(k.Uint64(0))
	})
	// test.shared sums the thread ids along x of each group in shared
	// memory, and the group's last thread stores the sum into the uint32
	// array at 0, at the group's index.
	RegisterParams("test.shared", 8, func(k *Ctx) {
		s := (*uint32)(unsafe.Pointer(&k.Shared[0]))
		if k.Thread[0] == 0 && *s != 0 {
			k.Fault("shared memory not zeroed")
		}
		*s += uint32(k.Thread[0])
		if k.Thread[0] == k.Threads[0]-1 {
			out := k.Bytes(k.Uint64(0)+4*uint64(k.Group[0]), 4)
			binary.LittleEndian.PutUint32(out, *s)
		}
	})
}

var testLog struct {
	sync.Mutex
	vals []uint64
}

func logAppend(v uint64) {
	testLog.Lock()
	testLog.vals = append(testLog.vals, v)
	testLog.Unlock()
}

func logReset() {
	testLog.Lock()
	testLog.vals = nil
	testLog.Unlock()
}

func logVals() []uint64 {
	testLog.Lock()
	defer testLog.Unlock()
	return append([]uint64(nil), testLog.vals...)
}

// logFill is a fill that logs its argument.
var logFill = FillFunc(func(arg uintptr) { logAppend(uint64(arg)) })

// newDev opens a device with the word w set to start, and stops it at the
// test's end, waiting for its goroutines.
func newDev(t testing.TB, c Config, start uint64) (*dev, *uint64) {
	t.Helper()
	w := new(uint64)
	*w = start
	drv, err := Open(c).Make(w)
	if err != nil {
		t.Fatal(err)
	}
	d := drv.(*dev)
	t.Cleanup(func() {
		d.Stop("")
		stopped := make(chan struct{})
		go func() { d.done.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("the device's goroutines did not end after Stop")
		}
	})
	return d, w
}

// entry loads an image of the kernel spec and returns the entry of its
// kernel.
func entry(t testing.TB, d *dev, spec string) *device.Entry {
	t.Helper()
	code, err := d.Image(ImageOf(spec))
	if err != nil {
		t.Fatal(err)
	}
	name := spec
	for i := range spec {
		if spec[i] == ':' {
			name = spec[:i]
			break
		}
	}
	e, err := d.Entry(code.Loaded, name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// alloc allocates n bytes of Device memory and returns the region and its
// bytes. Device memory lies outside Go's heap, where the race detector does
// not follow the tests that run unordered parts over the same bytes.
func alloc(t testing.TB, d *dev, n int) (*region, []byte) {
	t.Helper()
	r, err := d.Alloc(device.DeviceMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	return r.(*region), r.(*region).bytes(0, uint64(n))
}

// p64 is little-endian parameter bytes.
func p64(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

func addr(r *region) uint64 { return uint64(r.addr) }

func launch(e *device.Entry, g, th [3]uint32, params []byte) device.Part {
	return device.Part{Kind: device.Launch, Queue: device.Compute, Entry: e, Groups: g, Threads: th, Params: params}
}

func one(e *device.Entry, params []byte) device.Part {
	return launch(e, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, params)
}

// submit submits parts as the next value, retrying while Room returns
// RoomLater, and returns the value.
func submit(t testing.TB, d *dev, parts ...device.Part) uint64 {
	t.Helper()
	return submitS(t, d, &device.Submission{Parts: parts})
}

func submitS(t testing.TB, d *dev, s *device.Submission) uint64 {
	t.Helper()
	s.Value = d.q.last.Load() + 1
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := d.Room(s)
		switch a.Kind {
		case device.RoomOK:
			if sa := d.Submit(s); sa.Kind == device.Pending {
				t.Fatalf("submit answered %+v", sa)
			}
			return s.Value
		case device.RoomLater:
			if time.Now().After(deadline) {
				t.Fatal("room answered later for 10 s")
			}
			time.Sleep(100 * time.Microsecond)
		case device.RoomGrow:
			if err := d.Grow(); err != nil {
				t.Fatalf("grow: %v", err)
			}
		default:
			t.Fatalf("room refused: part %d: %s", a.Part, a.Reason)
		}
	}
}

// reach waits, through Sleep, until d's word holds at least v, and returns
// Sleep's last answer.
func reach(t testing.TB, d *dev, v uint64) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for {
		seen := atomic.LoadUint64(d.word)
		if device.AtLeast(seen, v) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("word at %d, not %d, after 10 s (sleep: %v)", seen, v, err)
		}
		if e := d.Sleep(seen, 100*time.Millisecond); e != nil {
			err = e
		}
	}
}
