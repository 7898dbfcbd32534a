package nvidia

import (
	"strings"
	"syscall"
	"testing"
)

// TestParamsPast4GiB hands the RM's alloc and control a parameter block of
// 2^32 bytes (addresses reserved, never touched): the RM counts the size
// in 32 bits, so each is refused before the ioctl, where the count would
// wrap to 0.
func TestParamsPast4GiB(t *testing.T) {
	f, a, _ := peerRig(t, 0)
	big, err := syscall.Mmap(-1, 0, 1<<32, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("no 4 GiB of addresses to reserve: %v", err)
	}
	defer func() { _ = syscall.Munmap(big) }()
	if _, err := a.r.alloc(0xa0, 0x1, big); err == nil || !strings.Contains(err.Error(), "2^32") {
		t.Errorf("alloc of 2^32 bytes of parameters: %v", err)
	}
	if err := a.r.control(0xa0, 0x1, big); err == nil || !strings.Contains(err.Error(), "2^32") {
		t.Errorf("control of 2^32 bytes of parameters: %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("the refused calls reached the RM: %v", f.calls)
	}
}

// TestMapHostPast2To64 maps host memory whose last page would pass 2^64:
// MapHost refuses it before the RM is asked, and the path counts nothing.
func TestMapHostPast2To64(t *testing.T) {
	f, a, _ := peerRig(t, 0)
	live := a.live
	if _, err := a.MapHost(^uintptr(0)-100, 50); err == nil || !strings.Contains(err.Error(), "2^64") {
		t.Fatalf("MapHost at the top of the addresses: %v", err)
	}
	if a.live != live || len(f.calls) != 0 {
		t.Fatalf("after the refusal: live %d (was %d), calls %v", a.live, live, f.calls)
	}
}
