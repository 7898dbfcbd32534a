package hostdev

import (
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
	start := time.Now()
	for range cap(errs) {
		go func() { errs <- d.Sleep(5, time.Minute) }()
	}
	for range cap(errs) {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("sleep after stop answered %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a sleep after stop did not return in 5 s")
		}
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("the sleeps after stop returned after %v", el)
	}
}
