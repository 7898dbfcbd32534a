package reclaim

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBudget(t *testing.T) {
	b := NewBudget(100)
	for _, c := range []struct{ take, lack int64 }{{60, 0}, {50, 10}, {40, 0}, {1, 1}} {
		if got := b.Take(c.take); got != c.lack {
			t.Fatalf("Take(%d) with %d used: lack %d, want %d", c.take, b.Used(), got, c.lack)
		}
	}
	b.Give(60)
	if b.Used() != 40 {
		t.Fatalf("used %d, want 40", b.Used())
	}
	if NewBudget(0).Take(1<<40) != 0 {
		t.Fatal("a budget of no limit lacked")
	}
}

// TestBudgetNoLimit checks that a limit of 0 or less is none: Take lacks
// nothing, and Limit returns 0.
func TestBudgetNoLimit(t *testing.T) {
	for _, limit := range []int64{0, -1, math.MinInt64} {
		b := NewBudget(limit)
		if got := b.Limit(); got != 0 {
			t.Errorf("NewBudget(%d).Limit() = %d, want 0 for none", limit, got)
		}
		if lack := b.Take(1 << 40); lack != 0 {
			t.Errorf("NewBudget(%d): Take(1<<40) lacks %d, want 0", limit, lack)
		}
	}
}

// TestBudgetOverflow takes counts whose sums overflow an int64: each is
// refused with a positive lack, and the count never moves.
func TestBudgetOverflow(t *testing.T) {
	for _, c := range []struct {
		limit, used, take, lack int64
	}{
		{100, 60, math.MaxInt64, math.MaxInt64 - 40},
		{100, 0, math.MaxInt64, math.MaxInt64 - 100},
		{math.MaxInt64, 1, math.MaxInt64, 1},
		{0, 1, math.MaxInt64, 1},
		{0, math.MaxInt64 - 3, 4, 1},
		{0, 1 << 62, 1 << 62, 1},
		{0, 1 << 62, 1<<62 - 1, 0},
	} {
		b := NewBudget(c.limit)
		if c.used > 0 && b.Take(c.used) != 0 {
			t.Fatalf("limit %d: Take(%d) lacked", c.limit, c.used)
		}
		used := b.Used()
		got := b.Take(c.take)
		if got != c.lack {
			t.Errorf("limit %d, %d used: Take(%d) lacks %d, want %d", c.limit, used, c.take, got, c.lack)
		}
		if got > 0 && b.Used() != used {
			t.Errorf("limit %d: a refused Take(%d) moved the count from %d to %d", c.limit, c.take, used, b.Used())
		}
		if b.Used() < 0 {
			t.Errorf("limit %d: the count went negative: %d", c.limit, b.Used())
		}
	}
	for _, f := range []func(*Budget){func(b *Budget) { b.Take(-1) }, func(b *Budget) { b.Give(-1) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a negative count did not panic")
				}
			}()
			f(NewBudget(100))
		}()
	}
}

// TestBudgetGivePastCount gives back more bytes than are counted: Give
// panics naming both, and the count stays, so that a budget of no limit
// still takes what it has room for.
func TestBudgetGivePastCount(t *testing.T) {
	for _, limit := range []int64{0, 100, math.MaxInt64} {
		b := NewBudget(limit)
		if b.Take(10) != 0 {
			t.Fatalf("limit %d: Take(10) lacked", limit)
		}
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Errorf("limit %d: Give(11) with 10 counted did not panic", limit)
					return
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, "11") || !strings.Contains(msg, "10") {
					t.Errorf("limit %d: Give(11) panicked with %q, which names neither count", limit, msg)
				}
			}()
			b.Give(11)
		}()
		if b.Used() != 10 {
			t.Errorf("limit %d: the count is %d after a refused Give, want 10", limit, b.Used())
		}
		if lack := b.Take(1); lack != 0 {
			t.Errorf("limit %d: Take(1) after a refused Give lacks %d", limit, lack)
		}
	}
}

