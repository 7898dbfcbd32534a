package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangBound bounds only a hang of the tests below: the load test's exit,
// and the end of the service's process, take a few seconds at most.
const hangBound = 2 * time.Minute

// servingLine is the line of -v that names the service's process once it
// serves.
var servingLine = regexp.MustCompile(`^the service's process (\d+) serves at `)

// levelLine is the line -v writes as the first level starts: a signal
// after it cuts that level short.
var levelLine = regexp.MustCompile(`^1 clients over HTTP: the level starts`)

// startLoad starts the load test (this test binary as the command) on the
// host device with a -duration that outlasts the test, and waits until
// its first level starts. It returns the load test's command, the
// service's process id and the file that holds the load test's standard
// output. The cleanup kills both processes where they still run.
func startLoad(t *testing.T) (*exec.Cmd, int, *os.File) {
	t.Helper()
	return startLoadUntil(t, "raw", nil, levelLine)
}

// startLoadUntil is startLoad with the load generator kind (-client), the
// variables env added to the environment, and the line of standard error
// (the load test's and its service's process's) to wait for.
func startLoadUntil(t *testing.T, kind string, env []string, until *regexp.Regexp) (*exec.Cmd, int, *os.File) {
	t.Helper()
	stdout, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdout.Close() })
	// The service's process writes to the load test's standard error:
	// the test reads it through a pipe of its own, which Wait does not
	// wait on, so that a service's process left running holds no Wait.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-v", "-device", "host", "-client", kind, "-c", "1,2", "-duration", "1h")
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	cmd.Stdout, cmd.Stderr = stdout, w
	err = cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		t.Fatal(err)
	}
	var stderr strings.Builder
	found := make(chan int, 1)
	go func() {
		defer func() { _ = r.Close() }()
		sc := bufio.NewScanner(r)
		served := 0
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				served, _ = strconv.Atoi(m[1])
			}
			if until.MatchString(sc.Text()) && served != 0 {
				select {
				case found <- served:
				default: // sent already
				}
			}
		}
		close(found)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var pid int
	select {
	case p, ok := <-found:
		if !ok {
			t.Fatalf("the load test's standard error ended before the line %q:\n%s", until, stderr.String())
		}
		pid = p
	case <-time.After(hangBound):
		t.Fatalf("the load test wrote no line %q within %v", until, hangBound)
	}
	t.Cleanup(func() {
		if !gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return cmd, pid, stdout
}

// gone returns whether the process pid no longer runs: /proc has no
// entry for it, or it is a zombie (its parent, PID 1 here where the load
// test was killed, has not reaped it yet).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}

// waitGone waits until the process pid no longer runs, and fails the
// test where it still runs after hangBound.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(hangBound); !gone(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("the service's process %d still runs %v after %s", pid, hangBound, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExit waits for cmd's exit and returns Wait's error; it fails the
// test where cmd has not exited within hangBound.
func waitExit(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	return waitExitWithin(t, cmd, hangBound)
}

// waitExitWithin is waitExit with the bound d.
func waitExitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		t.Fatalf("the load test did not exit within %v of the signal", d)
		return nil
	}
}

// TestSIGTERMStopsService sends the load test SIGTERM mid-level, as kill,
// timeout(1) and service managers stop a command, and wants it to stop
// its service's process and wait for it, to print what it measured
// marked as interrupted, and to exit 143; and the same of SIGINT, which
// Ctrl-C sends, with exit 130. The load test ended at once, with no
// report, and left its service's process running, holding its device
// and its port, under PID 1.
func TestSIGTERMStopsService(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGINT, "SIGINT", 130}} {
		t.Run(c.name, func(t *testing.T) {
			cmd, pid, stdout := startLoad(t)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			expectInterrupted(t, waitExit(t, cmd), pid, stdout, c.name, c.code)
		})
	}
}

// TestServiceEndsWithLoadTest kills the load test with SIGKILL, which no
// process can catch, and wants its service's process to stop once the
// load test is gone, as the pipe on its standard input ends.
func TestServiceEndsWithLoadTest(t *testing.T) {
	cmd, pid, _ := startLoad(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = waitExit(t, cmd)
	waitGone(t, pid, "the load test was killed")
}

// heldLine is heldMessage, the line of the service's process of
// serveNoAnswers once it holds a request.
var heldLine = regexp.MustCompile("^" + regexp.QuoteMeta(heldMessage) + "$")

// TestSignalCancelsRequestsInFlight sends the load test SIGTERM (and
// SIGINT) while its service's process holds a request that it never
// answers, with each load generator, and wants the load test to cancel
// the request, stop its service's process, report the level cut short
// with no failed requests, and exit 143 (130) at once. The load test
// waited out the request's 30 s timeout first, and counted it failed.
func TestSignalCancelsRequestsInFlight(t *testing.T) {
	for _, c := range []struct {
		kind string
		sig  syscall.Signal
		name string
		code int
	}{{"raw", syscall.SIGTERM, "SIGTERM", 143}, {"vegeta", syscall.SIGINT, "SIGINT", 130}} {
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			cmd, pid, stdout := startLoadUntil(t, c.kind, []string{noAnswerEnv + "=1"}, heldLine)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			out := expectInterrupted(t, waitExitWithin(t, cmd, cutBound), pid, stdout, c.name, c.code)
			if strings.Contains(out, "failed") {
				t.Errorf("the load test's report after %s counts the cancelled request failed:\n%s", c.name, out)
			}
		})
	}
}

// expectInterrupted checks a load test that a signal named name ended
// with err: it exited with code, its process is gone, and its report,
// which it returns, says it was interrupted and its level cut short.
func expectInterrupted(t *testing.T, err error, pid int, stdout *os.File, name string, code int) string {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		t.Errorf("the load test after %s: %v, want exit %d", name, err, code)
	}
	waitGone(t, pid, "the load test exited")
	out, _ := os.ReadFile(stdout.Name())
	if !strings.HasPrefix(string(out), "interrupted by "+name) || !strings.Contains(string(out), "| 1 (interrupted) | ") {
		t.Errorf("the load test's report after %s, want it to say it was interrupted and the level cut short:\n%s", name, out)
	}
	return string(out)
}
