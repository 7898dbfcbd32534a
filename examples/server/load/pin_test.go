package main

import (
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUs(t *testing.T) {
	for _, c := range []struct {
		list string
		want []int
		bad  bool
	}{
		{"", nil, false},
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"1,4-5,9", []int{1, 4, 5, 9}, false},
		{"3-3", []int{3}, false},
		{"5-2", nil, true},
		{"-1", nil, true},
		{"a", nil, true},
		{"1,", nil, true},
		{"0-", nil, true},
		{"1024", nil, true},
		{"0-99999999999999999999", nil, true},
	} {
		s, err := parseCPUs(c.list)
		if (err != nil) != c.bad {
			t.Errorf("parseCPUs(%q): %v", c.list, err)
			continue
		}
		if c.bad {
			continue
		}
		var want unix.CPUSet
		for _, p := range c.want {
			want.Set(p)
		}
		if s != want {
			t.Errorf("parseCPUs(%q): %d processors, want %v", c.list, s.Count(), c.want)
		}
	}
}

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
