package rig

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/mailbox"
)

// TestCancelRacesHold: a waiter whose context ends as the supervisor takes
// its registration leaves nothing counted, whichever of the two comes
// first. The waiting goroutine's cancel and the supervisor's hold run at
// once, on two goroutines, many times over.
func TestCancelRacesHold(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the race needs two processors")
	}
	const rounds = 50000
	s := &supervisor{box: mailbox.New[message](mailboxSize)}
	w := &waiter{ch: make(chan error, 1)}
	var ready, held atomic.Int64 // the round each goroutine reached
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(1); i <= rounds; i++ {
			for ready.Load() != i {
			}
			s.hold(w)
			held.Store(i)
		}
	}()
	leaks := 0
	for i := int64(1); i <= rounds; i++ {
		w.state.Store(waitSent)
		ready.Store(i)
		// A delay that varies from round to round, so that the hold
		// lands at every place of the cancel in some round.
		for range i % 32 {
			spinSink.Add(1)
		}
		s.cancel(w)
		for held.Load() != i {
		}
		<-s.box.Receive()
		if s.count.Load() != 0 {
			leaks++
			s.count.Store(0)
		}
	}
	wg.Wait()
	if leaks > 0 {
		t.Fatalf("%d of %d cancellations left their waiter counted in Waiting", leaks, rounds)
	}
}

var spinSink atomic.Int64
