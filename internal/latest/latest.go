// Package latest keeps the latest values added, up to a bound: the stamps
// a driver converted that wait for the runtime's Settle, which a device
// timed with nobody settling would otherwise keep without end.
package latest

// Ring holds the latest values added, in the order they came. The zero
// value is an empty ring. The goroutine that owns the ring (or holds its
// owner's lock) calls its methods.
type Ring[T any] struct {
	items  []T
	oldest int // the index of the oldest value, once the ring is full
}

// Add adds v; where the ring holds max values (max above 0), v takes the
// oldest one's place. A ring's adds give one max.
func (r *Ring[T]) Add(v T, max int) {
	if len(r.items) < max {
		r.items = append(r.items, v)
		return
	}
	r.items[r.oldest] = v
	r.oldest = (r.oldest + 1) % max
}

// Len is the number of values held.
func (r *Ring[T]) Len() int { return len(r.items) }

// Take appends the values held to into, oldest first, returns it, and
// empties the ring, keeping its memory for the values to come.
func (r *Ring[T]) Take(into []T) []T {
	into = append(into, r.items[r.oldest:]...)
	into = append(into, r.items[:r.oldest]...)
	clear(r.items)
	r.items, r.oldest = r.items[:0], 0
	return into
}
