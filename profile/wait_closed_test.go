package profile

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	rig "github.com/rig-go/rig/runtime"
)

// TestProfileWaitAfterClose profiles a and b, where b's copy waits for a
// slow launch on a; then a is closed and c, outside the profile, is
// opened on a's timeline word, and b's copy waits for a slow launch on c.
// The first wait names a; the second names no device of the profile,
// rather than a, whose word c took.
func TestProfileWaitAfterClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := openHost(t, "profile-wait-a")
	b := openHost(t, "profile-wait-b")
	p, err := StartOptions(Options{Every: time.Millisecond}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	bufB := alloc(t, b, 4096)
	// slowCopy makes b's copy from src, of d, wait for a launch on d that
	// writes src for 20 ms.
	slowCopy := func(d *rig.Device, src *rig.Buffer) {
		t.Helper()
		slow := submission(t, d, rig.Launch(resolve(t, d, "sleep"), 8, rig.Uses(0, rig.Writes)))
		r := slow.Take()
		binary.LittleEndian.PutUint64(r.Params(0), uint64(20*time.Millisecond))
		if _, err := r.Submit(ctx, src); err != nil {
			t.Fatal(err)
		}
		cp := submission(t, b, rig.Copy(0, 0, 1, 0, 4096))
		pt, err := cp.Take().Submit(ctx, src, bufB)
		if err != nil {
			t.Fatal(err)
		}
		if err := pt.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	slowCopy(a, alloc(t, a, 4096))
	word := a.Word()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-a.Done()
	c := openHost(t, "profile-wait-c")
	if c.Word() != word {
		t.Skip("the device opened after the close did not take the closed one's word")
	}
	slowCopy(c, alloc(t, c, 4096))
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var copies []Span
	for _, sp := range p.Spans() {
		if sp.Device == "profile-wait-b" {
			copies = append(copies, sp)
		}
	}
	if len(copies) != 2 {
		t.Fatalf("b has spans %+v, want two copies", copies)
	}
	if w := copies[0].Waits; len(w) != 1 || w[0].Device != "profile-wait-a" {
		t.Errorf("the copy before the close waits on %+v, want a value of profile-wait-a", w)
	}
	if w := copies[1].Waits; len(w) != 0 {
		t.Errorf("the copy after the close waits on %+v, want none: c is not in the profile", w)
	}
}
