package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startCPUProfile starts a CPU profile into the file name (-cpuprofile),
// and returns what ends it and closes the file, with the first error of
// its writes or close.
func startCPUProfile(name string) (stop func() error, err error) {
	return startInto("-cpuprofile", name, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// memProfileRate is the sampling of -memprofile: an allocation in 4 KiB
// on average, where Go's default samples one in 512 KiB and misses the
// few small allocations a submission may make.
const memProfileRate = 4096

// startMemProfile samples the process's allocations from now on, and
// returns what writes them into the file name (-memprofile; go tool
// pprof reads it, -sample_index=alloc_objects counts them) and closes it,
// with the first error of the profile's writes or close.
func startMemProfile(name string) (stop func() error, err error) {
	f, err := createOut("-memprofile", name)
	if err != nil {
		return nil, err
	}
	runtime.MemProfileRate = memProfileRate
	return func() error {
		runtime.GC() // the profile holds the allocations up to the last collection
		werr := pprof.Lookup("allocs").WriteTo(f, 0)
		if err := f.close(); err != nil {
			return err
		}
		if werr != nil {
			return f.failed(werr)
		}
		return nil
	}, nil
}

// startGoTrace starts a Go execution trace into the file name (-gotrace),
// and returns what ends it and closes the file, with the first error of
// its writes or close.
func startGoTrace(name string) (stop func() error, err error) {
	return startInto("-gotrace", name, trace.Start, trace.Stop)
}

// startInto creates the file name for flag's recording, starts it into
// the file, and returns what stops it and closes the file. The recorders
// drop the errors of their writes, which the file keeps for close.
func startInto(flag, name string, start func(io.Writer) error, end func()) (stop func() error, err error) {
	f, err := createOut(flag, name)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		_ = f.close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error {
		end()
		return f.close()
	}, nil
}
