package rig

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// doAsync starts a Do of a run of s and returns the channel its answer
// comes on, once the driver of f holds its submission.
func doAsync(t *testing.T, f *fake, s *Submission, ctx context.Context) <-chan error {
	t.Helper()
	n := f.count()
	ch := make(chan error, 1)
	go func() {
		_, err := s.Take().Do(ctx)
		ch <- err
	}()
	for start := time.Now(); f.count() == n; time.Sleep(50 * time.Microsecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("Do submitted nothing")
		}
	}
	return ch
}

// TestDo: Do returns only once the word reached its run's value, and nil
// then.
func TestDo(t *testing.T) {
	f := newFake()
	f.held = true
	d := openWith(t, f.opener("do"))
	s := empty(t, d)
	v := d.last.Load() + 1
	ch := doAsync(t, f, s, context.Background())
	select {
	case err := <-ch:
		t.Fatalf("Do returned %v before its value completed", err)
	case <-time.After(5 * time.Millisecond):
	}
	f.complete(v)
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
}

// TestDoErrors: Do answers the submission's refusal, a wait's
// cancellation (leaving nothing registered, and the device working), and
// a loss.
func TestDoErrors(t *testing.T) {
	f := newFake()
	f.held = true
	d := openWith(t, f.opener("do-errors"))
	s := empty(t, d)

	r := s.Take()
	r.Release()
	if p, err := r.Do(context.Background()); !errors.Is(err, ErrInvalid) || p != (Point{}) {
		t.Fatalf("Do of a released run: %v, %v; want the zero Point, ErrInvalid", p, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	v := d.last.Load() + 1
	pc := make(chan Point, 1)
	go func() {
		p, err := s.Take().Do(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled Do returned %v, want context.Canceled", err)
		}
		pc <- p
	}()
	for start := time.Now(); f.count() == 0 || d.Waiting() == 0; time.Sleep(50 * time.Microsecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("Do did not wait")
		}
	}
	cancel()
	if p := <-pc; p.Device() != d || p.Value() != v || p.Reached() {
		t.Fatalf("a cancelled Do returned the point %v of %v, reached %v; want %d of %v, not reached", p.Value(), p.Device(), p.Reached(), v, d)
	}
	for start := time.Now(); d.Waiting() != 0; time.Sleep(50 * time.Microsecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d waiters left after the cancellation", d.Waiting())
		}
	}
	f.complete(v)
	ch := doAsync(t, f, s, context.Background())
	f.complete(v + 1)
	if err := <-ch; err != nil {
		t.Fatalf("a Do after the cancellation: %v", err)
	}

	ch = doAsync(t, f, s, context.Background())
	d.lose("a fault for the test", nil)
	select {
	case err := <-ch:
		if !errors.Is(err, ErrLost) {
			t.Fatalf("Do on a lost device returned %v, want ErrLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Do did not return after the loss")
	}
}

// TestDoConcurrent: goroutines that Do in a closed loop on a device whose
// submitters combine, and whose values complete some microseconds after
// their kick (lagKickDrv), all return nil, each once its value was
// reached.
func TestDoConcurrent(t *testing.T) {
	k := &lagKickDrv{lagDrv{fake: newFake(), spin: time.Microsecond, lag: 50 * time.Microsecond, t0: time.Now()}}
	k.held = true
	k.keepOwnWord(0)
	d := openWith(t, device.Opener{Name: "do-concurrent", Make: func(*uint64) (device.Driver, error) { return k, nil }})
	if !d.combines {
		t.Fatal("a device whose driver kicks does not combine")
	}
	s := empty(t, d)
	const goroutines, each = 16, 300
	var wg sync.WaitGroup
	var early atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for range each {
				before := d.last.Load()
				p, err := s.Take().Do(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if !p.Reached() || !device.AtLeast(p.Value(), before+1) {
					early.Add(1)
				}
				// The run's value is past before; the word reached it.
				if !device.AtLeast(d.read(), before+1) {
					early.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := early.Load(); n != 0 {
		t.Fatalf("%d Dos returned before the word reached their values", n)
	}
	if st := d.Stats(); st.Submitted != goroutines*each {
		t.Fatalf("%d submitted, want %d", st.Submitted, goroutines*each)
	}
	if w := d.Waiting(); w != 0 {
		t.Fatalf("%d waiters left", w)
	}
}

// TestDoObserverPanics: where the device's observer panics as it sees the
// run, Do still waits for the run's point, which the work was submitted
// for, and returns the *ObserverPanicError once it is reached.
func TestDoObserverPanics(t *testing.T) {
	f := newFake()
	f.held = true
	d := openWith(t, f.opener("do-observer"))
	s := empty(t, d)
	d.SetTimed(true)
	d.SetObserver(observerFn(func(*Device, *device.Submission) { panic("observer") }))
	v := d.last.Load() + 1
	ch := make(chan error, 1)
	go func() {
		_, err := s.Take().Do(context.Background())
		ch <- err
	}()
	for start := time.Now(); d.last.Load() != v; time.Sleep(50 * time.Microsecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("Do submitted nothing")
		}
	}
	select {
	case err := <-ch:
		f.complete(v)
		t.Fatalf("Do returned %v before its value completed", err)
	case <-time.After(5 * time.Millisecond):
	}
	f.complete(v)
	var pe *ObserverPanicError
	if err := <-ch; !errors.As(err, &pe) {
		t.Fatalf("Do returned %v, want an *ObserverPanicError", err)
	}
}
