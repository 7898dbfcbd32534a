package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile starts a CPU profile into the file name, and returns
// what ends it and closes the file.
func startCPUProfile(name string) (stop func(), err error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// startGoTrace starts a Go execution trace into the file name, and returns
// what ends it and closes the file.
func startGoTrace(name string) (stop func(), err error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("-gotrace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-gotrace: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}
