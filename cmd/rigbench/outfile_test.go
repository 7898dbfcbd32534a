package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// failingFile is a file whose writes after the first ok bytes fail, and
// whose Close fails where closeErr is set.
type failingFile struct {
	ok       int
	closeErr error
	writes   int // calls of Write
	closed   bool
}

var errFull = errors.New("no room left")

func (f *failingFile) Write(p []byte) (int, error) {
	f.writes++
	if len(p) > f.ok {
		n := f.ok
		f.ok = 0
		return n, errFull
	}
	f.ok -= len(p)
	return len(p), nil
}

func (f *failingFile) Close() error {
	f.closed = true
	return f.closeErr
}

// TestOutFile: an output file's close returns the first error of its
// writes, or else Close's, naming the flag and the file, and closes the
// file either way; a write after a failed one writes nothing.
func TestOutFile(t *testing.T) {
	errClose := errors.New("close refused")
	for _, tc := range []struct {
		name string
		file failingFile
		want error
	}{
		{"written", failingFile{ok: 100}, nil},
		{"write fails", failingFile{ok: 5}, errFull},
		{"close fails", failingFile{ok: 100, closeErr: errClose}, errClose},
		{"both fail", failingFile{ok: 5, closeErr: errClose}, errFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.file
			f := newOut("-plot", "lat.svg", &w)
			for range 3 {
				f.Write([]byte("<svg>"))
			}
			if tc.want == errFull && w.writes != 2 {
				t.Errorf("%d writes reached the file, want 2: none after the failed one", w.writes)
			}
			err := f.close()
			if !w.closed {
				t.Error("close left the file open")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("close returned %v, want %v", err, tc.want)
			}
			if err != nil && (!strings.Contains(err.Error(), "-plot") || !strings.Contains(err.Error(), "lat.svg")) {
				t.Errorf("the error %q names not the flag and the file", err)
			}
		})
	}
}

// TestRunOutputFails runs rigbench with each output file on /dev/full,
// where every write fails: the run exits 1, naming the flag and the file.
func TestRunOutputFails(t *testing.T) {
	const full = "/dev/full"
	if f, err := os.OpenFile(full, os.O_WRONLY, 0); err != nil {
		t.Skipf("%s does not open for writing here: %v", full, err)
	} else {
		f.Close()
	}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	for _, flags := range [][]string{
		{"-plot", full},
		{"-trace", full},
		{"-cpuprofile", full},
		{"-memprofile", full},
		{"-gotrace", full},
		{"-slowtrace", full, "-slow", "1ns"},
	} {
		t.Run(flags[0], func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"-device", "host", "-c", "2", "-n", "200"}, flags...)
			code := run(context.Background(), args, &out, &errOut)
			if code != 1 {
				t.Errorf("exit %d, want 1\nstderr: %s", code, errOut.String())
			}
			if msg := errOut.String(); !strings.Contains(msg, "rigbench: "+flags[0]+": ") || !strings.Contains(msg, full) {
				t.Errorf("stderr %q names not %s and %s", msg, flags[0], full)
			}
		})
	}
}

// TestRunOutputUncreatable: a -plot or -trace file that cannot be created
// exits 2 before the run, naming the flag, and runs nothing.
func TestRunOutputUncreatable(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no such directory", "out")
	for _, f := range []string{"-plot", "-trace"} {
		t.Run(f, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"-device", "host", "-c", "2", "-n", "200", f, bad}, &out, &errOut)
			if code != 2 {
				t.Errorf("exit %d, want 2\nstderr: %s", code, errOut.String())
			}
			if msg := errOut.String(); !strings.Contains(msg, "rigbench: "+f+": ") || !strings.Contains(msg, bad) {
				t.Errorf("stderr %q names not %s and %s", msg, f, bad)
			}
			if out.Len() != 0 {
				t.Errorf("the run reported %q, want no run", out.String())
			}
		})
	}
}

// TestRunNoRunLeavesNoOutput: a run that ends before it writes its -plot,
// -trace and -slowtrace (a bad output flag, or a level that cannot set up
// its lanes)
// leaves no empty file where there was none, and a file that was there as
// it was.
func TestRunNoRunLeavesNoOutput(t *testing.T) {
	dir := t.TempDir()
	uncreatable := filepath.Join(dir, "no such directory", "cpu.pprof")
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"bad output flag", []string{"-cpuprofile", uncreatable}, 2},
		{"level setup fails", []string{"-workload", "d2d", "-c", "600"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			plot, trace := filepath.Join(dir, "lat.svg"), filepath.Join(dir, "trace.json")
			const kept = "a file of the user's\n"
			if err := os.WriteFile(trace, []byte(kept), 0o666); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(trace)
			defer os.Remove(plot)
			slow := filepath.Join(dir, "slow.trace")
			defer os.Remove(slow)
			var out, errOut bytes.Buffer
			args := append([]string{"-device", "host", "-n", "10", "-plot", plot, "-trace", trace, "-slowtrace", slow}, c.args...)
			if code := run(context.Background(), args, &out, &errOut); code != c.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, c.code, errOut.String())
			}
			if _, err := os.Stat(plot); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("-plot %s: %v after a run that drew nothing, want no file", plot, err)
			}
			if _, err := os.Stat(slow); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("-slowtrace %s: %v after a run that caught nothing, want no file", slow, err)
			}
			if b, err := os.ReadFile(trace); err != nil || string(b) != kept {
				t.Errorf("-trace %s holds %q, %v; want what it held before, %q", trace, b, err, kept)
			}
		})
	}
}
