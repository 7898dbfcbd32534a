package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMain runs the command itself where the test runs its binary as the
// command (runMainEnv set), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
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
