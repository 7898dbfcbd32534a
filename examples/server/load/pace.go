package main

import (
	"slices"
	"time"
)

// sentAt is a request of a paced attack: its sequence number, when a
// client took it up and how long it took from then.
type sentAt struct {
	seq  uint64
	at   time.Time
	took time.Duration
}

// fromIntended returns the p99 and the max of the requests' latencies
// counted from their intended send times at rate requests a second, and
// the p99 of their sends' lateness (from the intended send time to when a
// client took the request up: the pacer's and the clients'). The
// schedule's start is the earliest that puts no request before its
// intended time.
func fromIntended(sent []sentAt, rate int) (p99, max, late99 time.Duration) {
	if len(sent) == 0 || rate < 1 {
		return 0, 0, 0
	}
	// vegeta's interval between intended sends, in whole nanoseconds.
	period := float64(time.Second / time.Duration(rate))
	intended := func(s sentAt, start time.Time) time.Time {
		return start.Add(time.Duration(period * float64(s.seq)))
	}
	start := sent[0].at
	for _, s := range sent {
		if t := s.at.Add(-time.Duration(period * float64(s.seq))); t.Before(start) {
			start = t
		}
	}
	lat, late := make([]time.Duration, len(sent)), make([]time.Duration, len(sent))
	for i, s := range sent {
		lat[i] = s.at.Add(s.took).Sub(intended(s, start))
		late[i] = s.at.Sub(intended(s, start))
	}
	slices.Sort(lat)
	slices.Sort(late)
	k := len(lat) * 99 / 100
	return lat[k], lat[len(lat)-1], late[k]
}
