package rig

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// stressBound bounds a stress test's goroutines: far past what they take
// on a loaded machine of two processors under the race detector, so that
// only a wait that never returns reaches it.
const stressBound = 60 * time.Second

// endsWithin waits for wg until stressBound, and fails the test with every
// goroutine's stack where it does not end by then.
func endsWithin(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stressBound):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s did not end in %v; the goroutines:\n%s", what, stressBound, buf)
	}
}

// stressKick is the fake as a device.Kicker, so that its submitters
// combine: Kick records the value kicked, and the test's completer writes
// it into the word later. ran is the last value the word took before the
// device stopped: the work that ran.
type stressKick struct {
	*fake
	kicked atomic.Uint64
	ran    atomic.Uint64
}

func (k *stressKick) Kick(v uint64) {
	for {
		old := k.kicked.Load()
		if device.AtLeast(old, v) || k.kicked.CompareAndSwap(old, v) {
			return
		}
	}
}

// completeKicked writes the last value kicked into the word, as the
// device's run of the work, unless the device stopped.
func (k *stressKick) completeKicked() {
	k.fake.mu.Lock()
	defer k.fake.mu.Unlock()
	if k.stopped {
		return
	}
	v := k.kicked.Load()
	if device.AtLeast(k.load(), v) {
		return
	}
	k.ran.Store(v)
	k.store(v)
}

// TestStressCombineCancelClose runs a thousand goroutines that submit on
// a device whose submitters combine and wait on their points (half of
// them by Do), with
// contexts that end at random, while the device's work completes at
// random and the device is lost or closed at a random moment. Every
// Submit returns an error or a point; a wait answers nil only for work
// that ran; every wait returns once the device closed; nothing stays
// counted in Waiting.
func TestStressCombineCancelClose(t *testing.T) {
	goroutines, each := 1000, 8
	if testing.Short() {
		goroutines = 200
	}
	for round := range 6 {
		rng := rand.New(rand.NewPCG(uint64(round), 11))
		f := newFake()
		f.held = true
		k := &stressKick{fake: f}
		name := "stress-combine-" + string(rune('a'+round))
		d, err := Open(context.Background(), device.Opener{Name: name, Make: func(w *uint64) (device.Driver, error) {
			f.facts.Word = w
			return k, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !d.combines {
			t.Fatal("the device does not combine")
		}
		d.SetWaitSpin(time.Duration(rng.IntN(3)) * 10 * time.Microsecond)
		s := empty(t, d)

		// The device's work: the values kicked complete now and then.
		stop := make(chan struct{})
		var completer sync.WaitGroup
		completer.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k.completeKicked()
				if i%4 == 0 {
					time.Sleep(20 * time.Microsecond)
				} else {
					runtime.Gosched()
				}
			}
		})

		var bad, oks, subErrs, waitErrs, submitted atomic.Int64
		var firstBad atomic.Pointer[string]
		fail := func(msg string) {
			if bad.Add(1) == 1 {
				firstBad.Store(&msg)
			}
		}
		var wg sync.WaitGroup
		for g := range goroutines {
			salt := rng.Uint64()
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(salt, uint64(g)))
				for range each {
					ctx, cancel := stressCtx(rng)
					var p Point
					var err error
					if g%2 == 1 {
						// Do: a combiner may hand the wait to the
						// supervisor (handOff).
						p, err = s.Take().Do(ctx)
					} else {
						p, err = s.Take().Submit(ctx)
					}
					if err != nil && p.d == nil {
						cancel()
						subErrs.Add(1)
						if !stressErr(err) {
							fail("Submit: " + err.Error())
						}
						continue
					}
					submitted.Add(1)
					if p.d != d {
						fail("Submit returned a point of no device")
					}
					if g%2 == 0 {
						err = p.Wait(ctx)
					}
					cancel()
					switch {
					case err == nil:
						oks.Add(1)
						if !device.AtLeast(k.ran.Load(), p.v) {
							fail("a wait answered nil for work that did not run")
						}
					default:
						waitErrs.Add(1)
					}
					switch {
					case err != nil && !stressErr(err):
						fail("Wait: " + err.Error())
					}
				}
			})
		}
		// The device's end, once a random share of the submissions was
		// made: lost, closed, or none before the test's own Close.
		end := round % 3
		after := int64(rng.IntN(goroutines * each * 3 / 4))
		var ender sync.WaitGroup
		ender.Go(func() {
			for submitted.Load() < after && submitted.Load()+subErrs.Load() < int64(goroutines*each) {
				time.Sleep(100 * time.Microsecond)
			}
			switch end {
			case 0:
				f.mu.Lock()
				f.fail = "stress loss"
				f.mu.Unlock()
			case 1:
				_ = d.Close()
			}
		})
		endsWithin(t, &wg, "the submitters and waiters")
		ender.Wait()
		_ = d.Close()
		close(stop)
		completer.Wait()
		done := sync.WaitGroup{}
		done.Go(func() { <-d.Done() })
		endsWithin(t, &done, "the device's close")
		t.Logf("round %d, end %d after %d submissions: %d waits answered nil (%d handed to the supervisor), %d errors, %d submissions refused", round, end, after, oks.Load(), d.Stats().WaitsHanded, waitErrs.Load(), subErrs.Load())
		if n := bad.Load(); n > 0 {
			t.Fatalf("round %d: %d broken answers, the first: %s", round, n, *firstBad.Load())
		}
		if n := d.sup.count.Load(); n != 0 {
			t.Fatalf("round %d: %d waiters counted after every wait returned", round, n)
		}
	}
}

