package main

import (
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
)

// TestStartProfileFullDisk profiles into a file whose writes fail
// (/dev/full): stopping the profile returns the failure, naming the file,
// where the profiler itself drops it.
func TestStartProfileFullDisk(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full to write to: %v", err)
	}
	_ = f.Close()
	stop, err := startProfile("/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	// Some work to sample; the profile's header is written at the stop.
	for i := 0; i < 1e6; i++ {
		_ = strings.Repeat("x", i%7)
	}
	err = stop()
	if err == nil || !strings.Contains(err.Error(), "/dev/full") {
		t.Fatalf("stopping a profile into /dev/full: %v, want the write's failure naming the file", err)
	}
	// The profiler is free again.
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatalf("a profile after the failed one: %v", err)
	}
	pprof.StopCPUProfile()
}
