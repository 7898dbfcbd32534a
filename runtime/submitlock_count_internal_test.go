package rig

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSubmitLockWakesWhileAnotherParks checks that an Unlock wakes the
// parked waiter whose turn it gives while another waiter is in the middle
// of its park: tickets 0 (held), 1, 2 (parked, near) and 3 (parking, not
// near, stopped between the two steps of its park). The Unlock of 0 wakes
// 3 as the line comes within ahead of it; the Unlock of 1 must then wake
// 2, whose turn it gives. Where the lock counted a waiter only after it
// stored its slot, the wake-up of 3 took back a count that 3 had not yet
// added, the count read zero with 2 parked, and the Unlock of 1 woke no
// one: 2 and 3 parked for good.
func TestSubmitLockWakesWhileAnotherParks(t *testing.T) {
	var l submitLock
	l.init(8, false, nil) // ahead 2
	l.spinFor = time.Microsecond
	if a := l.ahead.Load(); a != 2 {
		t.Fatalf("ahead %d, want 2", a)
	}
	aIn, cDone, bDone, aDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	var order []int // the tickets served, appended inside the lock
	l.parking = func(tk uint64) {
		if tk != 3 {
			return
		}
		once.Do(func() {
			close(aIn)
			<-cDone
		})
	}
	l.Lock()    // ticket 0
	go func() { // ticket 1
		l.Lock()
		order = append(order, 1)
		l.Unlock()
		close(cDone)
	}()
	waitFor(t, func() bool { return l.next.Load() == 2 })
	go func() { // ticket 2
		l.Lock()
		order = append(order, 2)
		l.Unlock()
		close(bDone)
	}()
	waitFor(t, func() bool {
		s := l.slots.Load()
		return l.next.Load() == 3 && s != nil && (*s)[2].Load() != nil
	})
	go func() { // ticket 3
		l.Lock()
		order = append(order, 3)
		l.Unlock()
		close(aDone)
	}()
	<-aIn
	l.Unlock() // serving 1: wakes 1 where parked, and 3
	select {
	case <-bDone:
	case <-time.After(2 * time.Second):
		t.Error("the waiter of ticket 2 was not woken at its turn")
		l.wake(2) // lets the line end
		<-bDone
	}
	<-aDone
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Errorf("served %v, want [1 2 3]", order)
	}
	if n := l.parked.Load(); n != 0 {
		t.Fatalf("%d waiters still counted as parked", n)
	}
}

// waitFor polls cond until it holds, for at most ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
		time.Sleep(50 * time.Microsecond)
	}
}
