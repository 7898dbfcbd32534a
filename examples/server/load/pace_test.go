package main

import (
	"testing"
	"time"
)

// sentAt is a request of a paced attack: its sequence number, when a
// client took it up and how long it took from then.
type sentAt struct {
	seq  uint64
	at   time.Time
	took time.Duration
}

// pacedOf is the paced attack at rate of the requests sent, which began
// at start.
func pacedOf(start time.Time, sent []sentAt, rate int) *paced {
	p := newPaced(start, rate)
	for _, s := range sent {
		p.add(s.seq, s.at, s.took)
	}
	return p
}

func TestFromIntended(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, c := range []struct {
		name             string
		rate             int
		sent             []sentAt
		p99, max, late99 time.Duration
	}{
		{"none", 1000, nil, 0, 0, 0},
		{"on time", 1000, []sentAt{{0, t0, 2 * ms}, {1, t0.Add(ms), 3 * ms}, {2, t0.Add(2 * ms), ms}}, 3 * ms, 3 * ms, 0},
		// The third request went out 4 ms after its intended time,
		// waiting for a client: that wait counts.
		{"late", 1000, []sentAt{{0, t0, ms}, {1, t0.Add(ms), ms}, {2, t0.Add(6 * ms), ms}}, 5 * ms, 5 * ms, 4 * ms},
		// The schedule starts where no request goes out before its
		// intended time: here with the second request.
		{"start", 1000, []sentAt{{0, t0.Add(2 * ms), ms}, {1, t0.Add(ms), ms}}, 3 * ms, 3 * ms, 2 * ms},
		{"out of order", 100, []sentAt{{2, t0.Add(20 * ms), ms}, {0, t0, 2 * ms}, {1, t0.Add(10 * ms), 4 * ms}}, 4 * ms, 4 * ms, 0},
		{"no rate", 0, []sentAt{{0, t0, ms}}, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p99, max, late99 := pacedOf(t0, c.sent, c.rate).fromIntended()
			if p99 != c.p99 || max != c.max || late99 != c.late99 {
				t.Errorf("fromIntended = %v, %v, %v; want %v, %v, %v", p99, max, late99, c.p99, c.max, c.late99)
			}
		})
	}
	// A hundred requests, one of them 9 ms late: the p99 of a hundred
	// is their 100th.
	var sent []sentAt
	for i := range 100 {
		s := sentAt{uint64(i), t0.Add(time.Duration(i) * ms), ms}
		if i == 50 {
			s.at = s.at.Add(9 * ms)
		}
		sent = append(sent, s)
	}
	if p99, max, late99 := pacedOf(t0, sent, 1000).fromIntended(); p99 != 10*ms || max != 10*ms || late99 != 9*ms {
		t.Errorf("one late of a hundred: %v, %v, %v; want 10ms, 10ms, 9ms", p99, max, late99)
	}
}
