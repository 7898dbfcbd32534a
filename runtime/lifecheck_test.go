package rig_test

import (
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/internal/lifecheck"
)

func init() {
	// spin_until spins until the 8 bytes at the address at 0 are not
	// zero, or the device stops, as the GPU test kernel of that name.
	hostdev.RegisterParams("test_spin_until", 8, func(k *hostdev.Ctx) {
		p := (*uint64)(unsafe.Pointer(&k.Bytes(k.Uint64(0), 8)[0]))
		for atomic.LoadUint64(p) == 0 {
			select {
			case <-k.Stopped():
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	})
}

// TestLifecheckOnHost runs the two-device checks of the GPU tests on host
// devices.
func TestLifecheckOnHost(t *testing.T) {
	t.Run("close keeps peer buffers", func(t *testing.T) {
		a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
		lifecheck.CloseKeepsPeerBuffers(t, a, b, fn(t, b, "test_spin_until"))
	})
	for _, c := range []struct {
		name   string
		hang   time.Duration
		before bool
		want   string
	}{
		{"closed after", 0, false, "closed"},
		{"lost after", 100 * time.Millisecond, false, "no progress"},
		{"lost before", 100 * time.Millisecond, true, "no progress"},
	} {
		t.Run("wait on ended: "+c.name, func(t *testing.T) {
			a, b := host(t, hostdev.Config{Hang: c.hang}), host(t, hostdev.Config{})
			lifecheck.WaitOnEnded(t, a, b, fn(t, a, "test_spin_until"), c.before, lifecheck.Ender(t, a, c.hang > 0, 10*time.Second), c.want)
		})
	}
}