// stressCtx returns a context that is live, ended already, or ends after
// a random while.
func stressCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	return RandomCtx(rng, 1, 200*time.Microsecond)
}

// RandomCtx returns a context that is ended already, ends within
// maxWait, is cancelled by another goroutine soon, or is live: the first
// three one chance each in 3+live, live the others. The tests of package
// rig_test call it too.
func RandomCtx(rng *rand.Rand, live int, maxWait time.Duration) (context.Context, context.CancelFunc) {
	switch rng.IntN(3 + live) {
	case 0:
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	case 1:
		return context.WithTimeout(context.Background(), time.Duration(rng.Int64N(int64(maxWait))))
	case 2:
		ctx, cancel := context.WithCancel(context.Background())
		n := rng.IntN(8)
		go func() {
			for range n {
				runtime.Gosched()
			}
			cancel()
		}()
		return ctx, cancel
	}
	return context.WithCancel(context.Background())
}

// stressErr reports whether err is an answer a stress test's Submit or
// Wait may give: its context's end, the device's loss or its close.
func stressErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrLost) || errors.Is(err, ErrClosed)
}

// TestStressMailboxFull fills the supervisor's mailbox while it is held,
// with more waiters than the box holds, whose contexts end at random, and
// then completes some of the work and closes the device or completes all
// of it: every wait returns, nil only for work that completed, and none
// stays counted in Waiting.
func TestStressMailboxFull(t *testing.T) {
	waiters := mailboxSize + mailboxSize/2
	for _, closing := range []bool{false, true} {
		name := "stress-box-open"
		if closing {
			name = "stress-box-closed"
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(name)), 5))
			f := newFake()
			f.held = true
			d, err := Open(context.Background(), f.opener(name))
			if err != nil {
				t.Fatal(err)
			}
			d.SetWaitSpin(0)
			s := empty(t, d)
			var pts []Point
			for range 8 {
				pts = append(pts, submit(t, s))
			}
			// Hold the supervisor at its next message.
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hook := func() { once.Do(func() { close(entered); <-release }) }
			d.sup.handled.Store(&hook)

			var ran atomic.Uint64 // the last value completed
			var bad atomic.Int64
			var wg sync.WaitGroup
			for i := range waiters {
				p := pts[rng.IntN(len(pts))]
				salt := rng.Uint64()
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(salt, uint64(i)))
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if rng.IntN(3) == 0 {
						ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(5000))*time.Microsecond)
					}
					defer cancel()
					err := p.Wait(ctx)
					if err == nil && !device.AtLeast(ran.Load(), p.v) || err != nil && !stressErr(err) {
						bad.Add(1)
					}
				})
			}
			<-entered
			full := sync.WaitGroup{}
			full.Go(func() {
				for d.sup.box.Len() < mailboxSize {
					time.Sleep(100 * time.Microsecond)
				}
			})
			endsWithin(t, &full, "the mailbox's filling")
			// Half the work completes; Close comes while the box is full.
			half := pts[len(pts)/2-1].v
			ran.Store(half)
			f.complete(half)
			var closer sync.WaitGroup
			if closing {
				closer.Go(func() { _ = d.Close() })
				time.Sleep(time.Millisecond)
			}
			close(release)
			if !closing {
				ran.Store(pts[len(pts)-1].v)
				f.complete(pts[len(pts)-1].v)
			}
			endsWithin(t, &wg, "the waiters")
			closer.Wait()
			d.sup.handled.Store(nil)
			if n := bad.Load(); n > 0 {
				t.Fatalf("%d waits answered wrongly", n)
			}
			if n := d.sup.count.Load(); n != 0 {
				t.Fatalf("%d waiters counted after every wait returned", n)
			}
			_ = d.Close()
			<-d.Done()
			if n := d.sup.count.Load(); n != 0 {
				t.Fatalf("%d waiters counted after every wait returned", n)
			}
		})
	}
}
