package main

import (
	"context"
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
