package main

import (
	"strings"
	"testing"
)

// TestCompareBaselineErrors loses the device of the driver's baseline in
// its round, after rig's round met no error: the run exits 1, and gives
// no ratio of rig's figures over those of a run that failed.
func TestCompareBaselineErrors(t *testing.T) {
	// Rig's round makes calls 1 to 200 of the kernel, and the baseline's
	// round the next.
	withFaulty(t, 250)
	code, r := runReport(t, "-device", "host", "-workload", "faulty", "-n", "200", "-c", "2",
		"-compare", "-baseline", "driver", "-rounds", "1", "-timeout", "200ms")
	if r.Rig.Errors != 0 || r.Rig.Submissions != 200 {
		t.Fatalf("rig's round met errors: %+v", r.Rig)
	}
	if r.Baseline == nil || r.Baseline.Errors == 0 {
		t.Fatalf("the baseline's round met no error: %+v, note %q", r.Baseline, r.BaselineNote)
	}
	if code != 1 {
		t.Errorf("exit %d where the baseline's run met errors, want 1", code)
	}
	if r.Ratio != nil || !strings.Contains(r.BaselineNote, "errors") {
		t.Errorf("ratio %+v, note %q: want no ratio over a run that met errors, and a note saying why", r.Ratio, r.BaselineNote)
	}
}

// TestCompareRigErrorsAfterBaseline loses rig's device in its second
// round, after the baseline's first: the run exits 1 and gives no ratio,
// though the baseline's round met no error.
func TestCompareRigErrorsAfterBaseline(t *testing.T) {
	// Rounds of 200: rig's first makes calls 1 to 200, the baseline's 201
	// to 400, and rig's second faults at 450.
	withFaulty(t, 450)
	code, r := runReport(t, "-device", "host", "-workload", "faulty", "-n", "1000", "-c", "2",
		"-compare", "-baseline", "driver", "-rounds", "5", "-timeout", "200ms")
	if r.Rig.Errors == 0 || r.Baseline == nil || r.Baseline.Errors != 0 {
		t.Fatalf("rig %+v, baseline %+v: want rig's run alone to meet errors", r.Rig, r.Baseline)
	}
	if code != 1 || r.Ratio != nil || !strings.Contains(r.BaselineNote, "no ratio: rig's run met errors") {
		t.Errorf("exit %d, ratio %+v, note %q: want 1, no ratio, and a note saying why", code, r.Ratio, r.BaselineNote)
	}
}
