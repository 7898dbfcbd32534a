package testutil

import (
	"math"
	"strconv"
	"time"
)

// HangCase is a driver's hang bound (Config.Hang) and the Facts.HangMs of
// the device opened with it, or Refused where the opener refuses it.
type HangCase struct {
	Hang    time.Duration
	Want    int
	Refused bool
}

// HangCases returns the bounds the drivers' tests open devices with, under
// the rule every driver follows: 0 and negative bounds are none, a
// positive one counts its whole milliseconds and at least 1, and a bound
// whose milliseconds do not fit an int (only where an int has 32 bits) is
// refused.
func HangCases() []HangCase {
	cases := []HangCase{
		{Hang: 0}, {Hang: -1}, {Hang: -time.Hour}, {Hang: math.MinInt64},
		{Hang: 1, Want: 1},
		{Hang: time.Millisecond - 1, Want: 1},
		{Hang: time.Millisecond, Want: 1},
		{Hang: 1500 * time.Millisecond, Want: 1500},
		{Hang: 1500*time.Millisecond + 999*time.Microsecond, Want: 1500},
		{Hang: math.MaxInt32 * time.Millisecond, Want: math.MaxInt32},
	}
	for _, h := range []time.Duration{(math.MaxInt32 + 1) * time.Millisecond, math.MaxInt64} {
		c := HangCase{Hang: h, Refused: strconv.IntSize == 32}
		if !c.Refused {
			c.Want = int(int64(h / time.Millisecond))
		}
		cases = append(cases, c)
	}
	return cases
}
