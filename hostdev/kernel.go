package hostdev

import (
	"encoding/binary"
	"fmt"
	"github.com/rig-go/rig/device"
	"math"
	"math/big"
	"math/bits"
	"sort"
	"sync"
	"time"
)

// Kernel is a function that hostdev runs on CPU cores: one call for each
// thread of each group of a launch. The threads of a group run one after
// another on one goroutine, in the order of their ids (x fastest), so a
// kernel cannot wait for another thread of its group; the groups of a
// launch run on several goroutines at once, in no stated order.
type Kernel func(k *Ctx)

// MaxParams is the most parameter bytes a manifest states for a kernel,
// CUDA's limit on Volta and later.
const MaxParams = 32764

// MaxThreads is the most threads a group of any kernel has, and MaxShared
// the most dynamic shared memory a group takes (Entry.Threads and
// Entry.Shared).
const (
	MaxThreads = 1024
	MaxShared  = 48 << 10
)

// kernelDef is a registered kernel.
type kernelDef struct {
	name   string
	fn     Kernel
	params int // parameter bytes it reads, or -1 where unknown
	// layout is where each parameter lies, nil where unknown.
	layout []device.Param
}

var registry struct {
	sync.RWMutex
	m map[string]*kernelDef
}

// Register registers fn as the kernel name for every device of the
// process, so that images whose manifest names it load. Its launches read
// the parameter bytes a manifest states for it, if any. It panics if name is
// taken or is no valid kernel name (see ImageOf).
func Register(name string, fn Kernel) { register(name, -1, fn) }

// RegisterParams is Register for a kernel that reads params parameter
// bytes, which Entry reports where the manifest states no count.
func RegisterParams(name string, params int, fn Kernel) {
	if params < 0 || params > MaxParams {
		panic(fmt.Sprintf("hostdev: kernel %q reads %d parameter bytes, outside 0 to %d", name, params, MaxParams))
	}
	register(name, params, fn)
}

// RegisterArgs is Register for a kernel whose parameters are of the given
// sizes in bytes, in order, each laid at the next offset that is a multiple
// of its alignment (its size rounded up to a power of two, at most 8), as a
// C compiler lays out scalar and pointer parameters. A launch can then set
// parameters by index (rig's Run.SetUint32 and the like, and refs by
// parameter), with their sizes checked.
func RegisterArgs(name string, fn Kernel, sizes ...int) {
	layout := make([]device.Param, len(sizes))
	end := 0
	for i, n := range sizes {
		if n < 1 || n > MaxParams {
			panic(fmt.Sprintf("hostdev: kernel %q: parameter %d of %d bytes", name, i, n))
		}
		a := 1
		for a < n && a < 8 {
			a *= 2
		}
		end = (end + a - 1) &^ (a - 1)
		layout[i] = device.Param{Offset: end, Size: n}
		end += n
		if end > MaxParams {
			panic(fmt.Sprintf("hostdev: kernel %q reads %d parameter bytes, more than %d", name, end, MaxParams))
		}
	}
	registerDef(&kernelDef{name: name, fn: fn, params: end, layout: layout})
}

func register(name string, params int, fn Kernel) {
	registerDef(&kernelDef{name: name, fn: fn, params: params})
}

