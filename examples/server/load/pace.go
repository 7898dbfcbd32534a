package main

import "time"

// paced keeps the requests of a paced attack, at rate requests a second,
// for fromIntended's figures in memory that does not grow with the
// attack's length. Of each request it keeps two durations, both counted
// from start, which is before the attack began, less the request's
// intended send time from start (its sequence number over the rate): to
// its end, and to when a client took it up. The intended schedule's start
// moves both alike, so that their ranks less the smallest of the second
// are the figures of the schedule's start. One goroutine calls add; the
// figures are read once the adds ended.
type paced struct {
	start time.Time
	// vegeta's interval between intended sends, in whole nanoseconds; 0
	// where there is no rate.
	period      float64
	ends, takes latencies
}

// newPaced returns the keeper of the requests of an attack paced at rate
// requests a second that began at start or later.
func newPaced(start time.Time, rate int) *paced {
	p := &paced{start: start}
	if rate > 0 {
		p.period = float64(time.Second / time.Duration(rate))
	}
	return p
}

// add keeps the request of sequence number seq, which a client took up
// at at and which took took from then. vegeta takes no request up before
// its intended time from the attack's start, so that the durations kept
// are not negative.
func (p *paced) add(seq uint64, at time.Time, took time.Duration) {
	take := at.Sub(p.start) - time.Duration(p.period*float64(seq))
	p.ends.add(take + took)
	p.takes.add(take)
}

// fromIntended returns the p99 and the max of the requests' latencies
// counted from their intended send times, and the p99 of their sends'
// lateness (from the intended send time to when a client took the
// request up: the pacer's and the clients'). The schedule's start is the
// earliest that puts no request before its intended time. The p99 of n
// is the nearest rank's, the ceil(n*99/100)-th smallest, as the closed
// loop's is (latencies.nearestRank).
func (p *paced) fromIntended() (p99, max, late99 time.Duration) {
	n := p.ends.count()
	if n == 0 || p.period == 0 {
		return 0, 0, 0
	}
	first := p.takes.rank(1)
	k := (n*99 + 99) / 100
	return p.ends.rank(k) - first, p.ends.rank(n) - first, p.takes.rank(k) - first
}
