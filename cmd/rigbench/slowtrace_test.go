package main

import (
	"bytes"
	"context"
	"errors"
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

// TestSlowFlags: -slow needs -slowtrace and a positive duration of at
// most maxSlow: the recorder's window of twice -slow and a second
// overflowed a time.Duration past about 146 years, and asked the recorder
// for a window of negative age.
func TestSlowFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-slow", "5ms"},
		{"-slowtrace", "f", "-slow", "0s"},
		{"-slowtrace", "f", "-slow", "-1ms"},
		{"-slowtrace", "f", "-slow", "1h0m0.000000001s"},
		{"-slowtrace", "f", "-slow", "1500000h"},
		{"-slowtrace", "f", "-slow", "2562047h"},
	} {
		_, err := parseFlags(args, nil)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "-slow") {
			t.Errorf("%q: %v, want a usage error naming -slow", args, err)
		}
	}
	if c, err := parseFlags([]string{"-slowtrace", "f", "-slow", maxSlow.String()}, nil); err != nil || c.Slow != maxSlow {
		t.Errorf("-slow %v: %v", maxSlow, err)
	}
}