func registerDef(def *kernelDef) {
	name, fn := def.name, def.fn
	if err := checkName(name); err != nil {
		panic("hostdev: cannot register kernel: " + err.Error())
	}
	if fn == nil {
		panic(fmt.Sprintf("hostdev: cannot register kernel %q: nil function", name))
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.m == nil {
		registry.m = make(map[string]*kernelDef)
	}
	if _, dup := registry.m[name]; dup {
		panic(fmt.Sprintf("hostdev: kernel %q is already registered", name))
	}
	registry.m[name] = def
}

// lookup is the registered kernel name, or nil.
func lookup(name string) *kernelDef {
	registry.RLock()
	defer registry.RUnlock()
	return registry.m[name]
}

// Registered lists the names of the registered kernels, sorted.
func Registered() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Ctx is what a kernel sees of the thread it runs as. hostdev hands each
// worker goroutine one Ctx and reuses it for every thread it runs: a kernel
// must not keep it, nor the slices it gives, past its return.
type Ctx struct {
	// Group is the id of the thread's group, and Thread the thread's id
	// within its group.
	Group, Thread [3]int
	// Groups is the launch's groups along each axis, and Threads its
	// threads per group.
	Groups, Threads [3]int
	// Params is the launch's parameter bytes, buffer addresses patched in.
	Params []byte
	// Shared is the group's dynamic shared memory, zeroed when the group
	// starts, which the group's threads share.
	Shared []byte

	dev    *dev
	kernel string
	last   *region // the region Bytes found last in this launch
	shared []byte  // the worker's shared memory, MaxShared bytes
}

// faultPanic is what Fault panics with, and the worker recovers.
type faultPanic struct{ why string }

// Fault faults the device with the cause why, as a fault of a GPU's work
// does: the device is lost, and its later work does not run. Fault does not
// return: it ends the kernel's call, and the launch runs no further groups.
// The fault is recorded before the panic that ends the call, so a kernel
// that recovers that panic (a recover of its own, or of a library it calls)
// still faults the device, as does a read past Params or outside every
// region (Bytes).
func (k *Ctx) Fault(why string) {
	if k.dev != nil {
		k.dev.faultWith(&device.Fault{Why: why})
	}
	panic(faultPanic{why: why})
}

// Stopped is closed once the device's work ends: at Stop, or at a fault,
// which ends a GPU context's work. A kernel that waits for something
// outside the device selects on it, so that Stop and faults end it. A Ctx
// made outside a launch (a test's literal) has no device: its Stopped is
// nil, never closed.
func (k *Ctx) Stopped() <-chan struct{} {
	if k.dev == nil {
		return nil
	}
	return k.dev.ended
}

// Bytes is the n bytes at the device address addr, which must lie within a
// live region of this device (an allocation, or a mapping MapHost or
// MapPeer made). Otherwise it faults the device (Fault), as a GPU's MMU
// does. A Ctx made outside a launch has no device, and no address lies
// within a region of it.
func (k *Ctx) Bytes(addr uint64, n int) []byte {
	if n < 0 {
		k.Fault(fmt.Sprintf("kernel %q asked for %d bytes at %#x", k.kernel, n, addr))
	}
	r := k.last
	if r == nil || !r.holds(addr, n) || !r.live() {
		r = nil
		if k.dev != nil {
			r = k.dev.find(addr, n)
		}
		if r == nil {
			k.Fault(fmt.Sprintf("kernel %q addressed %d bytes at %#x, outside every region of the device", k.kernel, n, addr))
		}
		k.last = r
	}
	return r.bytes(addr-uint64(r.addr), uint64(n))
}

// Float32s is the n float32 values at the device address addr, which must
// be a multiple of 4 and lie within a live region (Bytes).
func (k *Ctx) Float32s(addr uint64, n int) []float32 {
	if addr%4 != 0 {
		k.Fault(fmt.Sprintf("kernel %q addressed float32 values at %#x, not a multiple of 4", k.kernel, addr))
	}
	if n < 0 || n > math.MaxInt/4 {
		k.Fault(fmt.Sprintf("kernel %q asked for %d float32 values", k.kernel, n))
	}
	if n == 0 {
		return nil
	}
	k.Bytes(addr, 4*n)
	return sliceAt[float32](uintptr(addr), n)
}

// Uint64 is the little-endian uint64 at byte off of Params. A read past the
// parameter bytes faults the device.
func (k *Ctx) Uint64(off int) uint64 {
	if off < 0 || off > len(k.Params)-8 {
		k.Fault(fmt.Sprintf("kernel %q read 8 parameter bytes at %d of %d", k.kernel, off, len(k.Params)))
	}
	return binary.LittleEndian.Uint64(k.Params[off:])
}

// Uint32 is the little-endian uint32 at byte off of Params. A read past the
// parameter bytes faults the device.
func (k *Ctx) Uint32(off int) uint32 {
	if off < 0 || off > len(k.Params)-4 {
		k.Fault(fmt.Sprintf("kernel %q read 4 parameter bytes at %d of %d", k.kernel, off, len(k.Params)))
	}
	return binary.LittleEndian.Uint32(k.Params[off:])
}

// Index is the thread's index along x over the whole launch:
// Group[0]*Threads[0] + Thread[0].
func (k *Ctx) Index() int { return k.Group[0]*k.Threads[0] + k.Thread[0] }

// span is the part [lo, hi) of n items that thread i of t takes, 0 <= i <
// t. The products n*i and n*(i+1) are taken as 128 bits, so that they do
// not wrap where n is large and there are many threads; their quotients by
// t are at most n.
func span(n, i, t uint64) (lo, hi uint64) {
	return mulDiv(n, i, t), mulDiv(n, i+1, t)
}

// mulDiv is n*i/t, for i <= t and t > 0, without overflow.
func mulDiv(n, i, t uint64) uint64 {
	h, l := bits.Mul64(n, i)
	q, _ := bits.Div64(h, l, t)
	return q
}

// share is the part [lo, hi) of n items that the thread takes, spread over
// the launch's threads in the order of their global index. A launch has up
// to about 2^73 threads (2^31-1 by 65535 by 65535 groups of 1024), whose
// count and index wrap 64 bits: they are taken as 128 bits, and the spans
// of a launch of 2^64 threads or more as big integers.
func (k *Ctx) share(n uint64) (lo, hi uint64) {
	i, t := k.global()
	if t[0] == 0 {
		return span(n, i[1], t[1])
	}
	u := func(x [2]uint64) *big.Int {
		b := new(big.Int).SetUint64(x[0])
		return b.Lsh(b, 64).Or(b, new(big.Int).SetUint64(x[1]))
	}
	bt, bn := u(t), new(big.Int).SetUint64(n)
	x := new(big.Int).Mul(bn, u(i))
	lo = new(big.Int).Quo(x, bt).Uint64()
	hi = x.Add(x, bn).Quo(x, bt).Uint64()
	return lo, hi
}

// global is the thread's index and the count of threads over the launch,
// each as 128 bits, high word first.
func (k *Ctx) global() (i, t [2]uint64) {
	gx, gy, gz := uint64(k.Groups[0]), uint64(k.Groups[1]), uint64(k.Groups[2])
	g := (uint64(k.Group[2])*gy+uint64(k.Group[1]))*gx + uint64(k.Group[0])
	th := (uint64(k.Thread[2])*uint64(k.Threads[1])+uint64(k.Thread[1]))*uint64(k.Threads[0]) + uint64(k.Thread[0])
	per := uint64(k.Threads[0]) * uint64(k.Threads[1]) * uint64(k.Threads[2])
	var c uint64
	i[0], i[1] = bits.Mul64(g, per)
	i[1], c = bits.Add64(i[1], th, 0)
	i[0] += c
	t[0], t[1] = bits.Mul64(gx*gy*gz, per)
	return i, t
}

// The built-in kernels. Their parameters are little-endian.
func init() {
	// empty does nothing.
	RegisterArgs("empty", func(*Ctx) {})
	// twice doubles the float32 x[i], i = Group[0]*Threads[0]+Thread[0],
	// of the array whose address is the 8 bytes at 0.
	RegisterArgs("twice", func(k *Ctx) {
		x := k.Float32s(k.Uint64(0)+4*uint64(k.Index()), 1)
		x[0] *= 2
	}, 8)
	// hang blocks until the device stops or faults: the injection of a
	// hang.
	RegisterParams("hang", 0, func(k *Ctx) { <-k.Stopped() })
	// panic panics, which faults the device.
	RegisterParams("panic", 0, func(k *Ctx) {
		panic(fmt.Sprintf("group %v thread %v", k.Group, k.Thread))
	})
	// fault faults the device through Ctx.Fault, with the parameter bytes
	// as the cause where there are any.
	Register("fault", func(k *Ctx) {
		why := "the fault kernel faulted"
		if n := len(k.Params); n > 0 {
			b := k.Params
			for n > 0 && b[n-1] == 0 {
				n--
			}
			why = string(b[:n])
		}
		k.Fault(why)
	})
	// sleep sleeps for the nanoseconds in the 8 bytes at 0, or until the
	// device's work ends, in each thread. A count past what a
	// time.Duration holds (some 292 years) sleeps until the work ends.
	RegisterArgs("sleep", func(k *Ctx) {
		ns := k.Uint64(0)
		if ns > math.MaxInt64 {
			<-k.Stopped()
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-k.Stopped():
		}
	}, 8)
	// copy moves the n bytes (at 16) from the address at 8 to the address
	// at 0, spread over the launch's threads.
	RegisterArgs("copy", func(k *Ctx) {
		dst, src, n := k.Uint64(0), k.Uint64(8), k.Uint64(16)
		lo, hi := k.share(n)
		if hi > lo {
			copy(k.Bytes(dst+lo, int(hi-lo)), k.Bytes(src+lo, int(hi-lo)))
		}
	}, 8, 8, 8)
	// fill sets the n bytes (at 8) at the address at 0 to the byte at 16,
	// spread over the launch's threads.
	RegisterArgs("fill", func(k *Ctx) {
		dst, n, v := k.Uint64(0), k.Uint64(8), k.Params[16]
		lo, hi := k.share(n)
		if hi > lo {
			b := k.Bytes(dst+lo, int(hi-lo))
			for j := range b {
				b[j] = v
			}
		}
	}, 8, 8, 1)
}
