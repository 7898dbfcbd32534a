package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// outFile is a file that rigbench writes its output into, for one flag
// (-plot, -trace, -cpuprofile, -memprofile, -gotrace, -slowtrace). It
// keeps the first error of its writes, which runtime/pprof and
// runtime/trace drop, and close returns it, or Close's own: a full disk or
// a failed write fails the run, naming the flag and the file, rather than
// leaving a short file behind. Its writes may come from another goroutine
// than the one that closes it, as the profiler's and the tracer's do.
type outFile struct {
	flag, name string

	mu  sync.Mutex
	w   io.WriteCloser
	err error // the first write's
}

// createOut creates the file name for flag.
func createOut(flag, name string) (*outFile, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return newOut(flag, name, f), nil
}

// newOut is the output file name for flag, written through w.
func newOut(flag, name string, w io.WriteCloser) *outFile {
	return &outFile{flag: flag, name: name, w: w}
}

// Write writes p into the file. Once a write failed, it writes nothing
// more and returns that write's error.
func (f *outFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(p)
	if err != nil {
		f.err = err
	}
	return n, err
}

// close closes the file, and returns the first error of its writes, or
// else Close's, naming the flag and the file.
func (f *outFile) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.w.Close()
	if f.err != nil {
		err = f.err
	}
	if err == nil {
		return nil
	}
	return f.failed(err)
}

// failed is err, an error of writing the file, with the flag and the
// file's name. An error of the os package names the file already.
func (f *outFile) failed(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == f.name {
		return fmt.Errorf("%s: %w", f.flag, err)
	}
	return fmt.Errorf("%s: writing %s: %w", f.flag, f.name, err)
}

// writeFile writes the file name for flag with write.
func writeFile(flag, name string, write func(io.Writer) error) error {
	f, err := createOut(flag, name)
	if err != nil {
		return err
	}
	werr := write(f)
	if err := f.close(); err != nil {
		return err
	}
	if werr != nil {
		return f.failed(werr)
	}
	return nil
}
