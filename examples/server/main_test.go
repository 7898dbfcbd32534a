package main

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestIdleConnectionClosed: the server closes a keep-alive connection that
// stays silent after its request, within IdleTimeout.
func TestIdleConnectionClosed(t *testing.T) {
	srv := newServer("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}))
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 || srv.IdleTimeout > 10*time.Minute {
		t.Fatalf("ReadHeaderTimeout %v, IdleTimeout %v: want both above 0, idle connections closed within minutes", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	// A shorter timeout, so that the test runs in a moment.
	srv.IdleTimeout = min(srv.IdleTimeout, 200*time.Millisecond)
	addr := serve(t, srv)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Read the answer, then wait for the server to close the connection.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the idle connection was still open 5 s after its answer (%q): %v", b, err)
	}
}

// serve serves srv on a port of the loopback until the test ends, and
// returns its address.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return ln.Addr().String()
}
