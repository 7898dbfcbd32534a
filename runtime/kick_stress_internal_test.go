package rig

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// exactKick is the fake as a device.Kicker whose Kick runs the work of
// the values up to v exactly, no further: a value whose Kick never comes
// is never reached, whatever came after it. It records the rules Kick
// broke: Kicks at once, a Kick behind the one before, a Kick of a value
// not submitted.
type exactKick struct {
	*fake
	slow   int // Gosched calls in each Kick, so that submitters gather about it
	in     atomic.Int32
	kicked atomic.Uint64
	mu     sync.Mutex
	broke  []string
}

func (k *exactKick) broken(format string, args ...any) {
	k.mu.Lock()
	k.broke = append(k.broke, fmt.Sprintf(format, args...))
	k.mu.Unlock()
}

func (k *exactKick) Kick(v uint64) {
	if n := k.in.Add(1); n != 1 {
		k.broken("%d Kicks at once", n)
	}
	defer k.in.Add(-1)
	for range k.slow {
		runtime.Gosched()
	}
	if prev := k.kicked.Swap(v); !device.AtLeast(v, prev) {
		k.broken("Kick(%d) after Kick(%d)", v, prev)
	}
	k.fake.mu.Lock()
	defer k.fake.mu.Unlock()
	if k.stopped {
		return
	}
	n := len(k.submitted)
	if n == 0 || !device.AtLeast(k.submitted[n-1].Value, v) {
		k.broken("Kick(%d) before its Submit", v)
		return
	}
	if !device.AtLeast(k.load(), v) {
		k.store(v)
	}
}

// burstBarrier holds n goroutines until all of them arrived, again and
// again; the last to arrive runs check first.
type burstBarrier struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n, in int
	gen   int
	check func()
}

func newBurstBarrier(n int, check func()) *burstBarrier {
	b := &burstBarrier{n: n, check: check}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *burstBarrier) arrive() {
	b.mu.Lock()
	defer b.mu.Unlock()
	gen := b.gen
	if b.in++; b.in == b.n {
		b.check()
		b.in = 0
		b.gen++
		b.cond.Broadcast()
		return
	}
	for gen == b.gen {
		b.cond.Wait()
	}
}

