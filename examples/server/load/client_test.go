package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadHead(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     head
		ok       bool
	}{
		{"ok", "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nContent-Type: application/octet-stream\r\n\r\n", head{200, 4096, false}, true},
		{"no reason", "HTTP/1.1 204\r\ncontent-length: 0\r\n\r\n", head{204, 0, false}, true},
		{"LF only", "HTTP/1.1 503 Service Unavailable\nContent-Length:  12 \n\n", head{503, 12, false}, true},
		{"close", "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 3\r\n\r\n", head{400, 3, true}, true},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", head{200, 1, true}, true},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\n", head{200, 1, false}, true},
		{"close in a list", "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\n", head{200, 1, true}, true},
		{"close, then keep-alive", "HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n", head{200, 1, true}, true},
		{"HTTP/1.0 keep-alive in a list", "HTTP/1.0 200 OK\r\nConnection: keep-alive , Upgrade\r\nContent-Length: 1\r\n\r\n", head{200, 1, false}, true},
		{"another option", "HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 1\r\n\r\n", head{200, 1, false}, true},
		{"twice the same length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", head{200, 5, false}, true},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", head{}, false},
		{"no length", "HTTP/1.1 200 OK\r\n\r\n", head{}, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", head{}, false},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", head{}, false},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", head{}, false},
		{"HTTP/2", "HTTP/2.0 200 OK\r\nContent-Length: 1\r\n\r\n", head{}, false},
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\nContent-Length: 1\r\n\r\n", head{}, false},
		{"bad code", "HTTP/1.1 2x0 OK\r\nContent-Length: 1\r\n\r\n", head{}, false},
		{"long code", "HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\n", head{}, false},
		{"no colon", "HTTP/1.1 200 OK\r\nContent-Length 1\r\n\r\n", head{}, false},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", head{}, false},
		{"empty", "", head{}, false},
	} {
		got, err := readHead(bufio.NewReader(strings.NewReader(c.in)))
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("%s: %+v %v, want %+v (ok %v)", c.name, got, err, c.want, c.ok)
		}
	}
}

// FuzzReadHead: readHead never panics, and a head it accepts has a
// status code of three digits and a length within the bound. Where
// net/http reads the same response, it reads the same status code and
// Content-Length (bar the statuses that have no body), and the same
// answer to whether the server closes the connection.
func FuzzReadHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 503 x\nConnection: close\nContent-Length: 0\n\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 204 OK\r\nConnection: x,keep-alive\r\nConnection: y\r\nContent-Length: 3\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readHead(bufio.NewReaderSize(bytes.NewReader(b), 64))
		if err != nil {
			return
		}
		if h.code < 0 || h.code > 999 || h.length < 0 || h.length > maxBody {
			t.Fatalf("accepted %+v from %q", h, b)
		}
		r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
		if err != nil {
			return
		}
		body := r.StatusCode/100 != 1 && r.StatusCode != 204 && r.StatusCode != 304
		if r.StatusCode != h.code || body && r.ContentLength != int64(h.length) || r.Close != h.close {
			t.Fatalf("%q: readHead reads %+v, net/http status %d, length %d, close %v", b, h, r.StatusCode, r.ContentLength, r.Close)
		}
	})
}

// TestClient: a client keeps one connection over its requests, reads
// each answer whole, and dials again after a server closes the
// connection.
func TestClient(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/octet-stream" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("close") != "" {
			w.Header().Set("Connection", "close")
		}
		out := bytes.Repeat(b, 1000) // more than net/http's buffers
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	}))
	srv.Listener = countingListener{srv.Listener, &conns}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	want := bytes.Repeat([]byte("abc"), 1000)
	for _, c := range []struct {
		path  string
		conns int64
	}{{"/", 1}, {"/?close=1", 10}} {
		conns.Store(0)
		cl := newClient(addr, request(addr, c.path, []byte("abc")))
		for i := range 10 {
			code, got, err := cl.do()
			if err != nil || code != 200 || !bytes.Equal(got, want) {
				t.Fatalf("%s request %d: %d %d bytes %v", c.path, i, code, len(got), err)
			}
		}
		cl.close()
		if n := conns.Load(); n != c.conns {
			t.Errorf("%s: %d connections for 10 requests, want %d", c.path, n, c.conns)
		}
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestClientBuffers makes 2,000 clients, as -c 2000 does before any
// dials: their read buffers hold at most 16 MiB in all, and a head line
// past the buffer is refused with an error that says so.
func TestClientBuffers(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cs := make([]*client, 2000)
	for i := range cs {
		cs[i] = newClient("127.0.0.1:1", []byte("GET / HTTP/1.1\r\n\r\n"))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("2,000 clients hold %d MiB", grew>>20)
	}
	runtime.KeepAlive(cs)
	long := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", headBuf) + "\r\n\r\n"
	if _, err := readHead(bufio.NewReaderSize(strings.NewReader(long), headBuf)); err == nil || !strings.Contains(err.Error(), "longer than the buffer") {
		t.Errorf("a head line past the buffer: %v", err)
	}
}

// TestClientTimeout: a service that accepts the connection and never
// answers fails the client's request once its timeout passes, and the
// client dials again at its next request.
func TestClientTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held <- c // read nothing, answer nothing
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	cl := newClient(ln.Addr().String(), request(ln.Addr().String(), "/saxpy", []byte("x")))
	cl.timeout = 20 * time.Millisecond
	defer cl.close()
	for i := range 2 {
		done := make(chan error, 1)
		go func() {
			_, _, err := cl.do()
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("request %d to a service that never answers: %v, want a timeout", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("request %d to a service that never answers did not return", i)
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections for two timed-out requests, want 2 (a new one after the timeout)", n)
	}
}
