// Package mailbox holds bounded typed mailboxes, the only way rig's device
// supervisors and the goroutines that ask them for something talk.
//
// A Box has one receiver, its owner (a supervisor), and any number of
// senders. It holds at most its capacity of messages: a sender blocks while
// it is full, until the owner receives, the sender's context ends, or the
// owner closes the box. Closing tells senders that nobody will receive
// again: Send and TrySend then return ErrClosed at once, and the messages
// still inside stay in the box, for the owner to receive or leave. Close
// returns once the sends in flight have ended, so that every Send and
// TrySend that returned nil put its message in before Close returned. No
// sender may hold a lock that the owner takes while it blocks in Send.
package mailbox

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Send and TrySend once the box's owner has
// closed it.
var ErrClosed = errors.New("mailbox: closed")

// ErrFull is returned by TrySend while the box is full.
var ErrFull = errors.New("mailbox: full")

// Box is a bounded mailbox of messages of type T. New makes one; the zero
// Box holds nothing and is not usable.
type Box[T any] struct {
	c    chan T
	done chan struct{}
	once sync.Once
	// sending is held shared by each Send and TrySend, and by Close, after
	// it closed done, to wait for those in flight: none puts a message in
	// after Close returns.
	sending sync.RWMutex
}

// New returns a box that holds up to capacity messages. It panics if
// capacity is less than 1.
func New[T any](capacity int) *Box[T] {
	if capacity < 1 {
		panic("mailbox: capacity must be at least 1")
	}
	return &Box[T]{c: make(chan T, capacity), done: make(chan struct{})}
}

// Send puts m into the box, blocking while it is full. It returns ctx's
// error if ctx ends first, and ErrClosed if the box is or becomes closed.
func (b *Box[T]) Send(ctx context.Context, m T) error {
	b.sending.RLock()
	defer b.sending.RUnlock()
	select {
	case <-b.done:
		return ErrClosed
	default:
	}
	// A box with room takes m without the select below, which locks the
	// box's, the close's and the context's channels: where thousands of
	// goroutines send at once, those shared locks were the contention.
	select {
	case b.c <- m:
		return nil
	default:
	}
	select {
	case b.c <- m:
		return nil
	case <-b.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TrySend puts m into the box if it has room, and returns ErrFull if not,
// or ErrClosed if the box is closed.
func (b *Box[T]) TrySend(m T) error {
	b.sending.RLock()
	defer b.sending.RUnlock()
	select {
	case <-b.done:
		return ErrClosed
	default:
	}
	select {
	case b.c <- m:
		return nil
	case <-b.done:
		return ErrClosed
	default:
		return ErrFull
	}
}

// Receive is the channel the owner receives from. Only the owner may
// receive.
func (b *Box[T]) Receive() <-chan T { return b.c }

// Len is the number of messages waiting.
func (b *Box[T]) Len() int { return len(b.c) }

// Close tells every sender that nobody receives any more, and returns once
// the sends in flight have ended: a sender blocked in Send returns
// ErrClosed, and the messages inside are every message a Send or TrySend
// put. Only the owner closes, once it stops receiving; a second Close
// does nothing.
func (b *Box[T]) Close() {
	b.once.Do(func() {
		close(b.done)
		b.sending.Lock()
		//lint:ignore SA2001 the empty section waits for the sends in flight
		b.sending.Unlock()
	})
}

// Closed is closed once the box is.
func (b *Box[T]) Closed() <-chan struct{} { return b.done }
