package service

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlotWaitBounded: while a client that sends its body slowly holds
// the only slot, a request waits for a slot a bounded time, then answers
// 503 with Retry-After, saying the slots are busy, rather than wait for as
// long as the slot is held: net/http does not end the context of a
// request whose body is unread when its client goes away, so an unbounded
// wait would run the work of clients long gone.
func TestSlotWaitBounded(t *testing.T) {
	srv, svc, _ := serveService(t, newServiceConfig(t, Config{Open: hostOpener(), Driver: "host", Slots: 1, IOTimeout: 20 * time.Second}))
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 2 of the 16 bytes the head announces: the slot is held until the
	// body's read times out, 20 s on.
	if _, err := fmt.Fprintf(conn, "POST /saxpy?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n\x00\x00"); err != nil {
		t.Fatal(err)
	}
	waitSlotHeld(t, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x, y := vectors(8, 1)
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/saxpy?a=2", strings.NewReader(string(Body(x, y))))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("a request while every slot was held got no answer within %v: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(msg), "slot") {
		t.Fatalf("a request while every slot was held: %d %q, Retry-After %q, want 503 with Retry-After, naming the slots", resp.StatusCode, msg, resp.Header.Get("Retry-After"))
	}
	t.Logf("answered %d after %v", resp.StatusCode, time.Since(start))
}
