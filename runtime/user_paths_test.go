package rig_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// gates holds the gates that user_gate launches wait on, by id.
var (
	gateMu sync.Mutex
	gates  = map[uint64]chan struct{}{}
	gateN  atomic.Uint64
)

func newGate() (uint64, func()) {
	id := gateN.Add(1)
	ch := make(chan struct{})
	gateMu.Lock()
	gates[id] = ch
	gateMu.Unlock()
	var once sync.Once
	return id, func() { once.Do(func() { close(ch) }) }
}

func init() {
	// user_gate: params: gate id (0..8), address (8..16), n (16..24),
	// byte (24..32). Waits for the gate, then fills n bytes at address
	// with the byte. One thread.
	hostdev.RegisterParams("user_gate", 32, func(k *hostdev.Ctx) {
		gateMu.Lock()
		ch := gates[k.Uint64(0)]
		gateMu.Unlock()
		select {
		case <-ch:
		case <-k.Stopped():
			return
		}
		if n := int(k.Uint64(16)); n > 0 {
			b := k.Bytes(k.Uint64(8), n)
			for i := range b {
				b[i] = byte(k.Uint64(24))
			}
		}
	})
	// user_add: adds 1 to each of n bytes at address (0..8), n (8..16).
	hostdev.RegisterParams("user_add", 16, func(k *hostdev.Ctx) {
		b := k.Bytes(k.Uint64(0), int(k.Uint64(8)))
		for i := range b {
			b[i]++
		}
	})
}

// gateSub is a submission of an user_gate launch on d, whose buffer 0
// it writes; gateRun is a run of it that fills n bytes of buffer 0 with c
// once gate id opens.
func gateSub(t *testing.T, d *rig.Device) *rig.Submission {
	t.Helper()
	return sub(t, d, rig.Launch(fn(t, d, "user_gate"), 32, rig.Write(0, 8)))
}

func gateRun(s *rig.Submission, id uint64, n int, c byte) *rig.Run {
	r := s.Take()
	p := r.Params(0)
	binary.LittleEndian.PutUint64(p[0:], id)
	binary.LittleEndian.PutUint64(p[16:], uint64(n))
	binary.LittleEndian.PutUint64(p[24:], uint64(c))
	return r
}

func addSub(t *testing.T, d *rig.Device) *rig.Submission {
	t.Helper()
	return sub(t, d, rig.Launch(fn(t, d, "user_add"), 16, rig.ReadWrite(0, 0)))
}

func addRun(s *rig.Submission, n int) *rig.Run {
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0)[8:], uint64(n))
	return r
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestLostPinnedCopies: once a device is lost, later calls fail at once:
// Upload and Download of a Pinned buffer return the loss, as they do for a
// Device buffer, so that a server's probe through a Pinned buffer sees it.
func TestLostPinnedCopies(t *testing.T) {
	ctx := tctx(t)
	d := host(t, hostdev.Config{})
	x := alloc(t, d, rig.PinnedMemory, 64)
	y := alloc(t, d, rig.DeviceMemory, 64)
	if _, err := sub(t, d, rig.Launch(fn(t, d, "fault"), 0)).Take().Do(ctx); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("the fault kernel answered %v", err)
	}
	if err := rig.Upload(ctx, y, 0, []byte{1, 2}); !errors.Is(err, rig.ErrLost) {
		t.Fatalf("Upload to Device memory of a lost device: %v", err)
	}
	if err := rig.Upload(ctx, x, 0, []byte{1, 2}); !errors.Is(err, rig.ErrLost) {
		t.Errorf("Upload to Pinned memory of a lost device answered %v, want an error matching ErrLost (as for Device memory)", err)
	}
	if err := rig.Download(ctx, make([]byte, 2), x, 0); !errors.Is(err, rig.ErrLost) {
		t.Errorf("Download from Pinned memory of a lost device answered %v, want an error matching ErrLost (as for Device memory)", err)
	}
}

// TestHangCauseNamesDeviceWaitedFor: device b (a hang bound of 50 ms) has
// work that waits, on b's side, for a write of device a (no hang bound)
// that runs 150 ms. b is lost by its bound, and the cause names a, the
// device whose point its work waited for.
func TestHangCauseNamesDeviceWaitedFor(t *testing.T) {
	ctx := tctx(t)
	a := host(t, hostdev.Config{})
	b := host(t, hostdev.Config{Hang: 50 * time.Millisecond})
	x := alloc(t, a, rig.PinnedMemory, 64)
	id, open := newGate()
	defer open()
	if _, err := gateRun(gateSub(t, a), id, 64, 1).Submit(ctx, x); err != nil {
		t.Fatal(err)
	}
	pb, err := addRun(addSub(t, b), 64).Submit(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	open()
	err = pb.Wait(ctx)
	if err == nil {
		return
	}
	var le *rig.LostError
	if !errors.As(err, &le) {
		t.Fatalf("b's wait: %v", err)
	}
	if !strings.Contains(le.Cause, a.Name()) {
		t.Errorf("b, whose work only waited on device %s, was lost with cause %q, which blames b's own progress and does not name %s", a.Name(), le.Cause, a.Name())
	}
}

// lateCtx is a context whose deadline is the moment expire is called: its
// Done closes, and Err answers DeadlineExceeded, from the first look at
// it after expire, so that a test chooses when the deadline passes.
type lateCtx struct {
	context.Context
	mu      sync.Mutex
	expired bool
	at      time.Time
	done    chan struct{}
}

func newLateCtx() *lateCtx {
	return &lateCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *lateCtx) expire() {
	c.mu.Lock()
	c.expired, c.at = true, time.Now()
	c.mu.Unlock()
}

func (c *lateCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at, c.expired
}

func (c *lateCtx) Done() <-chan struct{} { return c.done }

func (c *lateCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.expired {
		return nil
	}
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return context.DeadlineExceeded
}

// TestHostWaitCloseAnswersNoStrayCancel: Submit on d waits on the host
// for a's point (a keeps a word of its own); the caller's deadline passes
// and d is closed. Submit answers the caller's ctx.Err() or d's close,
// never the context.Canceled of the wait that d's close ended.
func TestHostWaitCloseAnswersNoStrayCancel(t *testing.T) {
	a := host(t, hostdev.Config{OwnWord: true})
	a.SetWaitSpin(0)
	x := alloc(t, a, rig.PinnedMemory, 64)
	id, open := newGate()
	defer open()
	if _, err := gateRun(gateSub(t, a), id, 64, 1).Submit(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	d, err := rig.Open(context.Background(), hostdev.Open(hostdev.Config{Name: "user-hostwait"}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(); <-d.Done() }()
	s := addSub(t, d)
	ctx := newLateCtx()
	got := make(chan error, 1)
	go func() {
		_, err := addRun(s, 64).Submit(ctx, x)
		got <- err
	}()
	// The submission waits on a's point on the host.
	for end := time.Now().Add(5 * time.Second); a.Waiting() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the submission did not wait on a's point")
		}
	}
	ctx.expire()
	_ = d.Close()
	select {
	case err = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("Submit did not return after its device closed")
	}
	if errors.Is(err, context.Canceled) || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rig.ErrClosed)) {
		t.Errorf("Submit answered %q (matches context.Canceled: %v); want ctx.Err() (%v) or the close of %s", err, errors.Is(err, context.Canceled), context.DeadlineExceeded, d.Name())
	}
}
