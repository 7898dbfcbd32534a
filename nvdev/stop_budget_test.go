package nvdev

import (
	"testing"

	"github.com/rig-go/rig/device"
)

// TestStopGivesBudgetBack stops a timeline that holds a place in the
// GPU's budget of interrupts: one Room's plan took and no Submit raised,
// or one a plan gave back to a Sleep that has since returned. Stop gives
// the place back, so that the next timeline of the GPU, which shares the
// budget of one place, raises the interrupt for its value.
func TestStopGivesBudgetBack(t *testing.T) {
	for _, how := range []string{"planned", "held"} {
		t.Run(how, func(t *testing.T) {
			a, _, _ := budgetOfOne(t, Config{})
			m := a.alloc(device.PinnedMemory, 4096)
			parkWaiters(a)
			switch how {
			case "planned":
				s := device.Submission{Value: a.v + 1, Parts: []device.Part{fillPart(qCopy, m, 0, 1, 7)}}
				if r := a.d.Room(&s); r.Kind != device.RoomOK {
					t.Fatalf("room of one fill: %+v", r)
				}
				if !a.d.wk.planned {
					t.Fatal("Room's plan took no place of the budget")
				}
			case "held":
				// A Sleep holds a place, a plan takes it and gives it
				// back to the flag, and the Sleep has returned.
				if !a.d.holdInterrupt() {
					t.Fatal("no place to hold in a fresh budget")
				}
				a.d.mu.Lock()
				planned := a.d.planInterrupt(a.v + 1)
				a.d.unplanInterrupt()
				a.d.mu.Unlock()
				if !planned || !a.d.wk.held.Load() {
					t.Fatalf("planned %v, held %v; want the place given back to the flag", planned, a.d.wk.held.Load())
				}
			}
			budget := a.d.budget
			if err := a.d.Stop(""); err != nil {
				t.Fatal(err)
			}
			if got := budget.taken.Load(); got != 0 {
				t.Errorf("the budget counts %d places taken after the timeline stopped, want 0", got)
			}

			b := openRaw(t, Config{Timeline: 1})
			withEvent(b)
			b.d.budget = budget
			mb := b.alloc(device.PinnedMemory, 4096)
			parkWaiters(b)
			b.wait(b.submit(nil, fillPart(qCompute, mb, 0, 8, 1)))
			if got := b.d.wk.intrs.Load(); got != 1 {
				t.Errorf("the next timeline's value raised %d interrupts, want 1: the stopped timeline kept the budget's place", got)
			}
		})
	}
}
