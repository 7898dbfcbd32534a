package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rig-go/rig/examples/server/service"
)

// cutBound bounds only a hang of the tests of the cut: a request in flight
// at the signal ends at once with the cut, and waited out requestTimeout
// (30 s) without it.
const cutBound = 10 * time.Second

// TestAttackInterrupted: the end of a level's context, as the first
// SIGINT or SIGTERM ends it, cancels the requests in flight on a service
// that holds them, so that the level ends at once rather than once
// requestTimeout has passed, and the cancelled requests count neither as
// served nor as failed: of a service that answers 10 requests and holds
// the 2 clients' next two, the level served 10 and failed none. The
// level waited out its requests' 30 s timeout, and counted them failed.
func TestAttackInterrupted(t *testing.T) {
	x, y := make([]float32, 16), make([]float32, 16)
	body := service.Body(x, y)
	want := service.Body(service.Saxpy(2, x, y), nil)
	const answered, clients = 10, 2
	for _, kind := range []string{"raw", "vegeta"} {
		t.Run(kind, func(t *testing.T) {
			var mu sync.Mutex
			seen := 0
			held := make(chan struct{}) // closed once both clients' requests are held
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				seen++
				n := seen
				mu.Unlock()
				if n <= answered {
					_, _ = w.Write(want)
					return
				}
				if n == answered+clients {
					close(held)
				}
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			defer close(release)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan result, 1)
			go func() {
				done <- attack(ctx, kind, 0, strings.TrimPrefix(srv.URL, "http://"), body, want, clients, time.Hour, os.Getpid())
			}()
			select {
			case <-held:
			case <-time.After(cutBound):
				t.Fatalf("the service was not holding both clients' requests %v after the level started", cutBound)
			}
			cancel()
			select {
			case r := <-done:
				if r.n != answered || r.failed != 0 {
					t.Errorf("%d served, %d failed; want %d served and none failed (the cancelled requests not counted)", r.n, r.failed, answered)
				}
			case <-time.After(cutBound):
				t.Fatalf("the level still waited on the requests the service holds %v after its context ended", cutBound)
			}
		})
	}
}

// TestCutterRefusesDials: once the context ends a client dials no
// connection, and its request fails at once, as cancelled by the cut,
// even before context.AfterFunc's cut has run.
func TestCutterRefusesDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	k, release := newCutter(ctx)
	defer release()
	cancel()
	cl := newClient(ln.Addr().String(), request(ln.Addr().String(), "/saxpy", nil))
	cl.cut = k
	defer cl.close()
	if _, _, err := cl.do(); !errors.Is(err, errCut) || !k.cutBy(time.Now()) {
		t.Fatalf("a request after the context ended: %v, cut %t; want it refused, as the cut's", err, k.cutBy(time.Now()))
	}
}

// noAnswerEnv, set to 1 with runMainEnv, makes the service's process that
// the load test starts (-serve) serveNoAnswers.
const noAnswerEnv = "LOAD_TEST_NO_ANSWER"

// heldMessage is the line serveNoAnswers writes on standard error for
// each request it holds.
const heldMessage = "the service that never answers holds a request"

// serveNoAnswers stands for the service's process of a load test run
// with noAnswerEnv: it listens and prints its ready line as runService
// does, then reads the head of each request, writes heldMessage on
// standard error and never answers. It returns at SIGTERM or SIGINT, or
// at the end of standard input.
func serveNoAnswers() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				fmt.Fprintln(os.Stderr, heldMessage)
				_, _ = io.Copy(io.Discard, br) // until the client closes
			}()
		}
	}()
	fmt.Printf("ready %s host\n", ln.Addr())
	select {
	case <-sig:
	case <-eof:
	}
}
