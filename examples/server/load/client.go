package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// client is one closed-loop HTTP/1.1 client of the load test: it holds one
// keep-alive connection, writes each request whole (head and body) in one
// write, and reads its response into memory it reuses, so that a request
// costs the client two system calls or so and no allocation. One goroutine
// owns a client.
type client struct {
	addr    string
	req     []byte // the request, head and body
	conn    net.Conn
	br      *bufio.Reader
	body    []byte        // the last response's body
	timeout time.Duration // bounds a request, from its write to its response's last byte
	cut     *cutter       // where not nil, the client dials through it, whose cut ends its request in flight
}

// requestTimeout bounds each request of a client, and of vegeta's
// (attackVegeta), as vegeta's own client's default does: a service that
// never answers fails the request rather than holding the load test past
// its duration. A SIGINT or SIGTERM ends the requests in flight at once
// (cutter).
var requestTimeout = 30 * time.Second

// newClient returns a client that sends req, a whole HTTP/1.1 request, to
// addr; it dials at its first request.
func newClient(addr string, req []byte) *client {
	return &client{addr: addr, req: req, br: bufio.NewReaderSize(nil, headBuf), timeout: requestTimeout}
}

// headBuf is the bytes of a client's read buffer: the longest line of a
// response's head it reads (the service's are under 100 bytes); a body
// longer than it is read past the buffer, straight into the client's
// memory. At 10,000 clients the buffers hold 40 MiB, where 64 KiB each
// held 640 MiB.
const headBuf = 4 << 10

// request returns the bytes of a POST of body to path on host, with the
// Content-Length and Content-Type an HTTP/1.1 server needs.
func request(host, path string, body []byte) []byte {
	b := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", path, host, len(body))
	return append(b, body...)
}

// do sends the request and reads its response: the status code and the
// body, valid until the next call. A connection that fails, that the
// server closes after its response, or whose request took past the
// client's timeout, is dialed again at the next call.
func (c *client) do() (int, []byte, error) {
	if c.conn == nil {
		var conn net.Conn
		var err error
		if c.cut != nil {
			conn, err = c.cut.dial(context.Background(), "tcp", c.addr)
		} else {
			conn, err = net.DialTimeout("tcp", c.addr, c.timeout)
		}
		if err != nil {
			return 0, nil, err
		}
		c.conn = conn
		c.br.Reset(conn)
	}
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		c.close()
		return 0, nil, err
	}
	if _, err := c.conn.Write(c.req); err != nil {
		c.close()
		return 0, nil, err
	}
	h, err := readHead(c.br)
	if err != nil {
		c.close()
		return 0, nil, err
	}
	if h.length > cap(c.body) {
		c.body = make([]byte, h.length)
	}
	body := c.body[:h.length]
	if _, err := io.ReadFull(c.br, body); err != nil {
		c.close()
		return 0, nil, fmt.Errorf("reading the response's body: %w", err)
	}
	if h.close {
		c.close()
	}
	return h.code, body, nil
}

// close closes the client's connection, if it has one.
func (c *client) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// head is what the client reads of a response's head.
type head struct {
	code   int  // the status code
	length int  // Content-Length
	close  bool // the server closes the connection after the response
}

// maxBody bounds the Content-Length the client accepts.
const maxBody = 1 << 26

// readHead reads the status line and the header fields of an HTTP/1.x
// response from br, without allocating. It needs a Content-Length (the
// service sets one on every response) and refuses a Transfer-Encoding.
func readHead(br *bufio.Reader) (head, error) {
	var h head
	line, err := readLine(br)
	if err != nil {
		return h, fmt.Errorf("reading the status line: %w", err)
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return h, fmt.Errorf("a malformed status line %q", line)
	}
	http10 := line[7] == '0'
	if !http10 && line[7] != '1' {
		return h, fmt.Errorf("a status line of HTTP/1.%c", line[7])
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return h, fmt.Errorf("a malformed status code in %q", line)
		}
		h.code = 10*h.code + int(d-'0')
	}
	h.length = -1
	var closes, keepAlive bool // a Connection field lists close, keep-alive
	for {
		line, err := readLine(br)
		if err != nil {
			return h, fmt.Errorf("reading the header: %w", err)
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, fmt.Errorf("a header line without a colon: %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case ascii(name, "content-length"):
			n, err := strconv.ParseUint(string(value), 10, 31) // no allocation: the conversion does not escape
			if err != nil || n > maxBody || (h.length >= 0 && int(n) != h.length) {
				return h, fmt.Errorf("a bad Content-Length %q", value)
			}
			h.length = int(n)
		case ascii(name, "transfer-encoding"):
			return h, fmt.Errorf("a Transfer-Encoding (%q): the client reads Content-Length bodies only", value)
		case ascii(name, "connection"):
			// A list of options, each field's added to the others'.
			for len(value) > 0 {
				opt := value
				if i := bytes.IndexByte(value, ','); i >= 0 {
					opt, value = value[:i], value[i+1:]
				} else {
					value = nil
				}
				opt = bytes.TrimSpace(opt)
				closes = closes || ascii(opt, "close")
				keepAlive = keepAlive || ascii(opt, "keep-alive")
			}
		}
	}
	// The server closes the connection where it says close, and under
	// HTTP/1.0 where it does not say keep-alive.
	h.close = closes || http10 && !keepAlive
	if h.length < 0 {
		return h, errors.New("a response without a Content-Length")
	}
	return h, nil
}

// readLine reads one line of a head, without its CRLF (or LF). The line is
// valid until the next read from br.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("a head line longer than the buffer")
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// ascii reports whether b is s (lower case) in any case.
func ascii(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