func TestBudgetConcurrent(t *testing.T) {
	b := NewBudget(1000)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if b.Take(3) == 0 {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 333 || b.Used() != 999 {
		t.Fatalf("%d takes of 3 fit a budget of 1000 (used %d); want 333", ok.Load(), b.Used())
	}
}

type item struct {
	due      atomic.Bool
	released atomic.Int32
}

func (i *item) Due() bool { return i.due.Load() }
func (i *item) Release()  { i.released.Add(1) }

func TestDeferred(t *testing.T) {
	var d Deferred
	a, b := &item{}, &item{}
	d.Add(a)
	d.Add(b)
	if d.Sweep() != 0 || d.Len() != 2 {
		t.Fatal("released items that are not due")
	}
	b.due.Store(true)
	if d.Sweep() != 1 || b.released.Load() != 1 || a.released.Load() != 0 || d.Len() != 1 {
		t.Fatal("sweep did not release exactly the due item")
	}
	if d.Sweep() != 0 || b.released.Load() != 1 {
		t.Fatal("an item was released twice")
	}
	if its := d.Drain(); len(its) != 1 || its[0] != a || d.Len() != 0 {
		t.Fatal("drain did not answer the remaining item")
	}
}

// panicky is an item whose Due or Release panics while its flag is set.
type panicky struct {
	item
	dueBoom, releaseBoom atomic.Bool
}

func (p *panicky) Due() bool {
	if p.dueBoom.Load() {
		panic("Due")
	}
	return p.item.Due()
}

func (p *panicky) Release() {
	p.item.Release()
	if p.releaseBoom.Load() {
		panic("Release")
	}
}

// sweepPanic sweeps d and returns what Sweep panicked with, or nil.
func sweepPanic(d *Deferred) (v any) {
	defer func() { v = recover() }()
	d.Sweep()
	return nil
}

// blockingItem is due at once, and its Release blocks until release is
// closed.
type blockingItem struct {
	entered, release chan struct{}
}

func (b *blockingItem) Due() bool { return true }
func (b *blockingItem) Release() {
	close(b.entered)
	<-b.release
}

// An item whose Release runs in one goroutine's Sweep is not released yet
// for another goroutine's Len: a caller that waits for Len to reach 0
// before it gives back what the items use (a device's reaping) must not
// go on while a Release still runs.
func TestDeferredLenDuringRelease(t *testing.T) {
	var d Deferred
	it := &blockingItem{entered: make(chan struct{}), release: make(chan struct{})}
	d.Add(it)
	done := make(chan int)
	go func() { done <- d.Sweep() }()
	<-it.entered
	n := d.Len()
	close(it.release)
	if got := <-done; got != 1 {
		t.Fatalf("Sweep released %d items, want 1", got)
	}
	if n != 1 {
		t.Errorf("Len %d while the item's Release ran; want 1", n)
	}
	if d.Len() != 0 {
		t.Errorf("Len %d once the Release returned; want 0", d.Len())
	}
}

// TestDeferredPanics: a panic of an item's Due or Release reaches Sweep's
// caller and leaves the Deferred usable, its lock free and every item not
// released kept for a later Sweep, none released twice.
func TestDeferredPanics(t *testing.T) {
	for _, c := range []struct {
		name    string
		release bool // Release panics, not Due
		at      int  // the panicking item's place
		held    int  // Len after the panic: the items not released
	}{
		{"Due, first", false, 0, 5},
		{"Due, middle", false, 2, 5},
		{"Due, last", false, 4, 5},
		{"Release, first", true, 0, 4},
		{"Release, middle", true, 2, 3},
		{"Release, last", true, 4, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d Deferred
			its := make([]*panicky, 5)
			for i := range its {
				its[i] = &panicky{}
				its[i].due.Store(i != 1) // item 1 is not due
				d.Add(its[i])
			}
			boom := &its[c.at].dueBoom
			if c.release {
				boom = &its[c.at].releaseBoom
			}
			boom.Store(true)
			if v := sweepPanic(&d); v == nil {
				t.Fatal("Sweep returned; want the item's panic")
			}
			if d.Len() != c.held {
				t.Errorf("Len %d after the panic; want %d", d.Len(), c.held)
			}
			boom.Store(false)
			d.Add(&panicky{}) // the lock is free
			d.Sweep()
			its[1].due.Store(true)
			d.Sweep()
			for i, it := range its {
				if n := it.released.Load(); n != 1 {
					t.Errorf("item %d released %d times; want once", i, n)
				}
			}
			if d.Len() != 1 {
				t.Errorf("Len %d; want 1, the item added after the panic", d.Len())
			}
		})
	}
}

func TestRetryRounds(t *testing.T) {
	cases := []struct {
		name      string
		succeedAt int // try number that lacks nothing; 0 never
		tries     int
		rounds    []int
		lack      int64
	}{
		{"first", 1, 1, nil, 0},
		{"after two rounds", 3, 3, []int{0, 1}, 0},
		{"never", 0, Rounds + 1, []int{0, 1, 2, 3}, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tries := 0
			var rounds []int
			lack, err := Retry(func() (int64, error) {
				tries++
				if tries == c.succeedAt {
					return 0, nil
				}
				return 7, nil
			}, func(i int) { rounds = append(rounds, i) })
			if err != nil || lack != c.lack || tries != c.tries || len(rounds) != len(c.rounds) {
				t.Fatalf("lack %d err %v after %d tries and rounds %v", lack, err, tries, rounds)
			}
			for i := range rounds {
				if rounds[i] != c.rounds[i] {
					t.Fatalf("rounds %v, want %v", rounds, c.rounds)
				}
			}
		})
	}
}

func TestCollectRunsCleanups(t *testing.T) {
	var ran atomic.Bool
	func() {
		p := new([64]byte)
		runtime.AddCleanup(p, func(*atomic.Bool) { ran.Store(true) }, &ran)
	}()
	deadline := time.Now().Add(2 * time.Second)
	for !ran.Load() && time.Now().Before(deadline) {
		Collect(100 * time.Millisecond)
	}
	if !ran.Load() {
		t.Fatal("the cleanup of an unreachable object did not run")
	}
}

// chainItem is due at once, and its Release adds the next item of the
// chain before it returns, so that one item or more is always held or
// releasing.
type chainItem struct {
	d    *Deferred
	left *atomic.Int64
}

func (c *chainItem) Due() bool { return true }
func (c *chainItem) Release() {
	if c.left.Add(-1) > 0 {
		c.d.Add(&chainItem{d: c.d, left: c.left})
	}
}

// TestDeferredLenHandOff sweeps a chain of items, each added by the
// Release of the one before, while another goroutine reads Len: one item
// or more is never released throughout, so Len is never 0.
func TestDeferredLenHandOff(t *testing.T) {
	var d Deferred
	var left atomic.Int64
	left.Store(1 << 62)
	d.Add(&chainItem{d: &d, left: &left})
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			d.Sweep()
		}
	}()
	zero := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end) && zero == 0; {
		for range 1000 {
			if d.Len() == 0 {
				zero++
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if zero > 0 {
		t.Errorf("Len read 0 %d times while an item was held or releasing", zero)
	}
}
