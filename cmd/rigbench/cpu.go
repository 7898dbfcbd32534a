//go:build unix

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime is the CPU time the process has used, user and system together,
// from getrusage; 0 where the system does not answer.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
