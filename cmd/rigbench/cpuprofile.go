package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile starts a CPU profile into the file name (-cpuprofile),
// and returns what ends it and closes the file.
func startCPUProfile(name string) (stop func(), err error) {
	return startInto("-cpuprofile", name, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// memProfileRate is the sampling of -memprofile: an allocation in 4 KiB
// on average, where Go's default samples one in 512 KiB and misses the
// few small allocations a submission may make.
const memProfileRate = 4096

// startMemProfile samples the process's allocations from now on, and
// returns what writes them into the file name (-memprofile; go tool
// pprof reads it, -sample_index=alloc_objects counts them) and closes it.
func startMemProfile(name string) (stop func(), err error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("-memprofile: %w", err)
	}
	runtime.MemProfileRate = memProfileRate
	return func() {
		runtime.GC() // the profile holds the allocations up to the last collection
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}, nil
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
