package device

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestHangMsOf checks the rule that turns a driver's hang bound into
// Facts.HangMs: whole milliseconds, at least 1 for a positive bound, 0 for
// none, and a bound past what an int holds refused, naming it.
func TestHangMsOf(t *testing.T) {
	for _, tc := range []struct {
		bound time.Duration
		most  int64
		want  int
		err   string
	}{
		{bound: 0, most: math.MaxInt, want: 0},
		{bound: -1, most: math.MaxInt, want: 0},
		{bound: -time.Hour, most: math.MaxInt, want: 0},
		{bound: math.MinInt64, most: math.MaxInt, want: 0},
		{bound: 1, most: math.MaxInt, want: 1},
		{bound: time.Millisecond - 1, most: math.MaxInt, want: 1},
		{bound: time.Millisecond, most: math.MaxInt, want: 1},
		{bound: 2*time.Millisecond - 1, most: math.MaxInt, want: 1},
		{bound: 1500 * time.Millisecond, most: math.MaxInt, want: 1500},
		{bound: 30 * time.Second, most: math.MaxInt, want: 30000},
		// An int of 32 bits.
		{bound: math.MaxInt32 * time.Millisecond, most: math.MaxInt32, want: math.MaxInt32},
		{bound: (math.MaxInt32+1)*time.Millisecond - 1, most: math.MaxInt32, want: math.MaxInt32},
		{bound: (math.MaxInt32 + 1) * time.Millisecond, most: math.MaxInt32, err: "a hang bound of 596h31m23.648s: 2147483648 ms, past the 2147483647 ms an int holds"},
		{bound: math.MaxInt64, most: math.MaxInt32, err: "a hang bound of 2562047h47m16.854775807s"},
	} {
		got, err := hangMs(tc.bound, tc.most)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("hangMs(%v, %d): %d, %v; want an error %q", tc.bound, tc.most, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("hangMs(%v, %d): %d, %v; want %d", tc.bound, tc.most, got, err, tc.want)
		}
	}
	// Every bound fits a 64-bit int.
	if want := int64(math.MaxInt64 / time.Millisecond); math.MaxInt == math.MaxInt64 {
		if got, err := HangMsOf(math.MaxInt64); err != nil || int64(got) != want {
			t.Errorf("HangMsOf(MaxInt64): %d, %v; want %d", got, err, want)
		}
	}
}
