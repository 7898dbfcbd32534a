package profile

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// stopGate holds the profile_test_gated launches until the test closes
// the channel it points to, or their device stops.
var stopGate atomic.Pointer[chan struct{}]

func init() {
	hostdev.RegisterParams("profile_test_gated", 0, func(k *hostdev.Ctx) {
		select {
		case <-*stopGate.Load():
		case <-k.Stopped():
		}
	})
}

// TestStopConcurrentContext calls Stop while another Stop waits for a
// value held until the test releases it: the second returns when its own
// context ends, while the first still waits, and a Stop after the first
// returned answers the first's error.
func TestStopConcurrentContext(t *testing.T) {
	bg, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gate := make(chan struct{})
	stopGate.Store(&gate)
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	d := openHost(t, "profile-stop-concurrent")
	s := submission(t, d, rig.Launch(resolve(t, d, "profile_test_gated"), 0))
	p, err := StartOptions(Options{Every: time.Millisecond}, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take().Submit(bg); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- p.Stop(bg) }()
	for d.Timed() {
		time.Sleep(100 * time.Microsecond) // until the first Stop began
	}
	ctx, cancelStop := context.WithTimeout(bg, 10*time.Millisecond)
	defer cancelStop()
	second := make(chan error, 1)
	go func() { second <- p.Stop(ctx) }()
	select {
	case err = <-second:
	case <-time.After(30 * time.Second):
		// A bound on a Stop that waits for the first, whose value is held
		// until the test releases it: not a measure of speed.
		release()
		t.Fatalf("a Stop whose context ended after 10ms returned only once the first Stop could end: %v", <-second)
	}
	select {
	case err := <-first:
		t.Fatalf("the first Stop returned %v while its value was still held", err)
	default:
	}
	release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Stop whose context ended returned %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Errorf("a Stop after the profile stopped returned %v, want the first Stop's nil", err)
	}
	if n := len(p.Spans()); n != 1 {
		t.Errorf("%d spans, want 1", n)
	}
}
