package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// blockedCloser is a service whose Close waits for its context.
type blockedCloser struct{}

func (blockedCloser) Close(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestStopServingEndsAtSignal: a signal during the shutdown ends its waits
// for a request that does not end and for a close that does not return,
// long before their bound, and the shutdown returns the context's error.
func TestStopServingEndsAtSignal(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	srv := newServer("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	}))
	addr := serve(t, srv)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-started

	sig := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- stopServing(srv, blockedCloser{}, sig, time.Hour) }()
	select {
	case err := <-done:
		t.Fatalf("the shutdown returned %v before the request ended or a signal came", err)
	case <-time.After(50 * time.Millisecond):
	}
	sig <- syscall.SIGINT
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the shutdown cut short by a signal returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown went on 10 s after a signal")
	}
}

// TestUntilSignal: the context ends at its bound, or at a signal before it.
func TestUntilSignal(t *testing.T) {
	sig := make(chan os.Signal, 1)
	ctx, cancel := untilSignal(sig, 20*time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context went on 10 s past its bound of 20ms")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("at its bound the context's error is %v, want DeadlineExceeded", ctx.Err())
	}
	ctx, cancel = untilSignal(sig, time.Hour)
	defer cancel()
	sig <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context went on 10 s after a signal")
	}
	if len(sig) != 0 {
		t.Error("the signal that ended the context was left for the next")
	}
}
