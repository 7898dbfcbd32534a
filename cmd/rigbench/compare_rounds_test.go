package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareRoundsNote checks that the baseline's note states the
// rounds that ran: fewer than -rounds where -n is smaller, or where a
// round met errors, and none of the baseline's where rig's first round
// met errors, which is no interruption.
func TestCompareRoundsNote(t *testing.T) {
	r := runJSON(t, context.Background(), "-device", "host", "-n", "3", "-compare", "-rounds", "5")
	if r.Rig.Submissions != 3 || r.Baseline == nil || !strings.Contains(r.BaselineNote, "in 3 alternating rounds") {
		t.Errorf("-n 3 -rounds 5: rig %+v, baseline %+v, note %q: want 3 rounds of one submission", r.Rig, r.Baseline, r.BaselineNote)
	}

	// Rounds of 200: rig's first makes calls 1 to 200 of the kernel, and
	// the baseline's first faults at 250.
	withFaulty(t, 250)
	_, r = runReport(t, "-device", "host", "-workload", "faulty", "-n", "1000", "-c", "2",
		"-compare", "-baseline", "driver", "-rounds", "5", "-timeout", "200ms")
	if r.Baseline == nil || r.Baseline.Errors == 0 || !strings.Contains(r.BaselineNote, "rig ran 1 and the baseline 1 of 5 alternating rounds") {
		t.Errorf("the baseline's first round met errors: baseline %+v, note %q", r.Baseline, r.BaselineNote)
	}

	withFaulty(t, 50)
	_, r = runReport(t, "-device", "host", "-workload", "faulty", "-n", "1000", "-c", "2",
		"-compare", "-baseline", "driver", "-rounds", "5", "-timeout", "200ms")
	if r.Rig.Errors == 0 || r.Baseline != nil || strings.Contains(r.BaselineNote, "interrupted") || !strings.Contains(r.BaselineNote, "errors") {
		t.Errorf("rig's first round met errors: rig %+v, baseline %+v, note %q", r.Rig, r.Baseline, r.BaselineNote)
	}
}

// TestCompareRoundsShareRate: with -rate, each side's rounds of -compare
// share one schedule of arrivals, -rate × -duration in all, rather than
// each round starting one at its own start.
func TestCompareRoundsShareRate(t *testing.T) {
	code, r := runReport(t, "-device", "host", "-rate", "1", "-duration", "500ms", "-compare", "-rounds", "5")
	if code != 0 || r.Baseline == nil {
		t.Fatalf("exit %d, baseline %v", code, r.Baseline)
	}
	if r.Rig.Submissions != 1 || r.Baseline.Submissions != 1 {
		t.Errorf("-rate 1 over 500ms in 5 rounds: rig sent %d submissions, the baseline %d; want the one due at 0 each",
			r.Rig.Submissions, r.Baseline.Submissions)
	}
}

// TestCompareProfileNote: the profile of -compare spans the baseline's run
// too, and the report says so, also with one round.
func TestCompareProfileNote(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.json")
	code, r := runReport(t, "-device", "host", "-duration", "200ms", "-compare", "-rounds", "1", "-trace", trace)
	if code != 0 || r.Profile == nil || r.Baseline == nil {
		t.Fatalf("exit %d, profile %v, baseline %v", code, r.Profile, r.Baseline)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "the profile spans the baseline's run") {
			return
		}
	}
	t.Errorf("-compare -rounds 1 -trace: notes %q, want one saying the profile spans the baseline's run", r.Notes)
}
