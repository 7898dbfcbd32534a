package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlowTrace: -slowtrace writes the flight recorder's window at the
// first submission slower than -slow, overwriting a file that was there;
// where none was slower, it says so and leaves the path as it found it:
// no file where there was none, and a file that was there as it was.
func TestSlowTrace(t *testing.T) {
	const old = "an earlier file\n"
	for _, c := range []struct {
		name    string
		slow    string
		existed bool
		caught  bool
		message string
	}{
		{"caught", "1ns", false, true, "the trace of the moments before it is in"},
		{"caught over a file", "1ns", true, true, "the trace of the moments before it is in"},
		{"none", "1h", false, false, "no submission was slower than 1h0m0s, so no trace was written (no file is left at %s)"},
		{"none over a file", "1h", true, false, "no submission was slower than 1h0m0s, so no trace was written (%s is as it was)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "slow.trace")
			if c.existed {
				if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			args := []string{"-device", "host", "-c", "4", "-depth", "1", "-n", "2000", "-slowtrace", file, "-slow", c.slow}
			if code := run(context.Background(), args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut.String())
			}
			message := c.message
			if strings.Contains(message, "%s") {
				message = fmt.Sprintf(message, file)
			}
			if !strings.Contains(errOut.String(), message) {
				t.Errorf("stderr %q does not say %q", errOut.String(), message)
			}
			b, err := os.ReadFile(file)
			switch {
			case !c.caught && !c.existed:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("no submission was slow, and %s is there (%d bytes, %v)", file, len(b), err)
				}
				return
			case err != nil:
				t.Fatal(err)
			case !c.caught:
				if string(b) != old {
					t.Errorf("no submission was slow, and the file that was there holds %d bytes: %.40q", len(b), b)
				}
				return
			}
			// An execution trace begins with its header, "go 1.N trace".
			if !bytes.HasPrefix(b, []byte("go 1.")) {
				t.Errorf("the file holds no trace (%d bytes: %.40q)", len(b), b)
			}
		})
	}
}

// TestSlowTraceUnwritable: a -slowtrace path that cannot be written fails
// the run before it measures (exit 2, nothing on stdout), though the file
// is written only at a slow submission.
func TestSlowTraceUnwritable(t *testing.T) {
	dir := t.TempDir()
	for _, file := range []string{
		filepath.Join(dir, "missing", "slow.trace"), // a folder that is not there
		dir, // a folder
	} {
		var out, errOut bytes.Buffer
		args := []string{"-device", "host", "-n", "100", "-slowtrace", file, "-slow", "1h"}
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%s: exit %d, want 2\nstderr: %s", file, code, errOut.String())
		}
		if msg := errOut.String(); !strings.Contains(msg, "rigbench: -slowtrace: ") || !strings.Contains(msg, file) {
			t.Errorf("%s: stderr %q names not -slowtrace and the file", file, msg)
		}
		if out.Len() != 0 {
			t.Errorf("%s: the run reported though -slowtrace cannot be written:\n%s", file, out.String())
		}
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
