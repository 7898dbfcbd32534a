package rig

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/device"
	"github.com/rig-go/rig/hostdev"
)

// A's write of X is dropped by A's close. D's copy X->Y waits on the
// device side for A's write, and E's copy Y->Z waits on the device side
// for D's copy. A's close loses D (failDebtors), and then A's Stop raises
// A's word: D's work runs its copy (of data never written), and E's work
// its copy of that. E's work waited for a point of D that is never
// honestly reached, so E is lost with D, before A's word rises, and its
// point does not answer nil. D's supervisor is held in the driver's Sleep
// (a real driver's sleeps up to sleepStill), so that it does not fail
// E itself before the work runs.
func TestDebtOfADebtor(t *testing.T) {
	fa := newFake()
	fa.held = true
	a := openFake(t, "debtchain-a", fa)
	fd := newFake()
	fd.held, fd.peer = true, true
	d := openFake(t, "debtchain-d", fd)
	fe := newFake()
	fe.held, fe.peer = true, true
	e := openFake(t, "debtchain-e", fe)

	pd, pe, _ := debtChain(t, a, d, e, device.DeviceMemory, nil)
	fe.mu.Lock()
	if n := len(fe.submitted); n != 1 || len(fe.submitted[0].Waits) != 1 || fe.submitted[0].Waits[0].Word != d.word {
		fe.mu.Unlock()
		t.Fatalf("E's work waits on %v, want D's word", fe.submitted)
	}
	fe.mu.Unlock()

	// Hold D's supervisor in the driver's Sleep, as a real driver's Sleep
	// holds it until D's word moves or sleepStill passes.
	var armed atomic.Bool
	in := make(chan struct{}, 1)
	release := make(chan struct{})
	hook := func(uint64) {
		if armed.Load() {
			select {
			case in <- struct{}{}:
			default:
			}
			<-release
		}
	}
	fd.onSleep.Store(&hook)
	armed.Store(true)
	select {
	case <-in:
	case <-time.After(5 * time.Second):
		t.Fatal("D's supervisor never slept")
	}
	armed.Store(false)

	// A's close drops A's fill, loses D, and raises A's word.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if d.Err() == nil {
		t.Fatal("A's close did not lose D, whose work waits for A's dropped fill")
	}
	// The hardware: D's wait on A's word is satisfied, so D's copy runs,
	// and then E's.
	fd.complete(pd.Value())
	fe.complete(pe.Value())
	close(release)
	// D's supervisor now acts on D's loss.
	time.Sleep(50 * time.Millisecond)

	if err := pd.Wait(context.Background()); err == nil {
		t.Fatal("D's point answers nil")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := pe.Wait(ctx); err == nil {
		t.Fatalf("E's point answers nil, though E's work copied what D's copy, which waited for a fill that A's close dropped, wrote (D: %v; E: %v)", d.Err(), e.Err())
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("E's wait hangs")
	}
}

func init() {
	// debt_gate holds its device until the device stops.
	hostdev.RegisterParams("debt_gate", 0, func(k *hostdev.Ctx) { <-k.Stopped() })
}

// TestDebtOfADebtorHost is TestDebtOfADebtor on the host
// driver, with no hook: A runs a launch that ends at A's stop, then a
// fill of X with 7s, which A's close drops; D copies X to Y and E copies
// Y to Z, each waiting on the device side. A waiter of D's point parks,
// so that D's supervisor sleeps in the driver. Once A closes, E's point
// must not answer nil while Z does not hold the 7s.
func TestDebtOfADebtorHost(t *testing.T) {
	bad := 0
	const rounds = 20
	for i := range rounds {
		if debtChainHostRound(t, i) {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d rounds of %d: E's point answered nil, and Z does not hold what A's dropped fill would have written", bad, rounds)
	}
}

func debtChainHostRound(t *testing.T, i int) bool {
	ctx := context.Background()
	open := func(n string) *Device {
		dv, err := Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("debtchain-host-%s-%d", n, i)}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dv.Close(); <-dv.Done() })
		return dv
	}
	a, d, e := open("a"), open("d"), open("e")
	d.SetWaitSpin(0)
	pd, pe, z := debtChain(t, a, d, e, device.PinnedMemory, func() {
		// A launch that runs until A stops, so that A's close drops
		// the fill behind it.
		img, err := a.LoadImage(hostdev.ImageOf("debt_gate"))
		if err != nil {
			t.Fatal(err)
		}
		g, err := img.Resolve("debt_gate")
		if err != nil {
			t.Fatal(err)
		}
		gate, err := NewSubmission(a, Launch(g, 0))
		if err != nil {
			t.Fatal(err)
		}
		submit(t, gate)
	})
	go func() { _ = pd.Wait(ctx) }()
	for d.Waiting() != 1 {
		time.Sleep(10 * time.Microsecond)
	}
	time.Sleep(time.Millisecond)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	errE := pe.Wait(wctx)
	if errors.Is(errE, context.DeadlineExceeded) {
		t.Fatal("E's wait hangs")
	}
	if errE == nil && z.Bytes()[0] != 7 {
		t.Logf("round %d: E's point answers nil, Z[0] = %d (D: %v)", i, z.Bytes()[0], d.Err())
		return true
	}
	return false
}

// debtChain allocates X on a, Y on d and Z (of kind zKind) on e, runs
// first on a where it is not nil, and then submits a fill of X with 7s on
// a, a copy of X into Y on d and a copy of Y into Z on e, each device's
// work waiting on the device side for the one before. It returns the
// points of the copies, and Z.
func debtChain(t *testing.T, a, d, e *Device, zKind device.Memory, first func()) (pd, pe Point, z *Buffer) {
	t.Helper()
	alloc := func(on *Device, k device.Memory) *Buffer {
		b, err := on.Alloc(k, 64)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	x, y := alloc(a, device.DeviceMemory), alloc(d, device.DeviceMemory)
	z = alloc(e, zKind)
	if first != nil {
		first()
	}
	sub := func(on *Device, p Part) *Submission {
		s, err := NewSubmission(on, p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	submit(t, sub(a, FillBytes(0, 0, 64, 7)), x)
	pd = submit(t, sub(d, Copy(0, 0, 1, 0, 64)), x, y)
	pe = submit(t, sub(e, Copy(0, 0, 1, 0, 64)), y, z)
	return pd, pe, z
}
