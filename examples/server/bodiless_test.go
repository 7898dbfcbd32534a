package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rig-go/rig/examples/server/service"
	"github.com/rig-go/rig/hostdev"
	rig "github.com/rig-go/rig/runtime"
)

// A request that announces a body and sends none is answered at once,
// whatever its path: the service's own (/readyz), one the mux redirects
// (//saxpy, /x/../readyz), and "OPTIONS *", which net/http would answer
// itself after reading the body with no deadline. The server's Shutdown
// then ends with such a client still connected, rather than waiting for it
// until its context ends.
func TestBodyNeverSentAnswered(t *testing.T) {
	svc, err := service.NewService(context.Background(), service.Config{Open: func(ctx context.Context, seat int) (*rig.Device, error) {
		return rig.Open(ctx, hostdev.Open(hostdev.Config{Name: fmt.Sprintf("bodiless-%d", seat)}))
	}, Driver: "host", Slots: 1, IOTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	srv := newServer("", handler(svc))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for _, head := range []string{
		"GET /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 100",
		"POST //saxpy?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100",
		"GET /x/../readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 100",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 100",
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
		if _, err := io.WriteString(conn, head+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%q: no answer within 2 s of a request whose body never came: %v", head, err)
			continue
		}
		resp.Body.Close()
		if !resp.Close {
			t.Errorf("%q: answered %d, keeping the connection", head, resp.StatusCode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with clients that announced bodies and sent none: %v", err)
		_ = srv.Close()
	}
	<-served
}
