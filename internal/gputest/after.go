package gputest

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	rig "github.com/rig-go/rig/runtime"
)

// AfterRounds is the rounds RunAfter makes, and AfterSpin how long the
// earlier kernel of each spins.
const (
	AfterRounds = 10
	AfterSpin   = 200 * time.Microsecond
)

// RunAfter checks Run.After between two timelines of one GPU, with spin_ns
// (testkernels.Spin) resolved on each: in each round a's kernel spins for
// AfterSpin and b's, submitted at once after it with a's point given to
// Run.After and no buffer in common, spins for no time. On the GPU's own
// clock (%globaltimer, which both timelines read), b's kernel must start
// once a's has ended, and b's point must find a's reached. It logs how
// long after a's kernel's end b's started, the GPU-side wait's cost.
func RunAfter(t *testing.T, a, b *rig.Device, spinA, spinB *rig.Function) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	outA, err := a.Alloc(device.PinnedMemory, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer outA.Free()
	outB, err := b.Alloc(device.PinnedMemory, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer outB.Free()
	sa, err := rig.NewSubmission(a, rig.Launch(spinA, 16, rig.Write(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := rig.NewSubmission(b, rig.Launch(spinB, 16, rig.Write(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	gaps := make([]time.Duration, 0, AfterRounds)
	for round := range AfterRounds + 2 {
		clear(outA.Bytes())
		clear(outB.Bytes())
		ra := sa.Take()
		ra.Threads(0, 32, 1, 1)
		binary.LittleEndian.PutUint64(ra.Params(0)[8:], uint64(AfterSpin))
		pa, err := ra.Submit(ctx, outA)
		if err != nil {
			t.Fatalf("%s: %v", a.Name(), err)
		}
		rb := sb.Take()
		rb.Threads(0, 32, 1, 1)
		rb.After(pa)
		pb, err := rb.Submit(ctx, outB)
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		if err := pb.Wait(ctx); err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		if !pa.Reached() {
			t.Fatalf("round %d: %s's point reached before %s's, which it runs after", round, b.Name(), a.Name())
		}
		aEnd := binary.LittleEndian.Uint64(outA.Bytes()[8:])
		bStart := binary.LittleEndian.Uint64(outB.Bytes())
		if aEnd == 0 || bStart == 0 {
			t.Fatalf("round %d: the kernels wrote no clock (%d, %d)", round, aEnd, bStart)
		}
		if bStart < aEnd {
			t.Fatalf("round %d: %s's kernel started %v before %s's ended, which it runs after", round, b.Name(), time.Duration(aEnd-bStart), a.Name())
		}
		if round >= 2 { // the first rounds load the functions
			gaps = append(gaps, time.Duration(bStart-aEnd))
		}
	}
	slices.Sort(gaps)
	t.Logf("%s after %s (Run.After, no buffer in common), %d rounds: its kernel started %v after the other's ended (median; %v to %v)",
		b.Name(), a.Name(), len(gaps), gaps[len(gaps)/2], gaps[0], gaps[len(gaps)-1])
}
