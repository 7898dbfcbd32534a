package hostdev

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/hostram"
	"github.com/rig-go/rig/internal/testutil"
)

// TestMapHostPastAddressSpace checks that MapHost refuses a count of bytes
// whose whole pages overflow an int or run past the top of the address
// space, rather than making a region of a negative or wrapped size.
func TestMapHostPastAddressSpace(t *testing.T) {
	d, _ := newDev(t, Config{MapsHost: true}, 0)
	page := uintptr(pageSize)
	for _, tc := range []struct {
		name string
		p    uintptr
		n    int
	}{
		{"max int", page, math.MaxInt},
		{"rounds past max int", page, math.MaxInt - pageSize + 2},
		{"last page plus one", ^uintptr(0) - page + 1, pageSize + 1},
		{"wraps the address space", ^uintptr(0) - 2*page + 1, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := d.MapHost(tc.p, tc.n)
			if err == nil {
				t.Fatalf("map_host of %d bytes at %#x made a region of %d bytes", tc.n, tc.p, r.(*region).size)
			}
			if !strings.Contains(err.Error(), "address space") {
				t.Fatalf("map_host answered %v, want an error naming the address space", err)
			}
		})
	}
	if n := len(*d.regions.Load()); n != 0 {
		t.Fatalf("refused mappings left %d regions", n)
	}
}

// TestRingLimit checks that Make refuses a ring too large to preallocate
// with an error, rather than panicking in makeslice.
func TestRingLimit(t *testing.T) {
	for _, ring := range []int{MaxRing + 1, 1 << 40, 1 << 58, math.MaxInt} {
		drv, err := Open(Config{Ring: ring}).Make(new(uint64))
		if err == nil {
			drv.Stop("")
			t.Fatalf("make with a ring of %d values succeeded", ring)
		}
		if !strings.Contains(err.Error(), "ring") {
			t.Fatalf("make with a ring of %d values answered %v, want an error naming the ring", ring, err)
		}
	}
}

// TestHangBound checks the rule that turns Config.Hang into the
// Facts.HangMs of the device Make opens: 0 and negative bounds are none,
// a positive one counts its whole milliseconds and at least 1, and a bound
// whose milliseconds do not fit an int (past about 24.8 days, where an int
// has 32 bits) is refused, naming it, rather than wrapped.
func TestHangBound(t *testing.T) {
	for _, tc := range testutil.HangCases() {
		drv, err := Open(Config{Hang: tc.Hang}).Make(new(uint64))
		if tc.Refused {
			if err == nil {
				drv.Stop("")
				t.Errorf("make with a hang bound of %v succeeded, where an int has %d bits", tc.Hang, strconv.IntSize)
			} else if !strings.Contains(err.Error(), "hang bound of "+tc.Hang.String()) {
				t.Errorf("make with a hang bound of %v answered %v, want an error naming the bound", tc.Hang, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("make with a hang bound of %v: %v", tc.Hang, err)
			continue
		}
		if got := drv.Facts().HangMs; got != tc.Want {
			t.Errorf("a hang bound of %v: Facts.HangMs %d, want %d", tc.Hang, got, tc.Want)
		}
		drv.Stop("")
	}
}

// TestSpan checks the threads' parts of the built-in copy and fill kernels:
// each is n*i/t to n*(i+1)/t, exact where n*i overflows 64 bits.
func TestSpan(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		i, t int
	}{
		{0, 0, 1},
		{10, 0, 3},
		{10, 2, 3},
		{1 << 36, 1<<28 - 1, 1 << 28},
		{1 << 40, 1 << 30, 1 << 31},
		{math.MaxUint64, 6, 7},
		{math.MaxUint64, math.MaxInt32 - 1, math.MaxInt32},
	} {
		lo, hi := span(tc.n, uint64(tc.i), uint64(tc.t))
		want := func(i int) uint64 {
			x := new(big.Int).Mul(new(big.Int).SetUint64(tc.n), big.NewInt(int64(i)))
			return x.Quo(x, big.NewInt(int64(tc.t))).Uint64()
		}
		if lo != want(tc.i) || hi != want(tc.i+1) {
			t.Errorf("span(%d, %d, %d) = [%d, %d), want [%d, %d)", tc.n, tc.i, tc.t, lo, hi, want(tc.i), want(tc.i+1))
		}
	}
}

// TestSpanPast64Bits runs the built-in fill over a few threads of a launch
// of 2^30 by 2^12 by 2^12 groups of 1024 threads: 2^64 threads, whose
// count wraps 64 bits. Each thread takes its share of the n bytes, as over
// any launch: the first threads none, the last the last byte.
func TestSpanPast64Bits(t *testing.T) {
	d, _ := newDev(t, Config{}, 0)
	r, mem := alloc(t, d, 4096)
	const n = 16
	params := append(p64(addr(r), n), 7)
	groups, threads := [3]int{1 << 30, 1 << 12, 1 << 12}, [3]int{1024, 1, 1}
	fill := lookup("fill").fn
	run := func(group, thread [3]int) {
		t.Helper()
		k := &Ctx{dev: d, kernel: "fill", Groups: groups, Threads: threads, Group: group, Thread: thread, Params: params}
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("thread %v of group %v: %v", thread, group, v)
			}
		}()
		fill(k)
	}
	run([3]int{0, 0, 0}, [3]int{0, 0, 0})
	run([3]int{0, 0, 0}, [3]int{1, 0, 0})
	run([3]int{5, 0, 0}, [3]int{3, 0, 0})
	if f := d.fault.Load(); f != nil {
		t.Fatalf("the first threads faulted the device: %v", f)
	}
	for i, b := range mem {
		if b != 0 {
			t.Fatalf("the first threads set byte %d, where their share is none", i)
		}
	}
	last := [3]int{1<<30 - 1, 1<<12 - 1, 1<<12 - 1}
	run(last, [3]int{1023, 0, 0})
	for i, b := range mem {
		if i == n-1 && b != 7 || i != n-1 && b != 0 {
			t.Fatalf("after the last thread, byte %d is %d: want only byte %d set", i, b, n-1)
		}
	}
}

