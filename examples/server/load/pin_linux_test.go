package main

import (
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPinProcess runs the process on its first processor, checks each of
// its threads and GOMAXPROCS, and returns it to where it started.
func TestPinProcess(t *testing.T) {
	first := -1
	for c := range 1024 {
		if startCPUs.IsSet(c) {
			first = c
			break
		}
	}
	if first < 0 {
		t.Skip("no processor to run on")
	}
	defer func() {
		if err := pinProcess("", 0); err != nil {
			t.Fatal(err)
		}
		if got := runtime.GOMAXPROCS(0); got != startProcs {
			t.Errorf("GOMAXPROCS %d after returning, want %d", got, startProcs)
		}
	}()
	list := strconv.Itoa(first)
	if err := pinProcess(list, 0); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d on one processor", got)
	}
	var one unix.CPUSet
	one.Set(first)
	if all, err := setThreads(one); err != nil || !all {
		t.Errorf("a thread of the process runs elsewhere than processor %d (%v)", first, err)
	}
	if err := pinProcess(list, 3); err != nil || runtime.GOMAXPROCS(0) != 3 {
		t.Errorf("GOMAXPROCS %d with procs 3 (%v)", runtime.GOMAXPROCS(0), err)
	}
}
