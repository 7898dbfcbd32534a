//go:build linux && (amd64 || arm64)

package cudadev

import (
	"slices"
	"sync"
	"testing"
)

// TestEnterCtxGetRefused has CUDA refuse the push of a GPU's context and
// then the read of the thread's context (as CUDA_ERROR_DEINITIALIZED
// does, once CUDA shuts down), on a frame that an earlier call pushed and
// popped another GPU's context with: the call must not set that context
// back afterwards, since the thread never had it; it restores none. Where
// CUDA reads the thread's context, the call sets that one back.
func TestEnterCtxGetRefused(t *testing.T) {
	const deinitialized = 4
	const gpu1, gpu2 = 0xc1, 0xc2
	for _, c := range []struct {
		name      string
		refuseGet bool
		sets      []uintptr // the contexts set while entering gpu2's
	}{
		{"get refused", true, []uintptr{gpu2}},
		{"get answered", false, []uintptr{gpu2, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var cur uintptr // the thread's current context (the thread is locked)
			var stack, sets []uintptr
			refuse := false
			tab := fakeTable(t, map[string]fakeFn{
				"cuCtxPushCurrent_v2": func(a [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if refuse {
						return deinitialized
					}
					stack = append(stack, cur)
					cur = a[0]
					return 0
				},
				"cuCtxPopCurrent_v2": func(a [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					*cWord(a[0]) = uint64(cur)
					cur, stack = stack[len(stack)-1], stack[:len(stack)-1]
					return 0
				},
				"cuCtxGetCurrent": func(a [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if refuse && c.refuseGet {
						return deinitialized
					}
					*cWord(a[0]) = uint64(cur)
					return 0
				},
				"cuCtxSetCurrent": func(a [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					sets = append(sets, a[0])
					cur = a[0]
					return 0
				},
			})
			f := new(frame)
			leaveCtx(tab, f, gpu1, enterCtx(tab, f, gpu1))
			mu.Lock()
			refuse = true
			mu.Unlock()
			prev := enterCtx(tab, f, gpu2)
			mu.Lock()
			inside := cur
			mu.Unlock()
			leaveCtx(tab, f, gpu2, prev)
			mu.Lock()
			defer mu.Unlock()
			if inside != gpu2 {
				t.Fatalf("the call ran in context %#x; want %#x", inside, gpu2)
			}
			if !slices.Equal(sets, c.sets) || cur == gpu1 {
				t.Fatalf("the contexts set were %#x, leaving %#x current; want %#x, never %#x, which the thread never had", sets, cur, c.sets, gpu1)
			}
		})
	}
}
