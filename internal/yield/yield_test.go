package yield

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var p Pacer
	p.Start(t0)
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{
		{0, false},
		{Every / 2, false},
		{Every - 1, false},
		{Every, true},
		{Every + Every/2, false},
		{2*Every - 1, false},
		{2 * Every, true},
		{5 * Every, true},
		{5*Every + 1, false},
	} {
		if got := p.Maybe(at(c.at)); got != c.want {
			t.Errorf("Maybe at %v after the start = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestPacerZero(t *testing.T) {
	var p Pacer
	now := time.Now()
	if !p.Maybe(now) {
		t.Error("a zero Pacer did not yield at its first Maybe")
	}
	if p.Maybe(now.Add(Every / 2)) {
		t.Error("a Pacer yielded again within Every")
	}
}
