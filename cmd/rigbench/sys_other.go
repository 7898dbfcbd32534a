//go:build !linux

package main

import "time"

// nanosleep sleeps ns nanoseconds.
func nanosleep(ns int64) { time.Sleep(time.Duration(ns)) }
