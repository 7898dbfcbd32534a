package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// TestTallyCounts runs lanes whose submissions move known bytes, at depth
// 1 and deeper, for counts that are and are not multiples of a tally's
// batch: the run's count, bytes and histogram, the progress line's count
// and each device's figures must hold every submission once, however the
// lanes' batches fell.
func TestTallyCounts(t *testing.T) {
	for _, depth := range []int{1, 4} {
		for _, n := range []int64{1, tallyBatch - 1, tallyBatch, 5*tallyBatch + 7} {
			t.Run(fmt.Sprintf("depth=%d/n=%d", depth, n), func(t *testing.T) {
				const lanes = 3
				var issued atomic.Int64
				ls := make([]lane[rig.Point], lanes)
				for i := range ls {
					ls[i] = lane[rig.Point]{
						device: fmt.Sprint("dev", i%2),
						submit: func(context.Context) (rig.Point, int64, error) {
							return rig.Point{}, issued.Add(1), nil
						},
						wait: func(context.Context, rig.Point) error { return nil },
					}
				}
				per := newPerDevice()
				lv := &live{}
				cfg := &config{Depth: depth, N: n, Timeout: 10 * time.Second}
				m := bench(context.Background(), cfg, per.wrap(ls), lv)
				if m.errors != 0 {
					t.Fatalf("%d errors: %v", m.errors, m.firstErr)
				}
				wantBytes := n * (n + 1) / 2 // the k-th submission moves k bytes
				if m.done != n || m.bytes != wantBytes || lv.done.Load() != n {
					t.Fatalf("done %d, bytes %d, progress %d; want %d, %d, %d", m.done, m.bytes, lv.done.Load(), n, wantBytes, n)
				}
				if c := m.lat.merged().TotalCount(); c != n {
					t.Fatalf("the histogram holds %d latencies, want %d", c, n)
				}
				var sum, hist int64
				for _, name := range per.order {
					st := per.devs[name]
					sum += st.done.Load()
					hist += st.lat.merged().TotalCount()
				}
				if sum != n || hist != n {
					t.Fatalf("the devices counted %d and hold %d latencies; want %d each", sum, hist, n)
				}
			})
		}
	}
}

// TestWrapShards: the lanes of a few devices each get a shard of their
// device's histogram of their own, and many devices of many lanes hold
// maxShards shards in all, each device at least one, every lane's batch
// recorded into its device's histogram.
func TestWrapShards(t *testing.T) {
	for _, c := range []struct{ devices, lanesEach, wantEach int }{
		{4, 16, 16},
		{1, 1000, maxShards},
		{64, 128, maxShards / 64},
		{maxShards * 2, 2, 1},
	} {
		var ls []lane[rig.Point]
		for d := range c.devices {
			for range c.lanesEach {
				ls = append(ls, lane[rig.Point]{device: fmt.Sprint("dev", d)})
			}
		}
		per := newPerDevice()
		for _, l := range per.wrap(ls) {
			l.observe([]int64{1, 2})
		}
		for _, name := range per.order {
			st := per.devs[name]
			if n := len(st.lat.shards); n != c.wantEach {
				t.Errorf("%d devices of %d lanes: %s has %d shards, want %d", c.devices, c.lanesEach, name, n, c.wantEach)
			}
			if got, want := st.lat.merged().TotalCount(), int64(2*c.lanesEach); got != want || st.done.Load() != want {
				t.Errorf("%d devices of %d lanes: %s holds %d latencies and counted %d, want %d", c.devices, c.lanesEach, name, got, st.done.Load(), want)
			}
		}
	}
}

// TestDepthOneDo: at -depth 1 a lane that submits and waits in one call
// (Run.Do) is run by it, unless -split; deeper lanes submit and wait
// apart. A Do that submitted reports its wait's error as a wait's, and
// one that did not as a submission's.
func TestDepthOneDo(t *testing.T) {
	const n = 100
	for _, c := range []struct {
		depth           int
		split           bool
		doErr           error
		doSubmitted     bool
		wantDo, wantSub int64
		wantErr         string
	}{
		{depth: 1, doSubmitted: true, wantDo: n},
		{depth: 1, split: true, doSubmitted: true, wantSub: n},
		{depth: 4, doSubmitted: true, wantSub: n},
		{depth: 1, doSubmitted: true, doErr: errors.New("lost"), wantDo: 1, wantErr: "wait on dev: lost"},
		{depth: 1, doErr: errors.New("refused"), wantDo: 1, wantErr: "submit on dev: refused"},
	} {
		t.Run(fmt.Sprintf("depth=%d/split=%v/err=%v", c.depth, c.split, c.doErr), func(t *testing.T) {
			var dos, subs atomic.Int64
			l := lane[rig.Point]{
				device: "dev",
				submit: func(context.Context) (rig.Point, int64, error) {
					subs.Add(1)
					return rig.Point{}, 0, nil
				},
				wait: func(context.Context, rig.Point) error { return nil },
				do: func(context.Context) (rig.Point, int64, bool, error) {
					dos.Add(1)
					return rig.Point{}, 0, c.doSubmitted, c.doErr
				},
			}
			cfg := &config{Depth: c.depth, Split: c.split, N: n, Timeout: 10 * time.Second}
			m := bench(context.Background(), cfg, []lane[rig.Point]{l}, &live{})
			if dos.Load() != c.wantDo || subs.Load() != c.wantSub {
				t.Fatalf("%d Do calls and %d Submit calls, want %d and %d", dos.Load(), subs.Load(), c.wantDo, c.wantSub)
			}
			switch {
			case c.wantErr == "" && m.errors != 0:
				t.Fatalf("%d errors: %v", m.errors, m.firstErr)
			case c.wantErr == "" && m.done != n:
				t.Fatalf("done %d, want %d", m.done, n)
			case c.wantErr != "" && (m.firstErr == nil || m.firstErr.Error() != c.wantErr):
				t.Fatalf("first error %v, want %q", m.firstErr, c.wantErr)
			}
		})
	}
}
