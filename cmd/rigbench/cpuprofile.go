package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile starts a CPU profile into the file name (-cpuprofile),
// and returns what ends it and closes the file.
func startCPUProfile(name string) (stop func(), err error) {
	return startInto("-cpuprofile", name, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startGoTrace starts a Go execution trace into the file name (-gotrace),
// and returns what ends it and closes the file.
func startGoTrace(name string) (stop func(), err error) {
	return startInto("-gotrace", name, trace.Start, trace.Stop)
}

// startInto creates the file name for flag's recording, starts it into
// the file, and returns what stops it and closes the file.
func startInto(flag, name string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() {
		end()
		f.Close()
	}, nil
}
