package timeline

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGiveNotTaken gives back a slot twice, and slots outside the array:
// each Give panics naming the slot, and Take and Give still answer after
// the panics.
func TestGiveNotTaken(t *testing.T) {
	i, _, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	Give(i)
	for _, slot := range []int{-1, Len, i} {
		got := make(chan any, 1)
		go func() {
			defer func() { got <- recover() }()
			Give(slot)
		}()
		select {
		case r := <-got:
			if r == nil {
				t.Errorf("Give(%d) of a slot not taken did not panic", slot)
			} else if msg := fmt.Sprint(r); !strings.Contains(msg, fmt.Sprint(slot)) {
				t.Errorf("Give(%d) panicked with %q, which does not name the slot", slot, msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Give(%d) did not return in 5 s: the array's lock is held", slot)
		}
	}
	done := make(chan error, 1)
	go func() {
		j, _, err := Take()
		if err == nil {
			Give(j)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Take did not return in 5 s after the refused Gives: the array's lock is held")
	}
}
