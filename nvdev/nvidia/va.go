package nvidia

import (
	"fmt"
	"slices"
	"unsafe"
)

// The GPU virtual address layout of the path (see the package doc).
const (
	// windows is the first GPU address of the windows onto shared and
	// local memory that a device sets on its compute channel, 2^40 - 8 GiB.
	// The path gives no memory from there to
	// 2^40.
	windows = 1<<40 - 8<<30

	// hostBase, hostSize, hostMin and hostTop place the reservation of
	// host-visible addresses: Pinned and Mapped memory, host memory the
	// path maps at an address of its own, and the ranges UVM maps
	// channels' buffers in. It lies between hostBase and the windows, and
	// is hostSize long where the host has room, or the longest half of it
	// that fits, down to hostMin: Go places its heap at a random address
	// (from Go 1.26), which may lie there. Open tries places hostStep
	// apart.
	hostBase = 0x10_0000_0000 // 64 GiB
	hostSize = 0x80_0000_0000 // 512 GiB
	hostMin  = 0x10_0000_0000 // 64 GiB
	hostStep = 0x4_0000_0000  // 16 GiB
	hostTop  = windows

	// deviceBase and deviceSize place Device memory, which the host never
	// addresses: from 2^40, past windows, to 2^47. The host reserves
	// nothing there, since no host address of the path's ever lies there.
	deviceBase = 1 << 40
	deviceSize = 1<<47 - 1<<40

	pageSize = 4 << 10
)

// span is the addresses [addr, addr+size).
type span struct{ addr, size uint64 }

func (s span) end() uint64 { return s.addr + s.size }

func (s span) overlaps(o span) bool { return s.addr < o.end() && o.addr < s.end() }

// pool hands out aligned ranges of [base, base+size), first fit, and takes
// them back, merging neighbours. Its caller locks it.
type pool struct {
	base, size uint64
	free       []span // sorted, disjoint, not touching
}

func newPool(base, size uint64) *pool {
	return &pool{base: base, size: size, free: []span{{base, size}}}
}

// alloc takes size bytes at an address aligned to align, a power of two.
func (p *pool) alloc(size, align uint64) (uint64, bool) {
	if size == 0 || align == 0 || align&(align-1) != 0 {
		return 0, false
	}
	for i, f := range p.free {
		a := (f.addr + align - 1) &^ (align - 1)
		if a < f.addr || a+size < a || a+size > f.end() {
			continue
		}
		var parts []span
		if a > f.addr {
			parts = append(parts, span{f.addr, a - f.addr})
		}
		if a+size < f.end() {
			parts = append(parts, span{a + size, f.end() - (a + size)})
		}
		p.free = slices.Replace(p.free, i, i+1, parts...)
		return a, true
	}
	return 0, false
}

// release gives back [addr, addr+size), which alloc gave.
func (p *pool) release(addr, size uint64) {
	s := span{addr, size}
	if size == 0 || addr < p.base || s.end() > p.base+p.size {
		panic(fmt.Sprintf("nvidia: release of [0x%x, 0x%x) outside the pool", addr, s.end()))
	}
	i, _ := slices.BinarySearchFunc(p.free, addr, func(f span, a uint64) int {
		switch {
		case f.addr < a:
			return -1
		case f.addr > a:
			return 1
		}
		return 0
	})
	if (i > 0 && p.free[i-1].end() > addr) || (i < len(p.free) && p.free[i].addr < s.end()) {
		panic(fmt.Sprintf("nvidia: double release of [0x%x, 0x%x)", addr, s.end()))
	}
	p.free = slices.Insert(p.free, i, s)
	// Merge with the next, then the previous.
	if i+1 < len(p.free) && p.free[i].end() == p.free[i+1].addr {
		p.free[i].size += p.free[i+1].size
		p.free = slices.Delete(p.free, i+1, i+2)
	}
	if i > 0 && p.free[i-1].end() == p.free[i].addr {
		p.free[i-1].size += p.free[i].size
		p.free = slices.Delete(p.free, i, i+1)
	}
}

// take takes the free addresses of s out of the pool, for good.
func (p *pool) take(s span) {
	var free []span
	for _, f := range p.free {
		if !f.overlaps(s) {
			free = append(free, f)
			continue
		}
		if f.addr < s.addr {
			free = append(free, span{f.addr, s.addr - f.addr})
		}
		if f.end() > s.end() {
			free = append(free, span{s.end(), f.end() - s.end()})
		}
	}
	p.free = free
}

// contains reports whether s lies within the pool's addresses.
func (p *pool) contains(s span) bool { return s.addr >= p.base && s.end() <= p.base+p.size }

// freeBytes is the bytes the pool has left.
func (p *pool) freeBytes() uint64 {
	var n uint64
	for _, f := range p.free {
		n += f.size
	}
	return n
}

// spanSet is a set of disjoint spans: the host ranges mapped at their own
// addresses for the GPU.
type spanSet struct{ spans []span }

// overlaps reports whether s overlaps a span of the set.
func (t *spanSet) overlaps(s span) bool {
	for _, o := range t.spans {
		if o.overlaps(s) {
			return true
		}
	}
	return false
}

// add puts s in the set; it must overlap none.
func (t *spanSet) add(s span) { t.spans = append(t.spans, s) }

// remove takes s out of the set.
func (t *spanSet) remove(s span) {
	if i := slices.Index(t.spans, s); i >= 0 {
		t.spans = slices.Delete(t.spans, i, i+1)
	}
}

// ptrAt is the address a outside Go's heap (memory the package mapped) as
// an unsafe.Pointer. The collector ignores such pointers.
func ptrAt(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// reserveHost reserves the host-visible addresses: hostSize bytes at the
// first free place from hostBase, or where no such place is free, the
// longest half, quarter and so on down to hostMin. It returns the start
// and the size.
func reserveHost() (uintptr, uint64, error) {
	var last error
	for size := uint64(hostSize); size >= hostMin; size /= 2 {
		for a := uint64(hostBase); a+size <= hostTop; a += hostStep {
			err := reserve(uintptr(a), size)
			if err == nil {
				return uintptr(a), size, nil
			}
			last = err
		}
	}
	return 0, 0, fmt.Errorf("nvidia: no room for %d GiB of host-visible addresses between 0x%x and 0x%x: %w", hostMin>>30, uint64(hostBase), uint64(hostTop), last)
}

// roundUp rounds n up to a multiple of align, a power of two.
func roundUp(n, align uint64) uint64 { return (n + align - 1) &^ (align - 1) }
