//go:build linux && (amd64 || arm64)

package cudadev

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// TestFailedValueWriteFault has CUDA refuse a copy with an error of the
// call alone (CUDA_ERROR_INVALID_VALUE), then refuse a call that writes a
// failed value with a fault of the context's work
// (CUDA_ERROR_ILLEGAL_ADDRESS): the write of the failed value itself, or,
// at the next submit, that value's wait, its write, or the join before it
// where no stream follows all the work. The device must take the fault as
// the context's, as where a submit's own call meets one: Sleep returns it
// as a *device.Fault, and later submits call CUDA no more.
func TestFailedValueWriteFault(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault string // the call that meets the fault
		first bool   // the failed value's own write meets it
		split bool   // no stream follows all the work
		waits bool   // the next value waits on a word
	}{
		{name: "failed value's write", fault: "cuStreamWriteValue64_v2", first: true},
		{name: "next value's write", fault: "cuStreamWriteValue64_v2"},
		{name: "next value's wait", fault: "cuStreamWaitValue64_v2", waits: true},
		{name: "next value's join", fault: "cuEventRecord", split: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			faulting := c.first
			calls := 0 // the calls that write a value, once faulting
			fns := map[string]fakeFn{
				"cuMemcpyAsync": func([6]uintptr) result { return errInvalidValue },
			}
			for _, name := range []string{"cuStreamWriteValue64_v2", "cuStreamWaitValue64_v2", "cuEventRecord", "cuStreamWaitEvent"} {
				fns[name] = func([6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if !faulting {
						return 0
					}
					calls++
					if name == c.fault {
						return errIllegalAddress
					}
					return 0
				}
			}
			tab := fakeTable(t, fns)
			d := fakeDevice(tab, &gpuInfo{bus: "0000:01:00.0"}, 0, new(uint64))
			d.arrayDev = 0x7000000
			d.end = device.Compute
			if a := d.Submit(&device.Submission{Value: 1, Parts: []device.Part{copyOn(device.Compute)}}); a.Kind != device.Failed {
				t.Fatalf("the submit of value 1 answered %v", a.Kind)
			}
			if !c.first {
				if d.ctxFailed || d.faulted() != "" || d.written != 1 {
					t.Fatalf("a refusal of the call alone: context failed %v, fault %q, written %d; want the value written", d.ctxFailed, d.faulted(), d.written)
				}
				d.split = c.split
				mu.Lock()
				faulting = true
				mu.Unlock()
				var other uint64
				s := &device.Submission{Value: 2, Parts: []device.Part{copyOn(device.Compute)}}
				if c.waits {
					s.Waits = []device.Wait{{Word: &other, Value: 5}}
				}
				if a := d.Submit(s); a.Kind != device.Failed {
					t.Fatalf("the submit of value 2 answered %v", a.Kind)
				}
			}
			if !d.ctxFailed || d.faulted() == "" {
				t.Fatalf("CUDA's %s met a fault of the context's work: context failed %v, fault %q; want the context failed with the fault", c.fault, d.ctxFailed, d.faulted())
			}
			var fault *device.Fault
			if err := d.Sleep(d.Signaled(), time.Second); !errors.As(err, &fault) {
				t.Fatalf("Sleep after the fault answered %v; want a *device.Fault", err)
			}
			mu.Lock()
			before := calls
			mu.Unlock()
			if a := d.Submit(&device.Submission{Value: 3, Parts: []device.Part{copyOn(device.Compute)}}); a.Kind != device.Failed {
				t.Fatalf("the submit of value 3 answered %v", a.Kind)
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != before {
				t.Fatalf("a submit after the fault made %d calls that write its value; want none", calls-before)
			}
		})
	}
}
