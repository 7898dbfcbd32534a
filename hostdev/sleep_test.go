package hostdev

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestSleepAfterStop sleeps, once and by several sleepers at once, on a
// device already stopped, whose word shows the value seen: Stop ended the
// sleep before it began, so each Sleep returns at once.
func TestSleepAfterStop(t *testing.T) {
	d, _ := newDev(t, Config{}, 5)
	d.Stop("")
	errs := make(chan error, 3)
	for range cap(errs) {
		go func() { errs <- d.Sleep(5, time.Minute) }()
	}
	for range cap(errs) {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("sleep after stop answered %v", err)
			}
		case <-time.After(30 * time.Second):
			// A bound on a sleep of a minute, not a measure of speed.
			t.Fatal("a sleep after stop did not return in 30 s: it sleeps its bound")
		}
	}
}

// TestSleepKernelPastDuration launches the built-in sleep for counts of
// nanoseconds past what a time.Duration holds, up to 2^64-1: each sleeps
// until Stop, as it would for their centuries, rather than returning at
// once.
func TestSleepKernelPastDuration(t *testing.T) {
	for _, ns := range []uint64{1 << 63, math.MaxUint64} {
		d, w := newDev(t, Config{}, 0)
		sleep := entry(t, d, "sleep")
		v := submit(t, d, one(sleep, p64(ns)))
		if err := d.Sleep(0, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if got := atomic.LoadUint64(w); got != 0 {
			t.Errorf("a sleep of %d ns completed within 50 ms", ns)
		}
		d.Stop("")
		if err := reach(t, d, v); err != nil {
			t.Fatal(err)
		}
	}
}
