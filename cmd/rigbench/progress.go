package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progress draws a live line on a terminal while a run goes on: the time,
// the submissions done and the rate over the last interval. It draws
// nothing where w is not a terminal, and erases its line when it stops, so
// that the report is all that remains.
type progress struct {
	w    io.Writer
	stop chan struct{}
	done chan struct{}
}

// progressEvery is how often the line is redrawn.
const progressEvery = 250 * time.Millisecond

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress starts drawing the progress of the run lv on w, labelled
// name, where w is a terminal; it returns nil otherwise.
func startProgress(w io.Writer, name string, lv *live) *progress {
	if !isTerminal(w) {
		return nil
	}
	p := &progress{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(name, lv)
	return p
}

func (p *progress) run(name string, lv *live) {
	defer close(p.done)
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	last, lastAt := lv.done.Load(), time.Now() // the rounds before, where -compare shares lv
	for {
		select {
		case <-p.stop:
			fmt.Fprint(p.w, "\r\x1b[K")
			return
		case now := <-t.C:
			n := lv.done.Load()
			rate := float64(n-last) / now.Sub(lastAt).Seconds()
			last, lastAt = n, now
			var elapsed time.Duration
			if s := lv.start.Load(); s != 0 {
				elapsed = now.Sub(time.Unix(0, s)).Truncate(100 * time.Millisecond)
			}
			fmt.Fprintf(p.w, "\r\x1b[K%s: %v, %s done, %s/s (Ctrl-C stops and reports)", name, elapsed, count(float64(n)), rateText(rate))
		}
	}
}

// end stops drawing and erases the line. A nil progress does nothing.
func (p *progress) end() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}
