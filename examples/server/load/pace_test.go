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
	// A hundred requests, some of them late: the p99 of a hundred is
	// their 99th (the nearest rank), as the closed loop's is.
	hundred := func(late map[int]time.Duration) []sentAt {
		var sent []sentAt
		for i := range 100 {
			s := sentAt{uint64(i), t0.Add(time.Duration(i) * ms), ms}
			s.at = s.at.Add(late[i])
			sent = append(sent, s)
		}
		return sent
	}
	if p99, max, late99 := pacedOf(t0, hundred(map[int]time.Duration{50: 9 * ms}), 1000).fromIntended(); p99 != ms || max != 10*ms || late99 != 0 {
		t.Errorf("one late of a hundred: %v, %v, %v; want 1ms, 10ms, 0s", p99, max, late99)
	}
	if p99, max, late99 := pacedOf(t0, hundred(map[int]time.Duration{50: 9 * ms, 70: 4 * ms}), 1000).fromIntended(); p99 != 5*ms || max != 10*ms || late99 != 4*ms {
		t.Errorf("two late of a hundred: %v, %v, %v; want 5ms, 10ms, 4ms", p99, max, late99)
	}
}
