//go:build linux && (amd64 || arm64)

package cudadev

import (
	"sync/atomic"
	"testing"
)

// TestStopMeetsFault has the context's work fault while Stop keeps it:
// the streams' queries tell that the work still runs, then Stop's write
// of the last value, or the making or recording of an event behind the
// work, meets the fault (CUDA_ERROR_ILLEGAL_ADDRESS). No later work runs
// in the context, the write enqueued none: Stop must raise the word to
// the last value, so that rig gives the device's memory back, and take
// the GPU as faulted, rather than keep work whose end nothing tells.
func TestStopMeetsFault(t *testing.T) {
	for _, at := range []string{"cuStreamWriteValue64_v2", "cuEventCreate", "cuEventRecord"} {
		t.Run(at, func(t *testing.T) {
			fns := map[string]fakeFn{
				"cuStreamQuery": func([6]uintptr) result { return errNotReady },
				"cuEventCreate": fakeEvents(),
				"cuEventQuery":  func([6]uintptr) result { return errNotReady },
			}
			fns[at] = func([6]uintptr) result { return errIllegalAddress }
			tab := fakeTable(t, fns)
			g, d, word := stoppedFake(t, tab, 3, 7, 5)
			g.mu.Lock()
			kept, fault := len(g.kept), g.fault
			g.mu.Unlock()
			if w := atomic.LoadUint64(word); w != 7 || kept != 0 || fault == "" || d.faulted() == "" {
				t.Fatalf("after Stop: word %d, %d kept, the GPU's fault %q, the device's %q; want word 7, none kept, a fault", w, kept, fault, d.faulted())
			}
		})
	}
}
