package rig

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
)

// afterRead is the fake whose Signaled reads its own word and then runs
// the hook, so that the word may move after a reader took its value.
type afterRead struct {
	*fake
	hook atomic.Pointer[func()]
}

func (a *afterRead) Signaled() uint64 {
	v := a.fake.own.Load()
	if h := a.hook.Load(); h != nil {
		(*h)()
	}
	return v
}

// TestWaitOnPointReachedBeforeLoss: a Wait that read the word before its
// point was reached, and finds the device lost by a loss whose Reached
// covers the point, returns nil, as Reached does and as a Wait that read
// the word after it does: the point's work completed before the loss.
func TestWaitOnPointReachedBeforeLoss(t *testing.T) {
	for _, pending := range []bool{false, true} {
		name := "committed"
		if pending {
			name = "pending"
		}
		t.Run(name, func(t *testing.T) {
			f := newFake()
			f.held, f.pending = true, pending
			f.keepOwnWord(0)
			a := &afterRead{fake: f}
			d := openWith(t, device.Opener{Name: "wait-reached-loss-" + name, Make: func(*uint64) (device.Driver, error) { return a, nil }})
			p := submit(t, empty(t, d))
			// The wait reads the word (the point not reached); then the
			// point's work completes, and a later fault loses the device
			// with the word at the point.
			var once atomic.Bool
			hook := func() {
				buf := make([]byte, 16<<10)
				if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), "Point.passed") || !once.CompareAndSwap(false, true) {
					return
				}
				f.own.Store(p.v)
				d.loseAt("a fault after the point", &device.Fault{Why: "a fault after the point"}, p.v)
			}
			a.hook.Store(&hook)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := p.Wait(ctx)
			a.hook.Store(nil)
			if !once.Load() {
				t.Fatal("the wait did not read the word")
			}
			if !p.Reached() {
				t.Fatal("Reached: false, for a point the loss's Reached covers")
			}
			if err != nil {
				t.Fatalf("Wait on a point reached before the loss: %v, want nil", err)
			}
			if err := p.Wait(ctx); err != nil {
				t.Fatalf("a second Wait: %v, want nil", err)
			}
		})
	}
}
