package service

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveTimeout serves a service of one slot whose requests read their
// body and write their answer within timeout each, and wait for the slot
// up to 4 s, past the timeout and within checkServes's 5 s, so that a
// request that comes while a stalled client holds the slot is served once
// the timeout frees it however the machine is loaded.
func serveTimeout(t *testing.T, timeout time.Duration) (string, func(context.Context) (int, []byte, error), *Service) {
	t.Helper()
	srv, svc, _ := serveService(t, newServiceConfig(t, Config{Open: hostOpener(), Driver: "host", Slots: 1, IOTimeout: timeout, SlotWait: 4 * time.Second}))
	x, y := vectors(64, 3)
	req := func(ctx context.Context) (int, []byte, error) {
		return post(ctx, srv.Client(), srv.URL+"/saxpy?a=2", Body(x, y))
	}
	return srv.Listener.Addr().String(), req, svc
}

// waitSlotHeld returns once the service's only slot has been taken for
// 300 ms in a row: a request holds it, waiting on its client.
func waitSlotHeld(t *testing.T, svc *Service) {
	t.Helper()
	b := svc.cur.Load()
	start, since := time.Now(), time.Time{}
	for {
		if len(b.free) == 0 {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= 300*time.Millisecond {
				return
			}
		} else {
			since = time.Time{}
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("no request held the slot for 300 ms within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// checkServes fails the test unless a request answers right within 5 s.
func checkServes(t *testing.T, req func(context.Context) (int, []byte, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, got, err := req(ctx)
	x, y := vectors(64, 3)
	if err != nil || code != 200 || !slices.Equal(floats(got), Saxpy(2, x, y)) {
		t.Fatalf("a request while a stalled client held the only slot: %d %v %.200q", code, err, got)
	}
}

// TestSlowBodyFreesSlot: a client that sends part of its body and then
// nothing holds its slot only until the body's read times out; the next
// request is served.
func TestSlowBodyFreesSlot(t *testing.T) {
	addr, req, svc := serveTimeout(t, time.Second)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 2 of the 16 bytes the head announces.
	if _, err := fmt.Fprintf(conn, "POST /saxpy?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n\x00\x00"); err != nil {
		t.Fatal(err)
	}
	waitSlotHeld(t, svc)
	checkServes(t, req)
}

// TestSlowReaderFreesSlot: a client that sends requests and reads none of
// the answers holds its slot only until the answer's write times out; the
// next request is served.
func TestSlowReaderFreesSlot(t *testing.T) {
	addr, req, svc := serveTimeout(t, time.Second)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	x, y := vectors(MaxElements, 1)
	body := Body(x, y)
	one := append(fmt.Appendf(nil, "POST /saxpy?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body)), body...)
	// Answers of 64 KiB each, unread, fill the connection's buffers.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer conn.Close()
	wg.Go(func() {
		for range 400 {
			if _, err := conn.Write(one); err != nil {
				return
			}
		}
	})
	waitSlotHeld(t, svc)
	checkServes(t, req)
}

// TestIOTimeoutKeepAlive: the answer's write deadline ends with the
// answer: a keep-alive connection's later requests, after the timeout,
// are answered.
func TestIOTimeoutKeepAlive(t *testing.T) {
	_, req, _ := serveTimeout(t, 100*time.Millisecond)
	for range 3 {
		checkServes(t, req)
		time.Sleep(150 * time.Millisecond)
	}
}

// TestUnreadBodyAnswered: a request answered with its body unread, and
// its client sending no more of it, gets its answer within the timeout:
// net/http reads what the handler left of a body before it writes the
// answer, and that read is bounded as the handler's is. The connection is
// closed after the answer.
func TestUnreadBodyAnswered(t *testing.T) {
	addr, _, _ := serveTimeout(t, 200*time.Millisecond)
	for _, c := range []struct {
		name, query string
		code        int
		want        string
	}{
		{"a body that stops", "a=1", http.StatusRequestTimeout, "reading x"},
		{"a bad a", "a=x", http.StatusBadRequest, "not a number"},
		{"a bad length", "a=1", http.StatusBadRequest, "multiple of 8"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		length := 16
		if c.name == "a bad length" {
			length = 12
		}
		// 2 of the bytes the head announces, and no more.
		if _, err := fmt.Fprintf(conn, "POST /saxpy?%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n\x00\x00", c.query, length); err != nil {
			t.Fatal(err)
		}
		checkAnswerThenClose(t, c.name, conn, 5*time.Second, c.code, c.want)
		conn.Close()
	}
}

// checkAnswerThenClose fails the test unless conn reads an answer of code
// whose body holds want, and then the connection's close, within bound.
func checkAnswerThenClose(t *testing.T, name string, conn net.Conn, bound time.Duration, code int, want string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(bound))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Errorf("%s: no answer within %v: %v", name, bound, err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code || !strings.Contains(string(body), want) {
		t.Errorf("%s: %d %q, want %d saying %q", name, resp.StatusCode, body, code, want)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("%s: the connection was not closed within %v of the request: %v", name, bound, err)
	}
}

// TestBodyElsewhereAnswered: a request to a path other than /saxpy, which
// takes no body, that announces a body and sends none is answered at once
// and its connection closed within the timeout, not kept until the
// server's IdleTimeout or the client's close.
func TestBodyElsewhereAnswered(t *testing.T) {
	const timeout = 200 * time.Millisecond
	addr, _, _ := serveTimeout(t, timeout)
	for _, c := range []struct {
		head string
		code int
		want string
	}{
		{"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100", http.StatusOK, "ok"},
		{"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked", http.StatusOK, "ok"},
		{"GET /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 100", http.StatusOK, "ready"},
		{"POST /debug/spin?us=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100", http.StatusOK, "done"},
		{"POST /debug/fault?kind=x HTTP/1.1\r\nHost: x\r\nContent-Length: 100", http.StatusBadRequest, "want address or trap"},
		{"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100", http.StatusMethodNotAllowed, ""},
		{"GET /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 100", http.StatusNotFound, ""},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, c.head+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(c.head, "\r\n")
		if strings.Contains(c.head, "chunked") {
			name += " (chunked)"
		}
		checkAnswerThenClose(t, name, conn, 5*timeout, c.code, c.want)
		conn.Close()
	}
}
