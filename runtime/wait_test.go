package rig_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// untilWaiting waits until n waiters are registered with d.
func untilWaiting(t *testing.T, d *rig.Device, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.Waiting() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters registered, want %d", d.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestManyWaitersCancelled(t *testing.T) {
	const n = 10000
	d := host(t, hostdev.Config{})
	s := sub(t, d, rig.Launch(fn(t, d, "hang"), 0))
	p := submit(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- p.Wait(ctx)
		}()
	}
	untilWaiting(t, d, n)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled wait answered %v", err)
		}
	}
	untilWaiting(t, d, 0)
	if p.Reached() {
		t.Fatal("the hanging launch's point is reached")
	}
}

func TestManyWaitersWoken(t *testing.T) {
	const n = 10000
	d := host(t, hostdev.Config{})
	s := sub(t, d, rig.Launch(fn(t, d, "sleep"), 8))
	r := sleepRun(s, 200*time.Millisecond)
	p, err := r.Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed sync.Map
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Wait(context.Background()); err != nil {
				failed.Store(i, err)
			}
		}()
	}
	wg.Wait()
	failed.Range(func(k, v any) bool { t.Fatalf("waiter %v: %v", k, v); return false })
	untilWaiting(t, d, 0)
}

func TestWaitAll(t *testing.T) {
	a, b := host(t, hostdev.Config{}), host(t, hostdev.Config{})
	sa := sub(t, a, rig.Launch(fn(t, a, "sleep"), 8))
	sb := sub(t, b, rig.Launch(fn(t, b, "sleep"), 8))
	pa, err := sleepRun(sa, 5*time.Millisecond).Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sleepRun(sb, 10*time.Millisecond).Submit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.WaitAll(context.Background(), pa, pb, rig.Point{}); err != nil {
		t.Fatal(err)
	}
	if !pa.Reached() || !pb.Reached() {
		t.Fatal("WaitAll returned before its points were reached")
	}
	if pa.Device() != a || pb.Value() != b.Last().Value() {
		t.Fatal("a point names the wrong device or value")
	}
}

func TestWaitDeadline(t *testing.T) {
	d := host(t, hostdev.Config{})
	p := submit(t, sub(t, d, rig.Launch(fn(t, d, "hang"), 0)))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past its deadline: %v", err)
	}
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Fatalf("the wait returned after %v, before its deadline", el)
	}
	untilWaiting(t, d, 0)
}

// TestCancelledWaitLeavesNothing checks that a cancelled wait is no longer
// counted by Waiting once Wait returned, while the supervisor sleeps in
// the driver.
func TestCancelledWaitLeavesNothing(t *testing.T) {
	d := host(t, hostdev.Config{})
	p := submit(t, sub(t, d, rig.Launch(fn(t, d, "hang"), 0)))
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Wait(ctx) }()
		untilWaiting(t, d, 1)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled wait answered %v", err)
		}
		if n := d.Waiting(); n != 0 {
			t.Fatalf("round %d: %d waiters counted after the cancelled wait returned", i, n)
		}
	}
}
