//go:build unix

package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignalContextEndsAtSIGTERM sends the process SIGTERM, as timeout(1),
// kill and service managers stop a command, and wants the run's context to
// end, so that the run reports what it measured, rather than the process
// to end with no report.
func TestSignalContextEndsAtSIGTERM(t *testing.T) {
	ctx, stop := signalContext()
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("SIGTERM did not end the run's context")
	}
}
