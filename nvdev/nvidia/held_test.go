package nvidia

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rig-go/rig/device"
)

// heldRig is a path on the fake driver with the host-visible reservation
// made, which the test gives back.
func heldRig(t *testing.T) *Client {
	_, a, _ := peerRig(t, 0)
	s := a.sys
	s.mu.Lock()
	_, err := s.hostPool()
	s.mu.Unlock()
	if err != nil {
		t.Skipf("no reservation possible here: %v", err)
	}
	res, n := s.hostRes, s.hostLen
	t.Cleanup(func() {
		hostLeft.Lock()
		if hostLeft.res == res {
			hostLeft.res, hostLeft.size, hostLeft.kept = 0, 0, nil
		}
		hostLeft.Unlock()
		_ = munmap(res, n)
	})
	return a
}

// fakeMapped is size bytes of Mapped memory of path a, held or not, at
// host-visible addresses of a's pool: shared memory stands for the BAR
// mapping, and the record counts among a's live memory.
func fakeMapped(t *testing.T, a *Client, size uint64, held bool) *Memory {
	t.Helper()
	va, pl, err := a.takeVA(true, size, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mapShared(uintptr(va), size); err != nil {
		t.Fatal(err)
	}
	rec := &memRecord{va: va, length: size, page: pageSize, pool: pl, own: true, held: held, hostPtr: ptrAt(uintptr(va)), path: a}
	a.live++
	return &Memory{Kind: device.MappedMemory, Address: va, Host: uintptr(va), Size: int(size), Handle: 0xbeef, Data: rec}
}

// A freed held Mapped memory outside Go's heap keeps its zeroed pages past
// the end of the system: a slice of it still reads zeros. The rest of the
// reservation stays reserved, for the next system, which hands out none of
// the kept addresses.
func TestCloseKeepsHeldMapped(t *testing.T) {
	a := heldRig(t)
	s := a.sys
	const size = 2 * pageSize
	m := fakeMapped(t, a, size, true)
	rec, va := m.Data.(*memRecord), m.Address
	t.Cleanup(func() { _ = munmap(uintptr(va), size) })
	b := m.Bytes()
	b[0] = 42
	if err := a.Free(m); err != nil {
		t.Fatal(err)
	}
	if !rec.kept || b[0] != 0 {
		t.Fatalf("kept %v, byte 0 reads %d after Free", rec.kept, b[0])
	}
	res, n := s.hostRes, s.hostLen
	// A page of the reservation still mapped at the close, as a Mapped
	// memory whose unmap failed would be, goes back to the reservation.
	stray := res + uintptr(n) - 2*pageSize
	if _, err := mapShared(stray, pageSize); err != nil {
		t.Fatal(err)
	}
	s.client, s.ctl, s.uvm.fd = 0, -1, -1 // the fake's files are no files
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if err := reserve(uintptr(va), size); !errors.Is(err, unix.EEXIST) {
		if err == nil {
			_ = munmap(uintptr(va), size)
		}
		t.Fatalf("the kept pages are unmapped after close: reserve answered %v", err)
	}
	if b[0] != 0 || b[size-1] != 0 {
		t.Errorf("kept pages read %d, %d", b[0], b[size-1])
	}
	for _, p := range []uintptr{res, stray, res + uintptr(n) - pageSize} {
		if err := reserve(p, pageSize); !errors.Is(err, unix.EEXIST) {
			if err == nil {
				_ = munmap(p, pageSize)
			}
			t.Errorf("0x%x of the reservation is given back at close: reserve answered %v", p, err)
		}
	}
	if perm, err := protAt(stray); err != nil || perm != "---p" {
		t.Errorf("the page mapped at close is %q after it, not reserved (%v)", perm, err)
	}

	// The next system takes the reservation, less the kept pages.
	next := &system{uvmMM: -1}
	next.mu.Lock()
	pl2, err := next.hostPool()
	next.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if next.hostRes != res || next.hostLen != n {
		t.Fatalf("the next system reserved [0x%x, +0x%x), not the reservation left at [0x%x, +0x%x)", next.hostRes, next.hostLen, res, n)
	}
	if pl2.freeBytes() != n-size || !next.kept.overlaps(span{va, size}) {
		t.Errorf("the next pool has 0x%x of 0x%x bytes free, kept %x", pl2.freeBytes(), n, next.kept.spans)
	}
	for {
		a, ok := pl2.alloc(size, pageSize)
		if !ok {
			break
		}
		if (span{a, size}).overlaps(span{va, size}) {
			t.Fatalf("the next pool handed out the kept addresses 0x%x", a)
		}
		if a > va {
			break
		}
	}
}

// Held Mapped memory larger than the BAR takes no Go memory: Go ends the
// process where the host cannot hold an allocation of that size.
func TestAllocHeldBeyondBAR(t *testing.T) {
	a := heldRig(t)
	a.bar1 = 16 << 20
	const n = 64 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := a.AllocHeld(device.MappedMemory, n)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("the fake driver made the memory")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got >= n {
		t.Errorf("%d bytes of Go memory taken for %d bytes of Mapped memory with a BAR of %d", got, n, a.bar1)
	}
	if a.live != 0 || a.sys.host.freeBytes() != a.sys.hostLen || len(a.sys.identity.spans) != 0 {
		t.Errorf("live %d, %d of %d host addresses free, identity %v", a.live, a.sys.host.freeBytes(), a.sys.hostLen, a.sys.identity.spans)
	}
}

// Pinned memory the host cannot map is device.ErrNoMemory, not a fault,
// and its addresses go back to the pool, reserved.
func TestAllocPinnedHostLacks(t *testing.T) {
	a := heldRig(t)
	const n = 400 << 30
	probe, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err == nil {
		_ = unix.Munmap(probe)
		t.Skip("the host maps 400 GiB of shared memory (overcommit)")
	}
	if !errors.Is(err, unix.ENOMEM) {
		t.Skipf("the host refused otherwise: %v", err)
	}
	_, err = a.Alloc(device.PinnedMemory, n)
	if !errors.Is(err, device.ErrNoMemory) || isFault(err) {
		t.Errorf("a host without the memory: %v (fault %v)", err, isFault(err))
	}
	if a.live != 0 || a.sys.host.freeBytes() != a.sys.hostLen {
		t.Errorf("live %d, %d of %d host addresses free", a.live, a.sys.host.freeBytes(), a.sys.hostLen)
	}
	if err := reserve(a.sys.hostRes, pageSize); !errors.Is(err, unix.EEXIST) {
		t.Errorf("the addresses are not reserved after the refusal: %v", err)
	}
}

// Pinned memory from AllocHeld keeps its addresses past Free, as held
// Mapped memory outside Go's heap does: a slice of it reads zeros, and no
// later allocation takes its addresses, which the slice would reach.
func TestAllocHeldPinned(t *testing.T) {
	a := heldRig(t)
	f := &peerFake{t: t, statuses: map[string][]uint32{}}
	a.r.ioctl = f.ioctl
	a.u.conn = a.r.conn
	const n = 2 * pageSize
	m, err := a.AllocHeld(device.PinnedMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bytes()
	b[0], b[n-1] = 42, 42
	if err := a.Free(m); err != nil {
		t.Fatal(err)
	}
	m2, err := a.Alloc(device.PinnedMemory, n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free(m2)
	if m2.Host < m.Host+n && m.Host < m2.Host+n {
		t.Fatalf("Pinned memory at 0x%x took the addresses of freed held Pinned memory at 0x%x", m2.Host, m.Host)
	}
	if b[0] != 0 || b[n-1] != 0 {
		t.Errorf("freed held Pinned memory reads %d, %d", b[0], b[n-1])
	}
}

// Pinned memory from Alloc gives its addresses back at Free, to the
// reservation that the system's close unmaps and where Go's heap may lie
// later: the record keeps no pointer there, and Bytes is nil.
func TestFreeDropsHostView(t *testing.T) {
	a := heldRig(t)
	f := &peerFake{t: t, statuses: map[string][]uint32{}}
	a.r.ioctl = f.ioctl
	a.u.conn = a.r.conn
	m, err := a.Alloc(device.PinnedMemory, 2*pageSize)
	if err != nil {
		t.Fatal(err)
	}
	if m.Bytes() == nil {
		t.Fatal("Pinned memory has no host view")
	}
	if err := a.Free(m); err != nil {
		t.Fatal(err)
	}
	if rec := m.Data.(*memRecord); rec.hostPtr != nil || m.Bytes() != nil {
		t.Errorf("after Free the record points to 0x%x of the reservation, and Bytes is %d bytes", uintptr(rec.hostPtr), len(m.Bytes()))
	}
}

// protAt is the permissions /proc/self/maps gives the mapping holding a,
// such as "---p" for a reservation.
func protAt(a uintptr) (string, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(maps)) {
		var lo, hi uint64
		var perm string
		if _, err := fmt.Sscanf(line, "%x-%x %s", &lo, &hi, &perm); err != nil {
			continue
		}
		if uint64(a) >= lo && uint64(a) < hi {
			return perm, nil
		}
	}
	return "", fmt.Errorf("0x%x is not mapped", a)
}
