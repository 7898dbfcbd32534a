//go:build linux

package main

import "golang.org/x/sys/unix"

// nanosleep sleeps ns nanoseconds in the kernel, or less where a signal
// interrupts it.
func nanosleep(ns int64) {
	ts := unix.NsecToTimespec(ns)
	_ = unix.Nanosleep(&ts, nil)
}
