package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The processors this process could run on as it started, and its
// GOMAXPROCS then: what pinProcess("", 0) returns to.
var (
	startProcs         = runtime.GOMAXPROCS(0)
	startCPUs, cpusErr = func() (unix.CPUSet, error) {
		var s unix.CPUSet
		err := unix.SchedGetaffinity(0, &s)
		return s, err
	}()
)

// parseCPUs parses a list of processors such as "0-7,16" (as taskset -c
// and cpuset.cpus write them); "" is the empty set.
func parseCPUs(list string) (unix.CPUSet, error) {
	var s unix.CPUSet
	if list == "" {
		return s, nil
	}
	for _, f := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= len(s)*64 {
			return s, fmt.Errorf("processors %q: %q is not a processor or a range lo-hi of them (0 to %d)", list, f, len(s)*64-1)
		}
		for c := a; c <= b; c++ {
			s.Set(c)
		}
	}
	return s, nil
}

// pinProcess makes every thread of the process, and so those it starts
// after, run on the processors of list ("": those it could run on as it
// started), and sets GOMAXPROCS to procs, or where procs is 0 to the
// list's count (GOMAXPROCS as the process started for "").
func pinProcess(list string, procs int) error {
	if cpusErr != nil {
		return fmt.Errorf("reading the process's processors: %w", cpusErr)
	}
	set, n := startCPUs, startProcs
	if list != "" {
		var err error
		if set, err = parseCPUs(list); err != nil {
			return err
		}
		n = set.Count()
	}
	if procs > 0 {
		n = procs
	}
	// A thread started while the threads are set may copy the processors
	// of one not yet set: set them until a pass finds every one set.
	for range 10 {
		all, err := setThreads(set)
		if err != nil {
			return fmt.Errorf("running on processors %q: %w", list, err)
		}
		if all {
			runtime.GOMAXPROCS(n)
			return nil
		}
	}
	return fmt.Errorf("running on processors %q: the process kept starting threads", list)
}

// setThreads sets every thread of the process to run on set, and reports
// whether each already did.
func setThreads(set unix.CPUSet) (bool, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, err
	}
	all := true
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err == nil && cur == set {
			continue
		}
		all = false
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return false, err
		}
	}
	return all, nil
}

// cpusNote says which processors the two processes ran on, and the
// service's GOGC, where flags chose them.
func cpusNote(o options) string {
	gc := ""
	if o.serverGOGC > 0 {
		gc = fmt.Sprintf("; the service's GOGC %d", o.serverGOGC)
	}
	if o.serverCPUs == "" && o.clientCPUs == "" {
		return gc
	}
	or := func(l string) string {
		if l == "" {
			return "any"
		}
		return l
	}
	return fmt.Sprintf("; processors: server %s, client %s%s", or(o.serverCPUs), or(o.clientCPUs), gc)
}
