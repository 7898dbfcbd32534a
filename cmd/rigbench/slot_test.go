package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// doneLane is a lane whose submissions complete at once; each wait it
// ends signals on waited where that is not nil.
func doneLane(waited chan<- struct{}) lane[uint64] {
	var k uint64
	return lane[uint64]{
		device: "fake",
		submit: func(ctx context.Context) (uint64, int64, error) {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
			k++
			return k, 0, nil
		},
		wait: func(ctx context.Context, v uint64) error {
			if waited != nil {
				select {
				case waited <- struct{}{}:
				default:
				}
			}
			return nil
		},
	}
}

// TestRateSlotEndsOnInterrupt: an open loop that ran out of -n waits for
// the slot of its last arrival, 1/R after it was due, and Ctrl-C ends that
// wait as it ends the run: -rate 0.001 -n 1 would otherwise hold the
// report for 1000 s after its one submission, whatever the reader pressed.
func TestRateSlotEndsOnInterrupt(t *testing.T) {
	for _, depth := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		waited := make(chan struct{}, 1)
		cfg := &config{Depth: depth, Rate: minRate, N: 1, Timeout: time.Minute}
		got := make(chan *measure, 1)
		go func() { got <- bench(ctx, cfg, []lane[uint64]{doneLane(waited)}, &live{}) }()
		<-waited // the one submission completed: the slot's wait comes next
		cancel()
		select {
		case m := <-got:
			if m.done != 1 || m.errors != 0 || !m.interrupted {
				t.Errorf("-depth %d: %d done, %d errors, interrupted %v; want the one submission, interrupted", depth, m.done, m.errors, m.interrupted)
			}
			if m.elapsed >= 1000*time.Second {
				t.Errorf("-depth %d: the run spans %v, the whole slot, though it was interrupted", depth, m.elapsed)
			}
		case <-time.After(time.Minute):
			t.Fatalf("-depth %d: the run goes on for the slot of its last arrival, 1000 s, after its context ended", depth)
		}
	}
}

// TestRateSlotEndsOnTime: an open loop that ran out of -n spans the slot
// of its last arrival exactly, when its submissions completed before the
// slot's end: N arrivals at R a second read as R a second, not less by
// however late the wait for the slot's end woke.
func TestRateSlotEndsOnTime(t *testing.T) {
	for _, c := range []struct {
		depth, lanes int
		n            int64
	}{{1, 1, 1}, {4, 1, 2}, {1, 3, 3}, {4, 2, 3}} {
		cfg := &config{Depth: c.depth, Rate: 10, N: c.n, Timeout: time.Minute}
		var lanes []lane[uint64]
		for range c.lanes {
			lanes = append(lanes, doneLane(nil))
		}
		m := bench(context.Background(), cfg, lanes, &live{})
		// Arrival N-1 is due at (N-1)/R, and its slot ends 1/R later.
		want := time.Duration(c.n) * 100 * time.Millisecond
		if m.done != c.n || m.errors != 0 || m.elapsed != want {
			t.Errorf("-depth %d, %d lanes, -n %d at 10/s: %d done, %d errors in %v; want %d in %v, %.2f/s",
				c.depth, c.lanes, c.n, m.done, m.errors, m.elapsed, c.n, want, float64(m.done)/m.elapsed.Seconds())
		}
	}
}

// TestReportTextSubmittersPerDevice: -c counts the submitters of each
// device, so that a run of several devices (-device, -timelines) says how
// many there are in all, rather than reading as -c submitters; the mixed
// workload's -c counts those of its two devices together.
func TestReportTextSubmittersPerDevice(t *testing.T) {
	for _, c := range []struct {
		workload string
		devices  int
		want     string
	}{
		{"empty", 1, "  16 submitter(s) of depth 8,"},
		{"empty", 4, "  16 submitter(s) on each of 4 devices (64 in all) of depth 8,"},
		{"mixed", 2, "  16 submitter(s) of depth 8,"},
	} {
		r := &Report{Schema: schema, Workload: c.workload, Config: ConfigReport{Submitters: 16, Depth: 8, DurationNs: int64(time.Second)}}
		for i := range c.devices {
			r.Devices = append(r.Devices, DeviceFacts{Spec: spec{Driver: "host", Timeline: i}.String()})
		}
		var b strings.Builder
		if err := r.writeText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s on %d devices: the text lacks %q:\n%s", c.workload, c.devices, c.want, b.String())
		}
	}
}
