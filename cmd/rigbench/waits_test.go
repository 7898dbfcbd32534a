package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// TestWaitsReported checks that a run reports how its waits ended, and
// that -waitspin 0 parks every wait that the device had not yet reached.
func TestWaitsReported(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantParked bool
	}{
		{[]string{"-device", "host", "-n", "2000", "-depth", "1", "-workload", "empty"}, false},
		{[]string{"-device", "host", "-n", "2000", "-depth", "1", "-workload", "empty", "-waitspin", "0", "-json"}, true},
	} {
		defer func() { waitSpin = -1 }()
		var out, errs bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errs); code != 0 {
			t.Fatalf("rigbench %v: exit %d: %s", tc.args, code, errs.String())
		}
		s := out.String()
		if !strings.Contains(s, "waits") {
			t.Fatalf("rigbench %v reported no waits:\n%s", tc.args, s)
		}
		if tc.wantParked && strings.Contains(s, `"parked": 0,`) {
			t.Fatalf("rigbench %v: no wait parked with -waitspin 0:\n%s", tc.args, s)
		}
		waitSpin = -1
	}
}

// TestWaitsGrowths checks that the waits' line names the growths and the
// reclamation rounds of the run, from the devices' Stats, and leaves them
// out where there were none.
func TestWaitsGrowths(t *testing.T) {
	before := []rig.Stats{{Growths: 1, ReclaimRounds: 2}, {}}
	after := []rig.Stats{{Growths: 3, ReclaimRounds: 2, WaitsSpun: 5}, {Growths: 1}}
	w := waitsBetween(before, after)
	if w.Growths != 3 || w.ReclaimRounds != 0 || w.Spun != 5 {
		t.Fatalf("waitsBetween = %+v, want 3 growths, 0 reclamation rounds, 5 spun", w)
	}
	if s := w.text(); !strings.Contains(s, "3 growths, 0 reclamation rounds") {
		t.Fatalf("text %q names no growths", s)
	}
	if s := waitsBetween(after, after).text(); strings.Contains(s, "growths") {
		t.Fatalf("text %q names growths of a run without any", s)
	}
}

// Waits that parked and were then cancelled count once in the parked
// share, and a run whose parked waiters none was woken (all cancelled)
// names no wake-up figures.
func TestWaitsCancelledShare(t *testing.T) {
	w := &Waits{Spun: 3, Parked: 5, Cancelled: 8}
	s := w.text()
	if !strings.Contains(s, "5 parked (62.5%), 8 cancelled") {
		t.Errorf("text %q: want 5 parked of 8 waits, 62.5%%", s)
	}
	if strings.Contains(s, "wake-up") {
		t.Errorf("text %q names a wake-up with no waiter woken", s)
	}
	var before, after rig.Stats
	after.WaitsParked = 5
	if w := waitsBetween([]rig.Stats{before}, []rig.Stats{after}); w.Woken != 0 || w.WakeP50Ns != 0 || w.WakeP99Ns != 0 {
		t.Errorf("waitsBetween with no wake-up: %+v", w)
	}
	after.WakeLatency.Buckets[3], after.WakeLatency.Count = 2, 2
	if w := waitsBetween([]rig.Stats{before}, []rig.Stats{after}); w.Woken != 2 || w.WakeP50Ns == 0 || !strings.Contains(w.text(), "wake-up p50") {
		t.Errorf("waitsBetween with two wake-ups: %+v, %q", w, w.text())
	}
}

// TestWaitsHanded: the waits' line counts the waits of Run.Do handed to
// the supervisor, and says nothing of them where there were none.
func TestWaitsHanded(t *testing.T) {
	before := []rig.Stats{{WaitsParked: 2, WaitsHanded: 1}}
	after := []rig.Stats{{WaitsParked: 12, WaitsHanded: 8}}
	w := waitsBetween(before, after)
	if w.Handed != 7 || w.Parked != 10 {
		t.Fatalf("waitsBetween = %+v, want 7 handed of 10 parked", w)
	}
	if s := w.text(); !strings.Contains(s, "10 parked (100.0%), of them 7 handed over") {
		t.Fatalf("text %q names no handed waits", s)
	}
	if s := waitsBetween(after, after).text(); strings.Contains(s, "handed") {
		t.Fatalf("text %q names handed waits where there were none", s)
	}
}
