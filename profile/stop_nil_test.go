package profile

import (
	"context"
	"testing"
	"time"
)

// TestStopNilContext calls Stop with a nil context, which panics: the
// profile is still taken, a later Stop stops it, and the device can be
// profiled again.
func TestStopNilContext(t *testing.T) {
	d := openHost(t, "profile-stop-nil")
	p, err := StartOptions(Options{Every: time.Millisecond}, d)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Stop with a nil context did not panic")
			}
		}()
		var ctx context.Context
		_ = p.Stop(ctx)
	}()
	if !d.Timed() {
		t.Error("the panicking Stop turned stamping off")
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	default:
		t.Error("the settling goroutine runs after Stop")
	}
	p2, err := Start(d)
	if err != nil {
		t.Fatalf("a profile after Stop: %v", err)
	}
	if err := p2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
