package service

import (
	"context"
	"slices"
	"testing"
)

// TestSaxpyCallbackPanics: a panic of Saxpy's fill or read reaches the
// caller, and the slot the call took goes back: a caller that recovers
// (as net/http does for a handler) loses no slot to it, and the next
// call is served.
func TestSaxpyCallbackPanics(t *testing.T) {
	x, y := vectors(16, 1)
	ok := func(xb, yb []byte) error {
		copy(xb, Body(x, nil))
		copy(yb, Body(y, nil))
		return nil
	}
	for _, c := range []struct {
		name string
		fill func(x, y []byte) error
		read func(y []byte)
	}{
		{"fill", func([]byte, []byte) error { panic("fill panics") }, func([]byte) {}},
		{"read", ok, func([]byte) { panic("read panics") }},
	} {
		svc := hostService(t, 1, hostOpener())
		var v any
		func() {
			defer func() { v = recover() }()
			_ = svc.Saxpy(context.Background(), 2, len(x), c.fill, c.read)
		}()
		if v == nil {
			t.Errorf("%s: the panic did not reach the caller", c.name)
		}
		if n := len(svc.cur.Load().free); n != 1 {
			t.Fatalf("%s: %d of the service's 1 slot free after the panic, want it given back", c.name, n)
		}
		var got []float32
		if err := svc.Saxpy(context.Background(), 2, len(x), ok, func(yb []byte) { got = floats(yb) }); err != nil || !slices.Equal(got, Saxpy(2, x, y)) {
			t.Fatalf("%s: a saxpy after the panic: %v", c.name, err)
		}
	}
}
