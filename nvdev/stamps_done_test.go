package nvdev

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/rig-go/rig/nvdev/nvidia"
)

// TestStampsDoneBound times far more values than the stamp ring holds with
// no Settle between: the stamps Submit converts to free their slots are
// kept up to maxDone, the latest, rather than without bound.
func TestStampsDoneBound(t *testing.T) {
	ring := make([]uint64, records*stampBytes/8)
	d := &gpu{}
	p := &d.prof
	p.mem.Store(&nvidia.Memory{Host: uintptr(unsafe.Pointer(&ring[0]))})
	p.pend = make([]stampRec, records)
	p.first = nvidia.Timer{GPU: 0, Host: 0}
	const n = 3 * records
	for v := uint64(1); v <= n; v++ {
		d.timed(v, qCompute, 1<<qCompute)
		// The value's work writes its start and its end.
		st := p.stamps(p.mem.Load(), v)
		st[0], st[1] = v, 10*v
		st[2*stampEnd], st[2*stampEnd+1] = v, 10*v+5
	}
	if p.done.Len() > maxDone {
		t.Fatalf("%d stamps kept for Settle, over %d", p.done.Len(), maxDone)
	}
	p.mu.Lock()
	got := p.done.Take(nil)
	p.mu.Unlock()
	if len(got) != maxDone {
		t.Fatalf("%d stamps for Settle, want %d", len(got), maxDone)
	}
	// Values up to n-records were converted; the latest maxDone are kept.
	first := uint64(n-records) - maxDone + 1
	for i, s := range got {
		if want := first + uint64(i); s.Value != want || s.End-s.Start != 5 {
			t.Fatalf("stamp %d: %+v, want value %d", i, s, want)
		}
	}
	runtime.KeepAlive(ring)
}
