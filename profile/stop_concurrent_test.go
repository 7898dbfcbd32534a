package profile

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// TestStopConcurrentContext calls Stop while another Stop waits for a long
// value: the second returns when its own context ends, and a Stop after
// the first returned answers the first's error.
func TestStopConcurrentContext(t *testing.T) {
	bg, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := openHost(t, "profile-stop-concurrent")
	s := submission(t, d, rig.Launch(resolve(t, d, "sleep"), 8))
	p, err := StartOptions(Options{Every: time.Millisecond}, d)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0), uint64(2*time.Second))
	if _, err := r.Submit(bg); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- p.Stop(bg) }()
	for d.Timed() {
		time.Sleep(100 * time.Microsecond) // until the first Stop began
	}
	ctx, cancelStop := context.WithTimeout(bg, 10*time.Millisecond)
	defer cancelStop()
	began := time.Now()
	err = p.Stop(ctx)
	// A Stop that waited for the first would wait for the 2 s kernel.
	if took := time.Since(began); took > time.Second {
		t.Errorf("a Stop whose context ended after 10ms returned after %v", took)
	}
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
