package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain runs the command itself where the test runs its binary as the
// command (runMainEnv set), or a service's process that never answers
// (serveNoAnswers) where that command starts one with noAnswerEnv set,
// and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		if os.Getenv(noAnswerEnv) == "1" && slices.Contains(os.Args[1:], "-serve") {
			serveNoAnswers()
			os.Exit(0)
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMainEnv, set to 1, makes the test binary the command.
const runMainEnv = "LOAD_TEST_RUN_MAIN"

// TestDurationFlag refuses a -duration that bounds no level: vegeta's
// attacker reads 0 (and less) as no bound, so that such a level would
// never end.
func TestDurationFlag(t *testing.T) {
	for _, d := range []string{"0", "-1s"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-client", "raw", "-device", "host", "-c", "1", "-duration", d)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("-duration %s: %v, want exit 2\n%s", d, err, out)
		}
	}
}

// TestFlagsRefused refuses flag values that the load test would
// otherwise ignore or fail on mid-run, with an error that names the flag
// and exit 2: a negative -faults lost the device no time and said
// nothing; a -rate above 1e9 a second is an interval of 0 ns between
// sends, which vegeta's pacer divides by; a negative GOMAXPROCS was
// ignored, and one of a million held the process in the runtime for
// over a minute.
func TestFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"-faults", []string{"-faults", "-1"}},
		{"-rate", []string{"-rate", "1000000001"}},
		{"-rate", []string{"-rate", "-5"}},
		{"-server-procs", []string{"-server-procs", "-1"}},
		{"-server-procs", []string{"-server-procs", "1025"}},
		{"-client-procs", []string{"-client-procs", "-2"}},
		{"-client-procs", []string{"-client-procs", "1048576"}},
		{"-c", []string{"-c", "10001"}},
		{"-c", []string{"-c", "1,100000,4"}},
		{"-c", []string{"-c", "16,4,16"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		args := append([]string{"-device", "host", "-c", "1", "-duration", "1ms"}, c.args...)
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		// A run that went ahead may leave its service's process holding
		// the output once the context killed it.
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), c.flag+" ") {
			t.Errorf("%q: %v, want exit 2 and an error that names %s\n%s", c.args, err, c.flag, out)
		}
	}
}

// TestArgsRefused refuses what the load test would otherwise ignore: an
// argument after the flags (-c 1 16 measured one level and dropped the
// 16), and, in the service's process (-serve), a flag the checks refuse,
// which that process did not check before it served.
func TestArgsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // what the error begins with
	}{
		{[]string{"-c", "1", "16"}, `unexpected arguments "16"`},
		{[]string{"-c", "1", "16", "64"}, `unexpected arguments "16" "64"`},
		{[]string{"-serve", "127.0.0.1:0", "-c", "1", "16"}, `unexpected arguments "16"`},
		{[]string{"-serve", "127.0.0.1:0", "-server-gogc", "-1"}, "-server-gogc "},
		{[]string{"-serve", "127.0.0.1:0", "-server-procs", "-1"}, "-server-procs "},
		{[]string{"-serve", "127.0.0.1:0", "-server-cpus", "x"}, "processors "},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		args := append([]string{"-device", "host", "-duration", "1ms"}, c.args...)
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), c.want) {
			t.Errorf("%q: %v, want exit 2 and an error that begins %s\n%s", c.args, err, c.want, out)
		}
	}
}
