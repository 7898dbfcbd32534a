package profile

import (
	"context"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// TestProfileDroppedRecordsReleased profiles more values than MaxSpans:
// the recorder lets the records of the spans dropped go as it lets those
// kept go, rather than keep every later value's until its bound.
func TestProfileDroppedRecordsReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := openHost(t, "profile-dropped-records")
	s := submission(t, d, rig.Launch(resolve(t, d, "empty"), 0))
	p, err := StartOptions(Options{Every: time.Hour, MaxSpans: 5}, d)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	for range 200 {
		if _, err := s.Take().Submit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Last().Wait(ctx); err != nil {
		t.Fatal(err)
	}
	p.settle(false)
	if n := p.Dropped(); n != 195 {
		t.Fatalf("%d spans dropped, want 195", n)
	}
	rec := p.observers[0]
	rec.mu.Lock()
	left := len(rec.recs) - rec.head
	rec.mu.Unlock()
	if left != 0 {
		t.Errorf("the recorder keeps %d records of values settled", left)
	}
}
