package mailbox

import (
	"context"
	"errors"
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
