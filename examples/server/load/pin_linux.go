package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// startCPUs is the processors this process could run on as it started:
// what pinProcess("", 0) returns to.
var startCPUs, cpusErr = func() (unix.CPUSet, error) {
	var s unix.CPUSet
	err := unix.SchedGetaffinity(0, &s)
	return s, err
}()

// pinProcess makes every thread of the process, and so those it starts
// after, run on the processors of list that it could run on as it started
// ("": all of those), and sets GOMAXPROCS to procs, or where procs is 0 to
// the count of the processors it runs on (GOMAXPROCS as the process
// started for ""). A list that names none of those processors is an
// error.
func pinProcess(list string, procs int) error {
	if cpusErr != nil {
		return fmt.Errorf("reading the process's processors: %w", cpusErr)
	}
	set, n := startCPUs, startProcs
	if list != "" {
		cpus, err := parseCPUs(list)
		if err != nil {
			return err
		}
		// As taskset does, the list's processors that the process may
		// not run on (absent, offline, outside its cpuset) are left out:
		// the kernel would leave them out of the mask it keeps.
		set.Zero()
		for _, c := range cpus {
			if startCPUs.IsSet(c) {
				set.Set(c)
			}
		}
		if set.Count() == 0 {
			return fmt.Errorf("running on processors %q: the process may run on none of them", list)
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
