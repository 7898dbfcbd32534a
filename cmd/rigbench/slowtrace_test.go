package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlowTrace: -slowtrace writes the flight recorder's window at the
// first submission slower than -slow, and says that nothing was written
// where none was.
func TestSlowTrace(t *testing.T) {
	for _, c := range []struct {
		slow    string
		caught  bool
		message string
	}{
		{"1ns", true, "the trace of the moments before it is in"},
		{"1h", false, "no submission was slower than 1h0m0s"},
	} {
		t.Run(c.slow, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "slow.trace")
			var out, errOut bytes.Buffer
			args := []string{"-device", "host", "-c", "4", "-depth", "1", "-n", "2000", "-slowtrace", file, "-slow", c.slow}
			if code := run(context.Background(), args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.message) {
				t.Errorf("stderr %q does not say %q", errOut.String(), c.message)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			// An execution trace begins with its header, "go 1.N trace".
			if got := bytes.HasPrefix(b, []byte("go 1.")); got != c.caught {
				t.Errorf("the file holds a trace: %v (%d bytes), want %v", got, len(b), c.caught)
			}
		})
	}
}

// TestSlowFlags: -slow needs -slowtrace and a positive duration.
func TestSlowFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-slow", "5ms"},
		{"-slowtrace", "f", "-slow", "0s"},
		{"-slowtrace", "f", "-slow", "-1ms"},
	} {
		if _, err := parseFlags(args, nil); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
