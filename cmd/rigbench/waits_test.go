package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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

func TestWaitSpinFlag(t *testing.T) {
	defer func() { waitSpin = -1 }()
	if _, err := parseFlags([]string{"-waitspin", "5us"}, nil); err != nil || waitSpin.Microseconds() != 5 {
		t.Fatalf("-waitspin 5us: %v, waitSpin %v", err, waitSpin)
	}
	if _, err := parseFlags([]string{"-waitspin", "-1s"}, nil); err == nil {
		t.Fatal("-waitspin -1s accepted")
	}
}
