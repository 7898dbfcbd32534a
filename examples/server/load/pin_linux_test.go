package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
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

// A list that names processors the process may not run on runs it on
// those of the list it may, as taskset does, with GOMAXPROCS their count;
// a list of none of them is an error that says so.
func TestPinProcessAbsentProcessors(t *testing.T) {
	hi := -1
	for c := range maxCPUs {
		if startCPUs.IsSet(c) {
			hi = c
		}
	}
	if hi < 0 || hi+2 >= maxCPUs {
		t.Skip("no processor number past the process's")
	}
	defer func() {
		if err := pinProcess("", 0); err != nil {
			t.Fatal(err)
		}
	}()
	list := fmt.Sprintf("%d-%d", hi, hi+1)
	if err := pinProcess(list, 0); err != nil {
		t.Fatalf("pinProcess(%q): %v", list, err)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d on the one processor of %q the process may run on", got, list)
	}
	var one unix.CPUSet
	one.Set(hi)
	if all, err := setThreads(one); err != nil || !all {
		t.Errorf("a thread of the process runs elsewhere than processor %d (%v)", hi, err)
	}
	none := strconv.Itoa(hi + 1)
	if err := pinProcess(none, 0); err == nil || !strings.Contains(err.Error(), "none of them") {
		t.Errorf("pinProcess(%q) on a processor the process may not run on: %v", none, err)
	}
}
