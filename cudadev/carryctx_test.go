//go:build linux && (amd64 || arm64)

package cudadev

import (
	"slices"
	"sync"
	"testing"
)

// TestStreamsCarryCtxKeepsStack has open's check of bare stream calls run
// on a thread with contexts pushed on its stack, with CUDA's rules for the
// stack modelled: setting none current pops the top, setting a context
// replaces the top (or pushes onto an empty stack). The check's calls must
// run with no context current, and the thread's stack must come back
// whole, every context in its place; with more contexts than the check
// takes off, it answers false and leaves the stack as it was.
func TestStreamsCarryCtxKeepsStack(t *testing.T) {
	const a, b = 0xa0, 0xb0
	deep := make([]uintptr, carryDepth+1)
	for i := range deep {
		deep[i] = uintptr(0xc0 + i)
	}
	for _, c := range []struct {
		name  string
		stack []uintptr // bottom first
		want  bool
	}{
		{"none", nil, true},
		{"one", []uintptr{a}, true},
		{"two", []uintptr{a, b}, true},
		{"deeper than the check takes off", deep, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			stack := slices.Clone(c.stack)
			var during []uintptr // the current context at each stream call
			top := func() uintptr {
				if len(stack) == 0 {
					return 0
				}
				return stack[len(stack)-1]
			}
			stream := func([6]uintptr) result {
				mu.Lock()
				defer mu.Unlock()
				during = append(during, top())
				return 0
			}
			tab := fakeTable(t, map[string]fakeFn{
				"cuCtxPushCurrent_v2": func(x [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					stack = append(stack, x[0])
					return 0
				},
				"cuCtxPopCurrent_v2": func(x [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					if len(stack) == 0 {
						return errInvalidContext
					}
					*cWord(x[0]) = uint64(top())
					stack = stack[:len(stack)-1]
					return 0
				},
				"cuCtxGetCurrent": func(x [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					*cWord(x[0]) = uint64(top())
					return 0
				},
				"cuCtxSetCurrent": func(x [6]uintptr) result {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case x[0] == 0 && len(stack) > 0:
						stack = stack[:len(stack)-1]
					case x[0] == 0:
					case len(stack) == 0:
						stack = append(stack, x[0])
					default:
						stack[len(stack)-1] = x[0]
					}
					return 0
				},
				"cuEventRecord":     stream,
				"cuStreamWaitEvent": stream,
				"cuStreamQuery":     stream,
			})
			d := &gpu{t: tab}
			got := d.streamsCarryCtx()
			mu.Lock()
			defer mu.Unlock()
			if got != c.want {
				t.Errorf("the check answered %v; want %v", got, c.want)
			}
			if !slices.Equal(stack, c.stack) {
				t.Errorf("the thread's stack is %#x after the check; want %#x", stack, c.stack)
			}
			for _, cur := range during {
				if cur != 0 {
					t.Errorf("a stream call ran with context %#x current; want none (calls %#x)", cur, during)
					break
				}
			}
			if c.want && len(during) != 3 {
				t.Errorf("the check made %d stream calls; want 3", len(during))
			}
		})
	}
}
