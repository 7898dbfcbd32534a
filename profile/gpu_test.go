package profile

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rig-go/rig/cudadev"
	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/internal/testkernels"
	"github.com/rig-go/rig/internal/testutil"
	"github.com/rig-go/rig/nvdev"
	rig "github.com/rig-go/rig/runtime"
)

// TestGPUSpans takes a profile of launches on each GPU driver and checks
// the stamps against the host's clock: each value's span lies within the
// interval from just before its submit to just after its wait returned,
// and the spans follow the values' order. Then it checks each driver's
// profile against the other's: the same workload's median span on nvdev
// lies within a factor of eight of cudadev's, either way (on the H200,
// 2.4 µs and 7.0 µs: CUDA's spans are between events, whose own recording
// they include), which a clock or a unit gone wrong on either side breaks.
func TestGPUSpans(t *testing.T) {
	testutil.NeedGPU(t)
	medians := map[string]int64{}
	for _, c := range []struct {
		name string
		op   device.Opener
		bin  []byte
	}{{"cuda", cudadev.GPU(0), testkernels.Portable()}, {"nv", nvdev.GPU(0), nvCubin(t)}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			d := testutil.Open(t, c.op)
			f := testutil.Functions(t, d, c.bin, "twice")[0]
			x := testutil.Alloc(t, d, device.DeviceMemory, 4*256*64)
			s := submission(t, d, rig.Launch(f, 8, rig.ReadWrite(0, 0)))
			p, err := Start(d)
			if err != nil {
				t.Fatal(err)
			}
			const n = 200
			type window struct {
				value      uint64
				from, till int64
			}
			var ws []window
			for i := 0; i < n; i++ {
				r := s.Take()
				r.Groups(0, 64, 1, 1)
				r.Threads(0, 256, 1, 1)
				from := device.Now()
				pt, err := r.Submit(ctx, x)
				if err != nil {
					t.Fatal(err)
				}
				if err := pt.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				ws = append(ws, window{pt.Value(), from, device.Now()})
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := p.Stop(sctx); err != nil {
				t.Fatal(err)
			}
			spans := p.Spans()
			if len(spans) != n {
				t.Fatalf("%d spans of %d timed values", len(spans), n)
			}
			// A stamp's error is at most half its measure's interval
			// (5 µs) plus the timer's drift: allow 20 µs.
			const slack = 20_000
			var worst int64
			for i, sp := range spans {
				w := ws[i]
				if sp.Value != w.value {
					t.Fatalf("span %d is of value %d, want %d", i, sp.Value, w.value)
				}
				if sp.End < sp.Start {
					t.Fatalf("span of value %d ends %d ns before it starts", sp.Value, sp.Start-sp.End)
				}
				early, late := w.from-sp.Start, sp.End-w.till
				worst = max(worst, early, late)
				if early > slack || late > slack {
					t.Fatalf("span of value %d [%d, %d] lies outside its submit and wait [%d, %d]", sp.Value, sp.Start, sp.End, w.from, w.till)
				}
				if i > 0 && sp.Start < spans[i-1].End-slack {
					t.Fatalf("span of value %d starts %d ns before the previous value's end", sp.Value, spans[i-1].End-sp.Start)
				}
			}
			lens := make([]int64, len(spans))
			for i, sp := range spans {
				lens[i] = sp.End - sp.Start
			}
			slices.Sort(lens)
			medians[c.name] = lens[len(lens)/2]
			t.Logf("%d spans within their host intervals; the farthest outside by %d ns; median span %d ns; first %+v", n, worst, medians[c.name], spans[0])
		})
	}
	cu, nv := medians["cuda"], medians["nv"]
	if cu == 0 || nv == 0 {
		t.Fatalf("median spans: cuda %d ns, nv %d ns: a profile took no time", cu, nv)
	}
	t.Logf("median span of twice on 64 groups: cuda %d ns, nv %d ns (%.2fx)", cu, nv, float64(nv)/float64(cu))
	if nv > 8*cu || cu > 8*nv {
		t.Errorf("the profiles disagree: median span cuda %d ns, nv %d ns", cu, nv)
	}
}

// nvCubin is the test kernels for sm_90 that nvdev loads (no printf or
// assert), which hold empty and twice.
func nvCubin(t *testing.T) []byte {
	b, ok := testkernels.NVCubin("sm_90")
	if !ok {
		t.Fatal("no test cubin for sm_90")
	}
	return b
}
