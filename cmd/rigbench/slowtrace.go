package main

import (
	"context"
	"fmt"
	"runtime/trace"
	"sync/atomic"
	"time"
)

// slowTrace keeps a flight recorder of the run's Go execution trace and,
// at the first submission slower than bound, writes the recorder's window
// into a file (-slowtrace, -slow): the goroutines, processors and wake-ups
// of the moments around a rare tail, which a trace of the whole run would
// bury or could not hold. The file is written at that submission only:
// where none was slower, no file is left where there was none (run removes
// the empty one its check made), and one that was there stays as it was.
// The lanes' goroutines call see; run calls stop once the run ended.
type slowTrace struct {
	bound time.Duration
	file  string
	// existed: the file was there before the run, and stays as it was
	// where no submission is slow.
	existed bool
	fr      *trace.FlightRecorder
	fired   atomic.Bool
	done    chan struct{} // closed once the window is written, after fired
	what    string        // the submission caught; written before done closes
	err     error         // the write's, naming the file; written before done closes
}

// slowTraces is the run's -slowtrace, nil without one.
var slowTraces *slowTrace

// startSlowTrace starts the flight recorder for -slowtrace file and -slow
// bound. Its window reaches back at least twice the bound and a second.
// run has checked that the file can be written, and removes it at the end
// where it made it and nothing was written; existed says that the file was
// there before the run, which stays as it was where no submission is slow.
func startSlowTrace(file string, bound time.Duration, existed bool) (*slowTrace, error) {
	s := &slowTrace{bound: bound, file: file, existed: existed, done: make(chan struct{}),
		fr: trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 2*bound + time.Second, MaxBytes: 256 << 20})}
	if err := s.fr.Start(); err != nil {
		return nil, fmt.Errorf("-slowtrace: %w", err)
	}
	return s, nil
}

// see looks at a submission to device that was sent at start and whose
// wait returned at end (mono's clock), and writes the window where it is
// the first one slower than the bound. Any lane's goroutine may call it.
func (s *slowTrace) see(device string, start, end int64) {
	lat := time.Duration(end - start)
	if lat <= s.bound || !s.fired.CompareAndSwap(false, true) {
		return
	}
	s.what = fmt.Sprintf("a submission to %s took %v, from %v to %v after rigbench started", device, lat, time.Duration(start), time.Duration(end))
	// The log marks the moment in the trace (go tool trace lists it
	// under user-defined logs).
	trace.Log(context.Background(), "rigbench slow submission", s.what)
	go func() {
		defer close(s.done)
		f, err := createOut("-slowtrace", s.file)
		if err != nil {
			s.err = err
			return
		}
		_, werr := s.fr.WriteTo(f)
		if s.err = f.close(); s.err == nil && werr != nil {
			s.err = f.failed(werr)
		}
	}()
}

// stop ends the recorder and returns what it caught: the line to print,
// and the write's error.
func (s *slowTrace) stop() (string, error) {
	if !s.fired.Load() {
		s.fr.Stop()
		if s.existed {
			return fmt.Sprintf("-slowtrace: no submission was slower than %v, so no trace was written (%s is as it was)", s.bound, s.file), nil
		}
		return fmt.Sprintf("-slowtrace: no submission was slower than %v, so no trace was written (no file is left at %s)", s.bound, s.file), nil
	}
	<-s.done
	s.fr.Stop()
	if s.err != nil {
		return "", s.err
	}
	return fmt.Sprintf("-slowtrace: %s; the trace of the moments before it is in %s (go tool trace reads it)", s.what, s.file), nil
}
