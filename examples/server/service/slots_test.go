package service

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	rig "github.com/rig-go/rig/runtime"
)

// TestSlots: Config.Slots of 0 is DefaultSlots, a positive count up to
// MaxSlots is kept, and NewService refuses a negative count or one above
// MaxSlots (whose queue of free slots it would allocate whole, or could
// not make), naming it, before it opens a device.
func TestSlots(t *testing.T) {
	for _, slots := range []int{0, 3, MaxSlots} {
		svc := hostService(t, slots, hostOpener())
		want := slots
		if slots == 0 {
			want = DefaultSlots
		}
		if svc.slots != want {
			t.Errorf("Slots %d: the service has %d slots, want %d", slots, svc.slots, want)
		}
		if got := cap(svc.cur.Load().free); got != want {
			t.Errorf("Slots %d: the device holds %d slots, want %d", slots, got, want)
		}
	}
	for _, slots := range []int{-1, math.MinInt, MaxSlots + 1, min(1<<40, math.MaxInt), math.MaxInt} {
		var opens atomic.Int32
		host := hostOpener()
		open := func(ctx context.Context, seat int) (*rig.Device, error) {
			opens.Add(1)
			return host(ctx, seat)
		}
		svc, err := NewService(context.Background(), Config{Open: open, Driver: "host", Slots: slots})
		if err == nil {
			_ = svc.Close(context.Background())
			t.Errorf("Slots %d: NewService made a service of %d slots, want an error", slots, svc.slots)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "Slots") || !strings.Contains(msg, fmt.Sprint(slots)) {
			t.Errorf("Slots %d: the error %q names not the field and its value", slots, msg)
		}
		if n := opens.Load(); n != 0 {
			t.Errorf("Slots %d: NewService opened %d devices before it refused", slots, n)
		}
	}
}