// TestAllocPastGoHeap checks that an allocation larger than any array Go
// makes, which a budget as large as an int64 lets through, answers
// ErrNoMemory and gives its budget back, rather than panicking in the
// caller's goroutine.
func TestAllocPastGoHeap(t *testing.T) {
	d, _ := newDev(t, Config{Budget: math.MaxInt64}, 0)
	for _, m := range []device.Memory{device.DeviceMemory, device.PinnedMemory, device.MappedMemory} {
		for _, n := range []int{1 << 50, math.MaxInt - 2*pageSize + 1} {
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("alloc of %d bytes of %v memory panicked: %v", n, m, v)
					}
				}()
				r, err := d.Alloc(m, n&^3)
				if err == nil {
					d.Free(r)
					return
				}
				if !errors.Is(err, device.ErrNoMemory) {
					t.Errorf("alloc of %d bytes of %v memory: %v, want ErrNoMemory", n, m, err)
				}
			}()
			if u := d.used.Load(); u != 0 {
				t.Fatalf("after an alloc of %d bytes of %v memory, %d bytes of the budget are taken", n, m, u)
			}
		}
	}
}

// TestAllocPastHostRAM asks for Pinned and Mapped memory, Go memory, past
// the host's memory within the budget: ErrNoMemory naming the host's
// memory, where Go's heap would end the process, and nothing charged.
func TestAllocPastHostRAM(t *testing.T) {
	ram := hostram.Bytes()
	if ram == 0 || ram >= math.MaxInt/2 {
		t.Skipf("the host's memory reads %d bytes", ram)
	}
	d, _ := newDev(t, Config{Budget: math.MaxInt64}, 0)
	n := int(ram+uint64(pageSize)) &^ 3
	for _, m := range []device.Memory{device.PinnedMemory, device.MappedMemory} {
		if _, err := d.Alloc(m, n); !errors.Is(err, device.ErrNoMemory) || !strings.Contains(err.Error(), "host") {
			t.Errorf("alloc of %d bytes of %v memory on a host of %d: %v", n, m, ram, err)
		}
		if u := d.used.Load(); u != 0 {
			t.Fatalf("%d bytes of the budget taken after the refusal", u)
		}
	}
}

// limits.params states no parameter count: a launch of it passes all its
// parameter bytes (Entry.Params 0).
func init() { Register("limits.params", func(*Ctx) {}) }

// TestGrowPastLargestArray asks Grow for a bytes arena past the largest
// array Go makes, on a device whose budget lets it through: Grow answers
// a *device.Short and keeps none of the budget, as Alloc answers
// ErrNoMemory, rather than panic in the submitter's goroutine. The
// launches share one parameter slice, so the submission itself is small.
func TestGrowPastLargestArray(t *testing.T) {
	d, _ := newDev(t, Config{Budget: math.MaxInt64}, 0)
	e := entry(t, d, "limits.params")
	params := make([]byte, 1<<30)
	const n = 1<<17 + 1 // n << 30 > 2^47: the arena of twice that passes 2^48
	parts := make([]device.Part, n)
	for i := range parts {
		parts[i] = launch(e, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, params)
	}
	s := &device.Submission{Value: 1, Parts: parts}
	if a := d.Room(s); a.Kind != device.RoomGrow {
		t.Fatalf("room answered %+v, want RoomGrow", a)
	}
	used := d.used.Load()
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Errorf("Grow panicked: %v", v)
			}
		}()
		err = d.Grow()
	}()
	if u := d.used.Load(); u != used {
		t.Errorf("the budget counts %d bytes after Grow, %d before", u, used)
	}
	if _, ok := err.(*device.Short); !ok {
		t.Errorf("Grow of an arena past the largest array: %v, want a *device.Short", err)
	}
}
