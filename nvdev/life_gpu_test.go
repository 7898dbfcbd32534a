package nvdev

import (
	"testing"
	"time"

	"github.com/rig-go/rig/internal/lifecheck"
)

// TestGPULifeClosePeer opens two devices of GPU 0 through rig, A and B,
// and closes A while B's work that reads a Device buffer of A through
// B's view waits: A keeps the buffer until B's work ran, and B reads A's
// bytes. Run it with RIG_GPU=1.
func TestGPULifeClosePeer(t *testing.T) {
	a := openNamed(t, "NV-LIFE-A", Config{})
	b := openNamed(t, "NV-LIFE-B", Config{})
	lifecheck.CloseKeepsPeerBuffers(t, a, b, resolve(t, b, "spin_until")[0])
}

// TestGPULifeWaitOnEnded opens two devices of GPU 0 through rig, A and B,
// in no common fault domain, and has B's work wait on the GPU for A's
// held work, which A's close or loss (its hang bound) ends: B's work fails
// with an error naming A, before or after B's submission. Run it with
// RIG_GPU=1.
func TestGPULifeWaitOnEnded(t *testing.T) {
	for _, c := range []struct {
		name   string
		hang   time.Duration
		before bool
		want   string
	}{
		{"closed after", 0, false, "closed"},
		{"lost after", 300 * time.Millisecond, false, "no progress"},
		{"lost before", 300 * time.Millisecond, true, "no progress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := openNamed(t, "NV-LIFE-A", Config{Hang: c.hang})
			b := openNamed(t, "NV-LIFE-B", Config{})
			if a.Facts().FaultDomain != "" && a.Facts().FaultDomain == b.Facts().FaultDomain {
				t.Logf("A and B share fault domain %q", a.Facts().FaultDomain)
			}
			lifecheck.WaitOnEnded(t, a, b, resolve(t, a, "spin_until")[0], c.before, lifecheck.Ender(t, a, c.hang > 0, 20*time.Second), c.want)
		})
	}
}
