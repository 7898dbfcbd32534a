package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
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

// failingRawSetup makes the driver's baseline of the workload faulty fail
// to set up its at-th lane over the test (1 for its first), as a device
// that does not take the baseline's buffers or kernel would; the lanes
// before it set up.
func failingRawSetup(t *testing.T, at int64) {
	t.Helper()
	withFaulty(t, 0) // rig's kernel never faults
	setUp := rawLanes["faulty"]
	var calls atomic.Int64
	rawLanes["faulty"] = func(r *rawDev, size int64) (*device.Submission, int64, error) {
		if calls.Add(1) == at {
			return nil, 0, errors.New("the baseline's buffers do not fit")
		}
		return setUp(r, size)
	}
}

// TestCompareBaselineDoesNotStart: a baseline that does not set up, before
// the run, in its first round or in a later one, fails the run as rig's
// devices do: the run exits 1, with a message that names the baseline and
// its error, and no ratio; the rounds that ran are reported.
func TestCompareBaselineDoesNotStart(t *testing.T) {
	const cause = "the baseline's buffers do not fit"
	args := []string{"-device", "host", "-workload", "faulty", "-n", "200", "-c", "1", "-compare", "-baseline", "driver", "-timeout", "2s"}

	t.Run("first round", func(t *testing.T) {
		// An exclusive driver opens the baseline's devices in its
		// first round, after rig's closed.
		exclusiveHost(t)
		failingRawSetup(t, 1)
		code, r := runReport(t, append(args, "-rounds", "1")...)
		if code != 1 {
			t.Errorf("exit %d where the baseline's first round did not start, want 1", code)
		}
		if r.Rig.Errors != 0 || r.Rig.Submissions != 200 {
			t.Errorf("rig %+v: want its round reported in full", r.Rig)
		}
		if b := r.Baseline; b == nil || b.Name != rawName || b.Errors == 0 ||
			!strings.Contains(b.FirstError, "starting the baseline's round 1") || !strings.Contains(b.FirstError, cause) {
			t.Errorf("baseline %+v, note %q: want the baseline's run with its error", b, r.BaselineNote)
		}
		if r.Ratio != nil || !strings.Contains(r.BaselineNote, "no ratio: the baseline's run met errors") {
			t.Errorf("ratio %+v, note %q", r.Ratio, r.BaselineNote)
		}

		// The text names the baseline and its error.
		failingRawSetup(t, 1)
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append(args, "-rounds", "1"), &out, &errOut); code != 1 {
			t.Errorf("text: exit %d, want 1", code)
		}
		if s := out.String(); !strings.Contains(s, "\n"+rawName+": ") || !strings.Contains(s, "errors 1, the first: starting the baseline's round 1: ") ||
			!strings.Contains(s, cause) {
			t.Errorf("text report:\n%s", s)
		}
	})

	t.Run("later round", func(t *testing.T) {
		exclusiveHost(t)
		failingRawSetup(t, 2)
		code, r := runReport(t, append(args, "-rounds", "2")...)
		if code != 1 {
			t.Errorf("exit %d where the baseline's second round did not start, want 1", code)
		}
		if b := r.Baseline; b == nil || b.Submissions != 100 || b.Errors != 1 ||
			!strings.Contains(b.FirstError, "starting the baseline's round 2") || !strings.Contains(b.FirstError, cause) {
			t.Errorf("baseline %+v: want its first round and the second's error", b)
		}
		if r.Ratio != nil || !strings.Contains(r.BaselineNote, "rig ran 2 and the baseline 1 of 2 alternating rounds") {
			t.Errorf("ratio %+v, note %q", r.Ratio, r.BaselineNote)
		}
	})

	t.Run("before the run", func(t *testing.T) {
		// A driver that opens a device twice opens the baseline's
		// before the run, beside rig's.
		failingRawSetup(t, 1)
		var out, errOut bytes.Buffer
		code := run(context.Background(), append(args, "-rounds", "1", "-json"), &out, &errOut)
		if code != 1 {
			t.Errorf("exit %d where the baseline did not set up, want 1", code)
		}
		if s := errOut.String(); !strings.Contains(s, "-compare: "+rawName+" did not open: ") || !strings.Contains(s, cause) {
			t.Errorf("stderr %q: want the baseline and its error", s)
		}
		if out.Len() != 0 {
			t.Errorf("a report of a run that did not start:\n%s", out.String())
		}
	})
}
