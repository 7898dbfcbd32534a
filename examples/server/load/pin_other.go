//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// pinProcess sets GOMAXPROCS to procs (0: as the process started); a list
// of processors is refused, since only Linux runs a process on chosen
// ones here.
func pinProcess(list string, procs int) error {
	if list != "" {
		return errors.New("-server-cpus and -client-cpus run on Linux only")
	}
	if procs == 0 {
		procs = startProcs
	}
	runtime.GOMAXPROCS(procs)
	return nil
}
