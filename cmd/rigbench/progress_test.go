package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is a bytes.Buffer safe for the progress goroutine's writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// -compare's rounds share one live count for rig's side: the progress
// line of a later round takes its rate from the count as the round
// began, not from 0, which would divide every submission of the rounds
// before by the first quarter second.
func TestProgressRateOfALaterRound(t *testing.T) {
	lv := &live{}
	lv.done.Store(1_000_000) // rig's first round
	lv.start.Store(time.Now().UnixNano())
	var out syncBuf
	p := &progress{w: &out, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run("rig", lv)
	time.Sleep(progressEvery + progressEvery/2) // one line, of a round that did nothing yet
	p.end()
	if s := out.String(); strings.Contains(s, "M/s") {
		t.Errorf("a round that submitted nothing yet reads as millions a second: %q", s)
	}
}
