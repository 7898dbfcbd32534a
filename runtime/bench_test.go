package rig_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// BenchmarkSubmit is the host cost of Take + Submit of a one-launch
// submission (the "empty" kernel) with 1 to 16 submitting goroutines.
func BenchmarkSubmit(b *testing.B) {
	for _, g := range []int{1, 2, 4, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			d := host(b, hostdev.Config{Ring: 1 << 16})
			s := sub(b, d, rig.Launch(fn(b, d, "empty"), 0))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / g
			for i := 0; i < g; i++ {
				n := per
				if i == 0 {
					n += b.N % g
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < n; j++ {
						if _, err := s.Take().Submit(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			wait(b, d.Last())
		})
	}
}

// BenchmarkWake measures waking a goroutine that waits on an unreached
// point against a bare channel handoff, in the same benchmark run. In each
// iteration of "rig", the benchmark submits a launch that blocks on a gate,
// tells a releaser goroutine to open the gate, and waits on the launch's
// point: the kernel ends, the host driver writes the word, the supervisor
// wakes the waiter. In "channel", it tells the releaser goroutine, which
// returns on a second channel: the same two goroutine handoffs, without rig.
func BenchmarkWake(b *testing.B) {
	b.Run("rig", func(b *testing.B) {
		d := host(b, hostdev.Config{})
		s := sub(b, d, rig.Launch(fn(b, d, "test_gate"), 0))
		ctx := context.Background()
		release := make(chan struct{})
		defer close(release)
		go func() {
			for range release {
				gate <- struct{}{}
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p, err := s.Take().Submit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			release <- struct{}{}
			if err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("channel", func(b *testing.B) {
		release, back := make(chan struct{}), make(chan struct{})
		defer close(release)
		go func() {
			for range release {
				back <- struct{}{}
			}
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			release <- struct{}{}
			<-back
		}
	})
}

// gate holds the test_gate kernel until the benchmark releases it.
var gate = make(chan struct{})

func init() {
	hostdev.RegisterParams("test_gate", 0, func(k *hostdev.Ctx) {
		select {
		case <-gate:
		case <-k.Stopped():
		}
	})
}
