//go:build linux && (amd64 || arm64)

package cudadev

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestKeptUnusableContext stops a device whose work still runs, then has
// the work end with an error that leaves the context unusable, though
// CUDA's fault list of launches does not name it: an uncorrectable ECC or
// NVLink error, a contained error, an unknown error. The next open of the
// GPU must take it as a fault of the work: the stopped device's word
// reaches its last value, so that rig gives its memory back and its Done
// closes, and the GPU is taken as faulted.
func TestKeptUnusableContext(t *testing.T) {
	for _, code := range []result{214, 220, 226, 709, 721, 810, 999} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var mu sync.Mutex
			ended := false
			tab := fakeTable(t, map[string]fakeFn{
				"cuStreamQuery": func([6]uintptr) result { return errNotReady },
				"cuEventCreate": fakeEvents(),
				"cuEventQuery": func([6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if ended {
						return code
					}
					return errNotReady
				},
			})
			g := &gpuInfo{bus: "0000:01:00.0"}
			word := new(uint64)
			*word = 3
			d := fakeDevice(tab, g, 0, word)
			d.last, d.written = 7, 7
			if err := d.Stop(""); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			ended = true
			mu.Unlock()
			_ = settleOpen(tab, g, 1)
			g.mu.Lock()
			kept, fault := len(g.kept), g.fault
			g.mu.Unlock()
			if w := atomic.LoadUint64(word); w != 7 || kept != 0 || fault == "" {
				t.Fatalf("CUresult %d ended the kept work with word %d, %d kept, fault %q; want word 7, none kept, a fault", code, w, kept, fault)
			}
		})
	}
}
