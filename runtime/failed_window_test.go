package rig

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// lookWhileFailing is what goroutines that use a point while the driver
// fails its value (the value already in the word, the loss not yet
// recorded) learn: whether it reads as reached, and what a wait on it
// and a submission of another device that reads its buffer answer. The
// driver's call waits a while for their answers, and then returns; those
// not in by then are taken afterwards.
type lookWhileFailing struct {
	reached bool
	wait    chan error
	other   chan error
	early   []error
}

func (l *lookWhileFailing) look(p Point, other func() error) {
	l.reached = p.Reached()
	l.wait = make(chan error, 1)
	go func() { l.wait <- p.Wait(context.Background()) }()
	looks := 1
	if other != nil {
		l.other = make(chan error, 1)
		go func() { l.other <- other() }()
		looks++
	}
	for range looks {
		select {
		case err := <-l.wait:
			l.early = append(l.early, err)
			l.wait = nil
		case err := <-l.other:
			l.early = append(l.early, err)
			l.other = nil
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// answers are every answer, those that came while the driver failed the
// value first.
func (l *lookWhileFailing) answers() []error {
	out := l.early
	for _, ch := range []chan error{l.wait, l.other} {
		if ch != nil {
			out = append(out, <-ch)
		}
	}
	return out
}

func (l *lookWhileFailing) check(t *testing.T, what string) {
	t.Helper()
	if l.reached {
		t.Errorf("the point of %s read as reached", what)
	}
	for _, err := range l.answers() {
		if !errors.Is(err, ErrLost) {
			t.Errorf("a wait on the point of %s, or work that reads what it writes, answered %v, want the loss", what, err)
		}
	}
}

// TestFailedSubmitWhileInFlight uses the point of a value whose Submit
// the driver answers Failed for while Submit runs: the buffer its work
// writes names it (LastUse) from the value's publication, and the driver
// writes the refused value into the word before it returns. The point
// neither reads as reached nor answers a wait with nil, and work of
// another device that reads the buffer does not run as though the value's
// work had written it.
func TestFailedSubmitWhileInFlight(t *testing.T) {
	f, g := newFake(), newFake()
	g.peer = true
	d := openFake(t, "failed-submit-in-flight", f)
	o := openFake(t, "failed-submit-in-flight-reader", g)
	b := allocOn(t, d)
	w := launchOn(t, d, Write(0, 0))
	r := launchOn(t, o, Read(0, 0))
	if err := submit(t, w, b).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var l lookWhileFailing
	var once sync.Once
	f.mu.Lock()
	f.fail = "a launch CUDA refused"
	f.onSubmit = func() {
		// The device ran the write of the refused value after the work
		// before it, before Submit returned.
		f.store(f.submitted[len(f.submitted)-1].Value)
		once.Do(func() {
			l.look(b.LastUse(), func() error {
				p, err := r.Take().Submit(context.Background(), b)
				if err == nil {
					err = p.Wait(context.Background())
				}
				return err
			})
		})
	}
	f.mu.Unlock()
	if _, err := w.Take().Submit(context.Background(), b); !errors.Is(err, ErrLost) {
		t.Fatalf("the failed submit answered %v, want the loss", err)
	}
	l.check(t, "a value whose Submit failed")
}

// TestFailedCommitWhileInFlight uses the point of a pending value while
// the driver fails its Commit, having written the value into the word:
// the point neither reads as reached nor answers a wait with nil.
func TestFailedCommitWhileInFlight(t *testing.T) {
	f := newFake()
	f.pending, f.held = true, true
	d := openFake(t, "failed-commit-in-flight", f)
	p := submit(t, empty(t, d))
	var l lookWhileFailing
	var once sync.Once
	f.onCommit = func() { once.Do(func() { l.look(p, nil) }) }
	f.mu.Lock()
	f.commitFail, f.failStores = "a write CUDA refused", true
	f.mu.Unlock()
	if err := p.Wait(context.Background()); !errors.Is(err, ErrLost) {
		t.Fatalf("a wait on a value whose commit failed answered %v, want the loss", err)
	}
	l.check(t, "a value whose Commit failed")
}
