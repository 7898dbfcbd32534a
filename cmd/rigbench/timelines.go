package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
	"github.com/rig-go/rig/profile"
	rig "github.com/rig-go/rig/runtime"
)

// Timelines: -timelines K opens, beside each device the run names (or the
// default device), its timelines 1 to K-1, devices of their own on the
// same GPU (cudadev.Timeline, nvdev.Timeline; for the host driver, more
// host devices), and runs the workload on each with -c submitters. The
// report gives the aggregate and each device's figures.

// maxTimelines bounds -timelines.
const maxTimelines = 64

// timelineOpeners make the opener of timeline k > 0 of device i, by
// driver; the GPU drivers add theirs from their files.
var timelineOpeners = map[string]func(i, k int) device.Opener{
	"host": func(i, k int) device.Opener {
		return hostdev.Open(hostdev.Config{Name: spec{Driver: "host", Index: i, Timeline: k}.String()})
	},
}

// openTimelines opens, after each device of devs, its timelines 1 to k-1,
// and returns all of them; on error it closes those it opened.
func openTimelines(ctx context.Context, devs []opened, k int) ([]opened, error) {
	if k <= 1 {
		return devs, nil
	}
	var out []opened
	for _, o := range devs {
		out = append(out, o)
		for t := 1; t < k; t++ {
			s := o.spec
			s.Timeline = t
			d, err := openSpec(ctx, s)
			if err != nil {
				for _, x := range out {
					if x.spec.Timeline > 0 {
						closeDevices([]opened{x})
					}
				}
				return nil, err
			}
			out = append(out, opened{s, d})
		}
	}
	return out, nil
}

// perDeviceStats counts, for each device, the submissions whose point was
// reached and their latency as the run measures it, through lanes it
// wraps.
type perDeviceStats struct {
	mu    sync.Mutex
	order []string
	devs  map[string]*deviceStats
}

type deviceStats struct {
	done atomic.Int64
	lat  *latency
}

func newPerDevice() *perDeviceStats { return &perDeviceStats{devs: map[string]*deviceStats{}} }

// wrap returns lanes that count into p: bench hands each lane's observe
// the latencies of the submissions whose points were reached, as it
// measured them for the run, a batch at a time. Each lane records into a
// shard of its device's histogram of its own, where the devices' shards
// stay within maxShards in all (one a device past maxShards devices);
// past that, the lanes of a device share its shards in turn (-timelines
// 64 -c 128 would otherwise hold 8,192 shards of about 440 KB).
func (p *perDeviceStats) wrap(lanes []lane[rig.Point]) []lane[rig.Point] {
	out := make([]lane[rig.Point], len(lanes))
	of := map[string]int{} // lanes of each device
	for _, l := range lanes {
		of[l.device]++
	}
	per := max(maxShards/max(len(of), 1), 1) // shards a device may have
	at := map[string]int{}                   // lanes of each device so far
	for i, l := range lanes {
		p.mu.Lock()
		st := p.devs[l.device]
		if st == nil {
			st = &deviceStats{lat: newLatencyFor(min(of[l.device], per))}
			p.devs[l.device] = st
			p.order = append(p.order, l.device)
		}
		p.mu.Unlock()
		j := at[l.device] // the lane's shard of its device's latency
		at[l.device]++
		l.observe = func(lats []int64) {
			st.lat.recordBatch(j, lats)
			st.done.Add(int64(len(lats)))
		}
		out[i] = l
	}
	return out
}

// DeviceResult is one device's part of a run of several.
type DeviceResult struct {
	Device      string  `json:"device"`
	Submissions int64   `json:"submissions"`
	PerSecond   float64 `json:"submissions_per_s"`
	// Latency is measured as the run's: from the call of submit to the
	// reached point, or from the intended send time with -rate.
	Latency Latency `json:"latency"`
}

// results returns each device's figures over the run's elapsed time, or
// nil for one device.
func (p *perDeviceStats) results(m *measure) []DeviceResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.order) < 2 {
		return nil
	}
	var out []DeviceResult
	for _, name := range p.order {
		st := p.devs[name]
		r := DeviceResult{Device: name, Submissions: st.done.Load(), Latency: summarize(st.lat.merged())}
		if s := m.elapsed.Seconds(); s > 0 {
			r.PerSecond = float64(r.Submissions) / s
		}
		out = append(out, r)
	}
	return out
}

// writeDeviceResults writes each device's figures.
func writeDeviceResults(b *strings.Builder, rs []DeviceResult) {
	for _, r := range rs {
		fmt.Fprintf(b, "  %s: %s submissions, %s/s", r.Device, count(float64(r.Submissions)), rateText(r.PerSecond))
		if l := r.Latency; l.Count > 0 {
			fmt.Fprintf(b, ", latency p50 %s  p99 %s  max %s", profile.Nanos(l.P50), profile.Nanos(l.P99), profile.Nanos(l.Max))
		}
		b.WriteString("\n")
	}
}