// TestStressCombineKickExact runs goroutines that submit to a device whose
// submitters combine, in bursts (half of them by Do), and wait on their
// points and on others',
// with contexts that end at random, while others turn timing on and off
// and waiters commit values the driver left pending (so that holders of
// the submit lock other than submitters make queued runs' attempts). Its
// driver runs only the values kicked. Once every Submit of a burst
// returned, where the device stays open, no kicker is in flight, every
// value submitted was kicked, each run was submitted once and no run is
// left queued; values are never returned twice, and a wait answers nil
// only for a value kicked. Where the device is lost or closed on the way,
// every call returns.
func TestStressCombineKickExact(t *testing.T) {
	goroutines, bursts := 128, 16
	if testing.Short() {
		goroutines = 64
	}
	for round := range 8 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(round), 29))
			f := newFake()
			f.held = true
			f.pending = round%2 == 1
			k := &exactKick{fake: f, slow: round % 4}
			d, err := Open(context.Background(), device.Opener{Name: fmt.Sprintf("stress-kick-exact-%d", round), Make: func(w *uint64) (device.Driver, error) {
				f.facts.Word = w
				return k, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = d.Close()
				<-d.Done()
			}()
			if !d.combines {
				t.Fatal("the device does not combine")
			}
			d.SetWaitSpin(0)
			s := empty(t, d)
			end := round % 3 // 0: stays open, 1: lost, 2: closed on the way

			var (
				bad      atomic.Int64
				firstBad atomic.Pointer[string]
				ok       atomic.Int64
				mu       sync.Mutex
				values   = map[uint64]bool{}
				points   []Point
			)
			fail := func(format string, args ...any) {
				if bad.Add(1) == 1 {
					msg := fmt.Sprintf(format, args...)
					firstBad.Store(&msg)
				}
			}
			ended := atomic.Bool{}
			submitted := newBurstBarrier(goroutines, func() {
				if end != 0 && ended.Load() {
					return
				}
				if d.kicks.busy.Load() {
					fail("a kicker holds the kicks once every Submit of a burst returned")
				}
				if got, last := k.kicked.Load(), d.last.Load(); got != last && d.loss.Load() == nil && !d.closing.Load() {
					fail("Kicks reached value %d of %d submitted once every Submit of a burst returned", got, last)
				}
				if n := int64(f.count()); n != ok.Load() && d.loss.Load() == nil && !d.closing.Load() {
					fail("the driver took %d submissions for %d Submits that returned a point", n, ok.Load())
				}
				if d.cq.head.Load() != nil {
					fail("a run is left queued once every Submit of a burst returned")
				}
			})
			waited := newBurstBarrier(goroutines, func() {})
			var wg sync.WaitGroup
			for g := range goroutines {
				salt := rng.Uint64()
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(salt, uint64(g)))
					for range bursts {
						var mine Point
						var ctx context.Context
						cancel := context.CancelFunc(func() {})
						switch {
						case g%16 == 0:
							d.SetTimed(rng.IntN(2) == 0)
						case g%16 == 1:
							mu.Lock()
							if len(points) > 0 {
								mine = points[rng.IntN(len(points))]
							}
							mu.Unlock()
						default:
							ctx, cancel = RandomCtx(rng, 3, 100*time.Microsecond)
							var p Point
							var err error
							if g%2 == 0 {
								// Do: a combiner may hand the wait to the
								// supervisor (handOff).
								p, err = s.Take().Do(ctx)
								if err == nil && !device.AtLeast(k.kicked.Load(), p.v) {
									fail("Do of value %d answered nil before its Kick", p.v)
								}
								if err != nil && p.d != nil {
									if !stressErr(err) {
										fail("Do's wait on value %d: %v", p.v, err)
									}
									err = nil // submitted all the same
								}
							} else {
								p, err = s.Take().Submit(ctx)
							}
							if err != nil {
								if !stressErr(err) {
									fail("Submit: %v", err)
								}
								break
							}
							ok.Add(1)
							mu.Lock()
							if values[p.v] {
								fail("value %d returned twice", p.v)
							}
							values[p.v] = true
							points = append(points, p)
							mu.Unlock()
							mine = p
						}
						submitted.arrive()
						if mine.d != nil {
							if ctx == nil {
								ctx, cancel = RandomCtx(rng, 2, 100*time.Microsecond)
							}
							err := mine.Wait(ctx)
							if err == nil && !device.AtLeast(k.kicked.Load(), mine.v) {
								fail("a wait on value %d answered nil before its Kick", mine.v)
							}
							if err != nil && !stressErr(err) {
								fail("a wait on value %d: %v", mine.v, err)
							}
						}
						cancel()
						waited.arrive()
					}
				})
			}
			var ender sync.WaitGroup
			if end != 0 {
				after := int64(rng.IntN(goroutines * bursts / 2))
				ender.Go(func() {
					for ok.Load() < after && bad.Load() == 0 {
						time.Sleep(20 * time.Microsecond)
					}
					ended.Store(true)
					if end == 1 {
						f.mu.Lock()
						f.fail = "stress loss"
						f.mu.Unlock()
					} else {
						_ = d.Close()
					}
				})
			}
			endsWithin(t, &wg, "the submitters and waiters")
			ender.Wait()
			if n := bad.Load(); n > 0 {
				t.Fatalf("%d broken answers, the first: %s", n, *firstBad.Load())
			}
			k.mu.Lock()
			for _, b := range k.broke {
				t.Error(b)
			}
			k.mu.Unlock()
			if n := d.sup.count.Load(); n != 0 {
				t.Fatalf("%d waiters counted after every wait returned", n)
			}
		})
	}
}
