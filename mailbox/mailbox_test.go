package mailbox

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBounded(t *testing.T) {
	b := New[int](2)
	for i := 0; i < 2; i++ {
		if err := b.TrySend(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.TrySend(3); !errors.Is(err, ErrFull) {
		t.Fatalf("third TrySend into a box of 2: %v, want ErrFull", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := b.Send(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send into a full box: %v, want the context's error", err)
	}
	if got := <-b.Receive(); got != 0 {
		t.Fatalf("received %d first, want 0", got)
	}
	if err := b.Send(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 2 {
		t.Fatalf("Len %d, want 2", b.Len())
	}
}

func TestCloseReleasesBlockedSenders(t *testing.T) {
	b := New[int](1)
	_ = b.TrySend(0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- b.Send(context.Background(), 1)
		}()
	}
	time.Sleep(5 * time.Millisecond)
	b.Close()
	b.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("blocked Send after Close: %v, want ErrClosed", err)
		}
	}
	if err := b.TrySend(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySend after Close: %v", err)
	}
	select {
	case <-b.Closed():
	default:
		t.Fatal("Closed not closed")
	}
}

func TestOrderManySenders(t *testing.T) {
	b := New[[2]int](4)
	const senders, each = 8, 1000
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := b.Send(context.Background(), [2]int{s, i}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	next := make([]int, senders)
	for n := 0; n < senders*each; n++ {
		m := <-b.Receive()
		if m[1] != next[m[0]] {
			t.Fatalf("sender %d: got %d, want %d: a sender's messages arrive in order", m[0], m[1], next[m[0]])
		}
		next[m[0]]++
	}
	wg.Wait()
}

// hookCtx is a context whose Done runs hook first: Send reads Done as it
// enters its blocking select, after its first look at the close.
type hookCtx struct {
	context.Context
	hook func()
}

func (c hookCtx) Done() <-chan struct{} {
	c.hook()
	return c.Context.Done()
}

// TestCloseKeepsSentMessages closes the box while a Send is between its
// look at the close and its put, and has the owner drain the box once
// Close returns: a Send that returned nil put its message before Close
// returned, where the drain finds it, and a Send that did not returned
// ErrClosed. (The Send's select would otherwise choose at random between
// the room the drain made and the close; the rounds make its choices
// many.)
func TestCloseKeepsSentMessages(t *testing.T) {
	for round := range 32 {
		b := New[int](1)
		if err := b.TrySend(0); err != nil {
			t.Fatal(err)
		}
		var drained []int
		owner := make(chan struct{})
		ctx := hookCtx{Context: context.Background(), hook: func() {
			go func() {
				defer close(owner)
				b.Close()
				for {
					select {
					case m := <-b.Receive():
						drained = append(drained, m)
						continue
					default:
					}
					return
				}
			}()
			// Where Close waits for the Send in flight, the owner's
			// drain cannot end before the Send does.
			select {
			case <-owner:
			case <-time.After(10 * time.Millisecond):
			}
		}}
		err := b.Send(ctx, 1)
		<-owner
		switch {
		case err == nil && !slices.Contains(drained, 1):
			t.Fatalf("round %d: Send returned nil, and the owner's drain after Close found only %v", round, drained)
		case err != nil && !errors.Is(err, ErrClosed):
			t.Fatalf("round %d: Send during Close: %v, want nil or ErrClosed", round, err)
		}
	}
}
