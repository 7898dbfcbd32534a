package rig

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rig-go/rig/device"
)

// wakingFake is the fake with deferred wake-ups (device.Waker): it records
// when DeferWake came, each Wake, and whether the submit lock was free.
type wakingFake struct {
	*fake
	dev        atomic.Pointer[Device]
	deferredAt atomic.Int64 // submissions before DeferWake; -1 until then
	wakes      atomic.Int64
	lockHeld   atomic.Int64 // Wakes that found the submit lock held
	early      atomic.Int64 // Wakes that came before any Submit
}

func (w *wakingFake) DeferWake() { w.deferredAt.Store(int64(w.count())) }

func (w *wakingFake) Wake() {
	w.wakes.Add(1)
	if w.count() == 0 {
		w.early.Add(1)
	}
	if d := w.dev.Load(); d != nil {
		if !d.mu.TryLock() {
			w.lockHeld.Add(1)
			return
		}
		d.mu.Unlock()
	}
}

func (w *wakingFake) opener(name string) device.Opener {
	return device.Opener{Name: name, Make: func(word *uint64) (device.Driver, error) {
		w.facts.Word = word
		return w, nil
	}}
}

// TestWaker checks the deferred wake-ups: DeferWake once, before any
// submission; a Wake after each Submit, with the submit lock released; and
// none from a submission refused before its Submit.
func TestWaker(t *testing.T) {
	w := &wakingFake{fake: newFake()}
	w.deferredAt.Store(-1)
	d, err := Open(context.Background(), w.opener("waker"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(); <-d.Done() }()
	w.dev.Store(d)
	if got := w.deferredAt.Load(); got != 0 {
		t.Fatalf("DeferWake came after %d submissions (-1: never)", got)
	}
	s := empty(t, d)
	const n = 100
	for i := 0; i < n; i++ {
		submit(t, s)
	}
	if got := w.wakes.Load(); got != n {
		t.Errorf("%d Wakes for %d submissions", got, n)
	}
	if w.lockHeld.Load() != 0 || w.early.Load() != 0 {
		t.Errorf("%d Wakes with the submit lock held, %d before any Submit", w.lockHeld.Load(), w.early.Load())
	}
	// A refusal answers before Submit: no Wake.
	w.mu.Lock()
	w.rooms = []device.RoomAnswer{{Kind: device.RoomNever, Part: -1, Reason: "no"}}
	w.mu.Unlock()
	if _, err := s.Take().Submit(context.Background()); err == nil {
		t.Fatal("the refused submission answered no error")
	}
	if got := w.wakes.Load(); got != n {
		t.Errorf("%d Wakes after a refusal, want %d", got, n)
	}
	// Many submitters: a Wake per submission, every value reached.
	w.dev.Store(nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := s.Take().Submit(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := w.wakes.Load(); got != n+400 {
		t.Errorf("%d Wakes for %d submissions", got, n+400)
	}
	if err := d.Last().Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
