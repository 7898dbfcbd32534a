package cudadev

import (
	"testing"
	"time"

	"github.com/rig-go/rig/internal/lifecheck"
	rig "github.com/rig-go/rig/runtime"
)

// lifePair opens GPU 0 as A, with c, and as B GPU 1 where CUDA sees two
// GPUs, GPU 0's second timeline otherwise, through rig, and resolves
// spin_until on each.
func lifePair(t *testing.T, c Config) (a, b *rig.Device, spinA, spinB *rig.Function) {
	t.Helper()
	needGPU(t)
	other := Open(0, Config{Timeline: 1})
	if n, err := Count(); err == nil && n >= 2 {
		other = Open(1, Config{})
	}
	a, b = openRigWith(t, Open(0, c)), openRigWith(t, other)
	spin := func(d *rig.Device) *rig.Function {
		img, err := d.LoadImage(kernels(t, d.Arch()))
		if err != nil {
			t.Fatal(err)
		}
		return resolve(t, img, "spin_until")
	}
	return a, b, spin(a), spin(b)
}

// TestGPULifeClosePeer closes A (GPU 0) while B's (see lifePair) work that reads
// a Device buffer of A through peer access waits: A keeps the buffer until
// B's work ran, and B reads A's bytes. Run it with RIG_GPU=1.
func TestGPULifeClosePeer(t *testing.T) {
	a, b, _, spinB := lifePair(t, Config{})
	lifecheck.CloseKeepsPeerBuffers(t, a, b, spinB)
}

// TestGPULifeWaitOnEnded has B's (see lifePair) work wait on the GPU for A's (GPU
// 0) held work, which A's close or loss (its hang bound, which loses no
// other device of the fault domain) ends: B's work fails with an error
// naming A, before or after B's submission. Run it with RIG_GPU=1.
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
			a, b, spinA, _ := lifePair(t, Config{Hang: c.hang})
			lifecheck.WaitOnEnded(t, a, b, spinA, c.before, lifecheck.Ender(t, a, c.hang > 0, 20*time.Second), c.want)
		})
	}
}
