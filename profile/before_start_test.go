package profile

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// TestProfileValueBeforeStart stops a profile before its last value
// completed, as a Stop whose context ends does, and starts another at
// once: the value of the first profile, which completes during the
// second, is not in the second.
func TestProfileValueBeforeStart(t *testing.T) {
	bg, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := openHost(t, "profile-before-start")
	s := submission(t, d, rig.Launch(resolve(t, d, "sleep"), 8))
	p, err := StartOptions(Options{Every: time.Millisecond}, d)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Take()
	binary.LittleEndian.PutUint64(r.Params(0), uint64(50*time.Millisecond))
	old, err := r.Submit(bg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancelStop := context.WithTimeout(bg, time.Millisecond)
	defer cancelStop()
	if err := p.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop before the last value completed returned %v", err)
	}
	p2, err := StartOptions(Options{Every: time.Millisecond}, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Wait(bg); err != nil {
		t.Fatal(err)
	}
	r = s.Take()
	binary.LittleEndian.PutUint64(r.Params(0), 0)
	if _, err := r.Submit(bg); err != nil {
		t.Fatal(err)
	}
	if err := p2.Stop(bg); err != nil {
		t.Fatal(err)
	}
	spans := p2.Spans()
	for _, sp := range spans {
		if sp.Value == old.Value() {
			t.Errorf("the second profile holds value %d of the first: %+v", sp.Value, sp)
		}
	}
	if len(spans) != 1 {
		t.Errorf("%d spans, want the second profile's 1", len(spans))
	}
}
