package rig

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
)

var keptRunNames atomic.Int64

// keptRunHost is a host device of a fresh name, closed at the test's end.
func keptRunHost(t *testing.T) *Device {
	t.Helper()
	d, err := Open(context.Background(), hostdev.Open(hostdev.Config{Name: "kept-run-" + strconv.FormatInt(keptRunNames.Add(1), 10)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); <-d.Done() })
	return d
}

// Quantile is nearest rank, the ceil(q*n)-th smallest, so that no more
// than (1-q)*n durations lie above the bound. Of n = 109,999 durations,
// p99.99 is the ceil(109,988.9) = 109,989th; with 109,988 fast ones and 11
// slow, it is a slow one. A round-up tolerance in proportion to q*n (1e-9
// of it, 1.1e-4 here) would swallow the fraction and answer the fast
// bucket, with 11 durations above it where (1-q)*n is 10.9999.
func TestQuantileRankOfManyDurations(t *testing.T) {
	var h Histogram
	h.Buckets[4] = 109_988 // 10 ns each
	h.Buckets[20] = 11     // 1 ms each
	h.Count = 109_999
	if got := h.Quantile(0.9999); got != 1<<20 {
		t.Errorf("p99.99 of 109,988 × 10ns and 11 × 1ms = %v, want %v (11 durations lie above %v, more than (1-q)*n = %.4f)",
			got, time.Duration(1<<20), got, (1-0.9999)*109_999)
	}
	// The same at p99.9 past a million durations.
	var g Histogram
	g.Buckets[4] = 1_000_997
	g.Buckets[20] = 1_002
	g.Count = 1_001_999
	if got := g.Quantile(0.999); got != 1<<20 {
		t.Errorf("p99.9 of 1,000,997 × 10ns and 1,002 × 1ms = %v, want %v", got, time.Duration(1<<20))
	}
}

// Once a buffer is freed, its points reached, and neither the Buffer nor a
// slice of it reachable, the garbage collector frees its memory. A
// Submission that lives on, as a server's does, keeps the last run
// submitted in its spare slot for the next Take: that run keeps nothing of
// the buffer (its state in Run.bufs, its region in Run.sub.Parts[i].Dst),
// which would keep the buffer's Go memory (a Pinned buffer's pages on the
// host driver, a MapHost buffer's caller memory).
func TestKeptRunHoldsNoFreedBuffer(t *testing.T) {
	d := keptRunHost(t)
	const n = 32 << 20
	s, err := NewSubmission(d, FillBytes(0, 0, n, 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w := func() weak.Pointer[bufState] {
		b, err := d.Alloc(device.PinnedMemory, n)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Take().Submit(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		return weak.Make(b.s)
	}()
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if w.Value() != nil {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		held := "elsewhere"
		if r := s.spare.Load(); r != nil && len(r.bufs) > 0 && r.bufs[0] == w.Value() {
			held = "by the submission's spare run (Run.bufs, Run.sub.Parts[0].Dst)"
		}
		t.Errorf("a freed %d-byte Pinned buffer, its point reached and nothing of it reachable, is still held after 5 collections (heap in use %d MiB), %s", n, ms.HeapInuse>>20, held)
	}
	runtime.KeepAlive(s)
}
